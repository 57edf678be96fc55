/**
 * The purge log: every purge this node applied (its own and the fleet's), kept in a LevelDB
 * database (`<dataDir>/purge`) so a member that was down can pull what it missed from the others
 * (purge/fleet-purge.ts). Entries are idempotent by id, ordered by their time, and bounded both by
 * count (`purge.logMaxEntries`) and by age (`purge.logRetentionSeconds`).
 *
 * The log also knows from when it is complete (`completeSince`): it holds every purge the fleet
 * made at or after that time. That is the latest of its creation, the time after the newest
 * entry it dropped (by count), the start of its retention (now minus the retention) and the end
 * of any gap a catch-up could not fill (`raiseFloor`). A node whose last sync is older than what
 * its members' logs can vouch for treats everything it stored before that as stale.
 *
 * Keys: `e!<at, 16 digits>!<id>` → entry (JSON); `i!<id>` → at; `m!created`, `m!floor`,
 * `m!watermark` → ms.
 */
import { Level } from 'level';
import type { PurgeKind } from './match.js';

/** Default bound on the number of entries kept. */
export const DEFAULT_PURGE_LOG_MAX_ENTRIES = 10_000;
/** Default bound on the age of entries kept: 7 days. */
export const DEFAULT_PURGE_LOG_RETENTION_SECONDS = 7 * 86_400;

/** One purge as the fleet passes it on. */
export interface PurgeEntry {
  /** 32 hex digits, chosen at random by the node that took the purge. */
  id: string;
  /** When it was taken, in ms on that node's clock. */
  at: number;
  kind: PurgeKind;
  /** Canonical URL, prefix or tag (match.ts `canonicalSpec`). */
  value: string;
  /** The node id (hex) of the node that took it. */
  origin: string;
}

export interface PurgeLogOptions {
  dir: string;
  maxEntries?: number;
  retentionMs?: number;
}

const AT_DIGITS = 16;
const pad = (at: number) => String(Math.max(0, Math.floor(at))).padStart(AT_DIGITS, '0');
const entryKey = (e: { at: number; id: string }) => `e!${pad(e.at)}!${e.id}`;

export class PurgeLog {
  readonly #db: Level<string, string>;
  readonly #maxEntries: number;
  readonly #retentionMs: number;
  #count = 0;
  #created = 0;
  #floor = 0;
  #watermark: number | undefined;
  #replaced = false;

  constructor(options: PurgeLogOptions) {
    this.#db = new Level<string, string>(options.dir, { valueEncoding: 'utf8' });
    this.#maxEntries = options.maxEntries ?? DEFAULT_PURGE_LOG_MAX_ENTRIES;
    this.#retentionMs = options.retentionMs ?? DEFAULT_PURGE_LOG_RETENTION_SECONDS * 1000;
  }

