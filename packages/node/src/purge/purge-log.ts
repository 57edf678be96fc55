/**
 * The purge log: every purge this node applied (its own and the fleet's), kept in a LevelDB
 * database (`<dataDir>/purge`) so a member that was down can pull what it missed from the others
 * (purge/fleet-purge.ts). Each entry gets a local append **sequence number** (1, 2, 3... in the
 * order this node recorded it), and members pull by sequence, never by the entries' times (which
 * are other nodes' clocks): a member remembers, per member and per log, the last sequence it read
 * (its **cursor**), so nothing is missed however late an entry arrives or however long a node was
 * unreachable. Entries are idempotent by id and bounded by count (`purge.logMaxEntries`) and by
 * age (`purge.logRetentionSeconds`, on this node's clock when it recorded them); the oldest go
 * first. A puller whose cursor is older than the oldest sequence still kept has a **gap**: it
 * knows it missed purges, and from what time the log is complete again ({@link floor}).
 *
 * A log has a random id chosen when it is created: a member whose log was lost starts a new
 * sequence under a new id, and its pullers start over from its first entry.
 *
 * Keys: `s!<seq, 16 digits>` → entry (JSON, with `seq` and `recordedAt`); `i!<id>` → seq;
 * `c!<member node id>` → cursor (JSON `{log, seq}`); `m!created`, `m!log`, `m!seq`, `m!floor`,
 * `m!replaced` → meta.
 */
import { randomBytes } from 'node:crypto';
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

/** An entry as this log keeps it: with its local sequence number. */
export type LoggedEntry = PurgeEntry & { seq: number };

/** Where a puller is in one member's log. */
export interface PurgeCursor {
  /** The member's log id. */
  log: string;
  /** The last sequence read from it. */
  seq: number;
}

export interface PurgeLogOptions {
  dir: string;
  maxEntries?: number;
  retentionMs?: number;
}

const SEQ_DIGITS = 16;
const seqKey = (seq: number) => `s!${String(seq).padStart(SEQ_DIGITS, '0')}`;

export class PurgeLog {
  readonly #db: Level<string, string>;
  readonly #maxEntries: number;
  readonly #retentionMs: number;
  #count = 0;
  #created = 0;
  #id = '';
  #seq = 0;
  #first = 1;
  #floor = 0;
  #replaced = false;
  #cursors = new Map<string, PurgeCursor>();

  constructor(options: PurgeLogOptions) {
    this.#db = new Level<string, string>(options.dir, { valueEncoding: 'utf8' });
    this.#maxEntries = options.maxEntries ?? DEFAULT_PURGE_LOG_MAX_ENTRIES;
    this.#retentionMs = options.retentionMs ?? DEFAULT_PURGE_LOG_RETENTION_SECONDS * 1000;
  }

  /**
   * Open the database (created at `now` when new). `replaced`: it is created to replace a log that
   * was lost (corrupt, moved aside), so the node cannot know which purges it missed before
   * (purge/fleet-purge.ts). Rejects as LevelDB does (locked, corrupt).
   */
  async open(now: number, opts: { replaced?: boolean } = {}): Promise<void> {
    await this.#db.open();
    const created = await this.#db.get('m!created');
    if (created === undefined) {
      this.#created = now;
      this.#id = randomBytes(8).toString('hex');
      await this.#db.batch([
        { type: 'put', key: 'm!created', value: String(now) },
        { type: 'put', key: 'm!log', value: this.#id },
        ...(opts.replaced ? [{ type: 'put' as const, key: 'm!replaced', value: '1' }] : []),
      ]);
    } else {
      this.#created = Number(created);
      this.#id = (await this.#db.get('m!log')) ?? '';
    }
    this.#replaced = (await this.#db.get('m!replaced')) !== undefined;
    this.#floor = Number((await this.#db.get('m!floor')) ?? 0);
    this.#seq = Number((await this.#db.get('m!seq')) ?? 0);
    this.#count = 0;
    this.#first = this.#seq + 1;
    for await (const k of this.#db.keys({ gte: 's!', lt: 's"' })) {
      if (this.#count === 0) this.#first = Number(k.slice(2));
      this.#count++;
    }
    this.#cursors.clear();
    for await (const [k, v] of this.#db.iterator({ gte: 'c!', lt: 'c"' })) {
      this.#cursors.set(k.slice(2), JSON.parse(v) as PurgeCursor);
    }
  }

  async close(): Promise<void> {
    await this.#db.close();
  }

  get size(): number {
    return this.#count;
  }

  /** This log's id (random, chosen when it was created). */
  get id(): string {
    return this.#id;
  }

  /** When the log was created (ms). */
  get created(): number {
    return this.#created;
  }

  /** The last sequence number given (0: none yet). */
  get lastSeq(): number {
    return this.#seq;
  }

  /** The oldest sequence still kept (`lastSeq + 1` when empty). */
  get firstSeq(): number {
    return this.#first;
  }