  /**
   * Open the database (created at `now` when new). `replaced`: it is created to replace a log that
   * was lost (corrupt, moved aside), which the node's catch-up must not trust. Rejects as LevelDB
   * does (locked, corrupt).
   */
  async open(now: number, opts: { replaced?: boolean } = {}): Promise<void> {
    await this.#db.open();
    const created = await this.#db.get('m!created');
    if (created === undefined) {
      this.#created = now;
      await this.#db.batch([
        { type: 'put', key: 'm!created', value: String(now) },
        ...(opts.replaced ? [{ type: 'put' as const, key: 'm!replaced', value: '1' }] : []),
      ]);
    } else {
      this.#created = Number(created);
    }
    this.#replaced = (await this.#db.get('m!replaced')) !== undefined;
    this.#floor = Number((await this.#db.get('m!floor')) ?? 0);
    const w = await this.#db.get('m!watermark');
    this.#watermark = w === undefined ? undefined : Number(w);
    this.#count = 0;
    for await (const _k of this.#db.keys({ gte: 'e!', lt: 'e"' })) this.#count++;
  }

  async close(): Promise<void> {
    await this.#db.close();
  }

  get size(): number {
    return this.#count;
  }

  /** When the log was created (ms). */
  get created(): number {
    return this.#created;
  }

  /** This log replaced one that was lost (see {@link open}). */
  get replaced(): boolean {
    return this.#replaced;
  }

  /** The time up to which this node last pulled the fleet's purges, if it ever did. */
  get watermark(): number | undefined {
    return this.#watermark;
  }

  async setWatermark(at: number): Promise<void> {
    this.#watermark = at;
    await this.#db.put('m!watermark', String(at));
  }

  /** From when the log holds every purge the fleet made (see the module comment). */
  completeSince(now: number): number {
    return Math.max(this.#created, this.#floor, now - this.#retentionMs);
  }

  /** The log cannot vouch for purges before `at` (a gap a catch-up found). */
  async raiseFloor(at: number): Promise<void> {
    if (at <= this.#floor) return;
    this.#floor = at;
    await this.#db.put('m!floor', String(at));
  }

  async has(id: string): Promise<boolean> {
    return (await this.#db.get(`i!${id}`)) !== undefined;
  }

  /**
   * Record an entry; false when its id is already there (nothing changes). Then drop entries
   * beyond the count and age bounds.
   */
  async append(entry: PurgeEntry, now: number): Promise<boolean> {
    if (await this.has(entry.id)) return false;
    await this.#db.batch([
      { type: 'put', key: entryKey(entry), value: JSON.stringify(entry) },
      { type: 'put', key: `i!${entry.id}`, value: String(entry.at) },
    ]);
    this.#count++;
    await this.prune(now);
    return true;
  }

  /** Drop entries older than the retention, and the oldest beyond the count bound. */
  async prune(now: number): Promise<number> {
    const cutoff = entryKey({ at: now - this.#retentionMs, id: '' });
    const excess = this.#count - this.#maxEntries;
    const drop: { key: string; entry: PurgeEntry }[] = [];
    for await (const [key, value] of this.#db.iterator({ gte: 'e!', lt: 'e"' })) {
      if (key >= cutoff && drop.length >= excess) break;
      drop.push({ key, entry: JSON.parse(value) as PurgeEntry });
    }
    if (drop.length === 0) return 0;
    const newest = drop[drop.length - 1]!.entry.at;
    await this.#db.batch(
      drop.flatMap(({ key, entry }) => [
        { type: 'del' as const, key },
        { type: 'del' as const, key: `i!${entry.id}` },
      ]),
    );
    this.#count -= drop.length;
    // Entries at `newest` or before may be gone now: the log is complete only after it.
    await this.raiseFloor(newest + 1);
    return drop.length;
  }

  /**
   * Entries at or after `since`, oldest first, at most `limit`, resuming after the cursor `after`
   * (the last entry of a previous page as `<at>!<id>`).
   */
  async since(
    since: number,
    limit: number,
    after?: string,
  ): Promise<{ entries: PurgeEntry[]; next?: string }> {
    const gte = entryKey({ at: since, id: '' });
    const range = after ? { gt: `e!${after}`, lt: 'e"' } : { gte, lt: 'e"' };
    const entries: PurgeEntry[] = [];
    let next: string | undefined;
    for await (const [key, value] of this.#db.iterator(range)) {
      if (key < gte) continue;
      if (entries.length === limit) {
        next = cursorOf(entries[entries.length - 1]!);
        break;
      }
      entries.push(JSON.parse(value) as PurgeEntry);
    }
    return next ? { entries, next } : { entries };
  }

  /** The newest `limit` entries, newest first (for the admin API). */
  async recent(limit: number): Promise<PurgeEntry[]> {
    const out: PurgeEntry[] = [];
    for await (const value of this.#db.values({ gte: 'e!', lt: 'e"', reverse: true, limit })) {
      out.push(JSON.parse(value) as PurgeEntry);
    }
    return out;
  }
}

/** A page cursor: `<at, 16 digits>!<id>` of the last entry returned. */
export function cursorOf(e: { at: number; id: string }): string {
  return `${pad(e.at)}!${e.id}`;
}

/** A well-formed cursor (what {@link cursorOf} makes), for input checks. */
export const CURSOR = /^\d{16}![0-9a-f]{32}$/;