  /**
   * The time (ms, this node's clock) after the newest entry it dropped, 0 if it never dropped
   * one: a puller with a gap missed purges taken before it.
   */
  get floor(): number {
    return this.#floor;
  }

  /** This log replaced one that was lost and has not completed a catch-up since (see {@link open}). */
  get replaced(): boolean {
    return this.#replaced;
  }

  async clearReplaced(): Promise<void> {
    if (!this.#replaced) return;
    this.#replaced = false;
    await this.#db.del('m!replaced');
  }

  /** The cursor of this node in `member`'s log, if it ever read it. */
  cursor(member: string): PurgeCursor | undefined {
    return this.#cursors.get(member);
  }

  /** True once this node read any member's log (it has been part of a fleet's catch-up). */
  get hasCursors(): boolean {
    return this.#cursors.size > 0;
  }

  async setCursor(member: string, cursor: PurgeCursor): Promise<void> {
    this.#cursors.set(member, cursor);
    await this.#db.put(`c!${member}`, JSON.stringify(cursor));
  }

  async has(id: string): Promise<boolean> {
    return (await this.#db.get(`i!${id}`)) !== undefined;
  }

  /**
   * Record entries not there yet (by id), each under the next sequence number, in one write;
   * resolves to those recorded. Then drop entries beyond the count and age bounds.
   */
  async appendAll(entries: readonly PurgeEntry[], now: number): Promise<PurgeEntry[]> {
    const added: PurgeEntry[] = [];
    const ids = new Set<string>();
    const ops: { type: 'put'; key: string; value: string }[] = [];
    for (const e of entries) {
      if (ids.has(e.id) || (await this.has(e.id))) continue;
      ids.add(e.id);
      const seq = this.#seq + added.length + 1;
      const stored = { id: e.id, at: e.at, kind: e.kind, value: e.value, origin: e.origin };
      ops.push(
        {
          type: 'put',
          key: seqKey(seq),
          value: JSON.stringify({ ...stored, seq, recordedAt: now }),
        },
        { type: 'put', key: `i!${e.id}`, value: String(seq) },
      );
      added.push(stored);
    }
    if (added.length === 0) return added;
    ops.push({ type: 'put', key: 'm!seq', value: String(this.#seq + added.length) });
    await this.#db.batch(ops);
    if (this.#count === 0) this.#first = this.#seq + 1;
    this.#seq += added.length;
    this.#count += added.length;
    await this.prune(now);
    return added;
  }

  /** Record one entry; false when its id is already there (nothing changes). */
  async append(entry: PurgeEntry, now: number): Promise<boolean> {
    return (await this.appendAll([entry], now)).length === 1;
  }

  /** Drop entries recorded longer ago than the retention, and the oldest beyond the count bound. */
  async prune(now: number): Promise<number> {
    const excess = this.#count - this.#maxEntries;
    const drop: { key: string; entry: LoggedEntry & { recordedAt: number } }[] = [];
    for await (const [key, value] of this.#db.iterator({ gte: 's!', lt: 's"' })) {
      const entry = JSON.parse(value) as LoggedEntry & { recordedAt: number };
      if (drop.length >= excess && entry.recordedAt >= now - this.#retentionMs) break;
      drop.push({ key, entry });
    }
    if (drop.length === 0) return 0;
    const newest = drop[drop.length - 1]!.entry;
    // A puller that had not read up to `newest` missed purges taken or recorded up to then.
    const floor = drop.reduce((f, { entry: e }) => Math.max(f, e.recordedAt, e.at), 0) + 1;
    await this.#db.batch(
      drop.flatMap(({ key, entry }) => [
        { type: 'del' as const, key },
        { type: 'del' as const, key: `i!${entry.id}` },
      ]),
    );
    this.#count -= drop.length;
    this.#first = newest.seq + 1;
    if (floor > this.#floor) {
      this.#floor = floor;
      await this.#db.put('m!floor', String(floor));
    }
    return drop.length;
  }

  /** Entries after sequence `after`, oldest first, at most `limit`; `more` when there are others. */
  async after(after: number, limit: number): Promise<{ entries: LoggedEntry[]; more: boolean }> {
    const entries: LoggedEntry[] = [];
    let more = false;
    for await (const value of this.#db.values({ gt: seqKey(after), lt: 's"' })) {
      if (entries.length === limit) {
        more = true;
        break;
      }
      const { recordedAt: _r, ...e } = JSON.parse(value) as LoggedEntry & { recordedAt: number };
      entries.push(e);
    }
    return { entries, more };
  }

  /** The newest `limit` entries, newest first (for the admin API). */
  async recent(limit: number): Promise<LoggedEntry[]> {
    const out: LoggedEntry[] = [];
    for await (const value of this.#db.values({ gte: 's!', lt: 's"', reverse: true, limit })) {
      const { recordedAt: _r, ...e } = JSON.parse(value) as LoggedEntry & { recordedAt: number };
      out.push(e);
    }
    return out;
  }
}
