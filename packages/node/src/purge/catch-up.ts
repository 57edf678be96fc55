/**
 * The fleet purge's catch-up (fleet-purge.ts has the whole protocol): pull, signed, from every
 * live member the entries of its log after the cursor this node keeps for it, page by page — each
 * page applied (in one pass over the store) before the cursor moves to its last entry, so a member
 * that fails mid-pull is asked again from there — at start and every `syncIntervalMs`. An entry
 * not seen before is applied to responses stored before its time plus {@link PURGE_SKEW_MS}. A
 * gap (the member's log moved past the cursor) or a log that replaced a lost one drops what the
 * members' logs can no longer vouch for.
 */
import type { Clock, TimerHandle } from '@coral/runtime';
import type { Logger } from 'pino';
import type { PurgeMetricsSink } from '../metrics/metrics.js';
import type { PeerRequests } from '../peer/requests.js';
import { purgeMatcher, type PurgeCandidate } from './match.js';
import type { PurgeEntry, PurgeLog } from './purge-log.js';
import type { RecentPurges } from './recent.js';
import type { Serial } from './serial.js';
import { PEER_PURGE_PATH, PURGE_PAGE_LIMIT, PURGE_SKEW_MS, pageSchema, type Page } from './wire.js';

/** Default period of the catch-up pull. */
export const DEFAULT_PURGE_SYNC_INTERVAL_MS = 30_000;
/** Pages read from one member in one round (its cursor keeps the place: the rest comes next round). */
export const PURGE_MAX_PAGES = 1_000;
/** Retry period of the catch-up until a round succeeds after start. */
export const PURGE_SYNC_RETRY_MS = 500;

export interface PurgeTarget {
  /** Drop every stored response the predicate selects; resolves to the count. */
  purgeWhere(match: (meta: PurgeCandidate) => boolean): Promise<number>;
}

/** What one catch-up round did. */
export interface SyncResult {
  /** Members asked, and those that answered. */
  asked: number;
  answered: number;
  /** Entries not seen before, applied and recorded. */
  applied: number;
  /** Responses dropped by those entries. */
  dropped: number;
  /** Set when the members' logs did not reach back to the last sync: everything stored before it was dropped. */
  gap?: { before: string; dropped: number };
}

export interface PurgeCatchUpComponents {
  store: PurgeTarget;
  log: PurgeLog;
  peers: PeerRequests;
  clock: Clock;
  /** The purges applied here lately (the store-time check). */
  recent: RecentPurges;
  /** Log changes, one at a time (shared with the purges taken and sent). */
  serial: Serial;
  logger?: Pick<Logger, 'info' | 'warn' | 'error'> | undefined;
  metrics?: Pick<PurgeMetricsSink, 'purge'> | undefined;
}

export class PurgeCatchUp {
  readonly #c: PurgeCatchUpComponents;
  readonly #intervalMs: number;
  #timer: TimerHandle | undefined;
  #stopped = false;
  #synced = false;
  #syncing: Promise<SyncResult> | undefined;
  #lastSync: (SyncResult & { at: string }) | undefined;

  constructor(components: PurgeCatchUpComponents, options: { syncIntervalMs?: number } = {}) {
    this.#c = components;
    this.#intervalMs = options.syncIntervalMs ?? DEFAULT_PURGE_SYNC_INTERVAL_MS;
  }

  /** True once a catch-up round reached at least one member since start. */
  get synced(): boolean {
    return this.#synced;
  }

  /** The last catch-up round that reached a member. */
  get lastSync(): (SyncResult & { at: string }) | undefined {
    return this.#lastSync;
  }

  /** Pull what this node has not seen from every live member and apply it. */
  sync(): Promise<SyncResult> {
    if (this.#stopped) return Promise.resolve({ asked: 0, answered: 0, applied: 0, dropped: 0 });
    // One round at a time; a caller during a round gets that round's result.
    this.#syncing ??= this.#sync().finally(() => (this.#syncing = undefined));
    return this.#syncing;
  }

  /**
   * Run the catch-up: every {@link PURGE_SYNC_RETRY_MS} until a round reaches a member, then
   * every `syncIntervalMs`. Nothing in open mode.
   */
  start(): void {
    const { peers, clock, logger } = this.#c;
    if (!peers.enabled || this.#stopped) return;
    const tick = () => {
      if (this.#stopped) return;
      void this.sync()
        .catch((err: unknown) => logger?.error({ err }, 'purge catch-up failed'))
        .finally(() => {
          if (this.#stopped) return;
          this.#timer = clock.setTimeout(
            tick,
            this.#synced ? this.#intervalMs : PURGE_SYNC_RETRY_MS,
          );
        });
    };
    this.#timer = clock.setTimeout(tick, this.#synced ? this.#intervalMs : 0);
  }

  /** Stop the catch-up and wait for a round in progress. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#timer?.cancel();
    await this.#syncing?.catch(() => undefined);
  }

  async #sync(): Promise<SyncResult> {
    const { peers, clock, log, logger } = this.#c;
    const members = peers.enabled ? peers.members() : [];
    const result: SyncResult = { asked: members.length, answered: 0, applied: 0, dropped: 0 };
    if (members.length === 0) return result;
    const roundStart = clock.now();
    const replaced = log.replaced;
    let vouchedFrom = Infinity;
    await Promise.all(
      members.map(async (member) => {
        const read = await this.#pullMember(member, result);
        if (read === undefined) return;
        result.answered++;
        vouchedFrom = Math.min(vouchedFrom, read.completeSince);
      }),
    );
    if (result.answered === 0) return result;
    // A log that replaced a lost one holds nothing from before: what this node stored before the
    // members' logs are complete may have missed a purge no log holds any more.
    if (replaced && Number.isFinite(vouchedFrom)) {
      await this.#gap(vouchedFrom, result, 'this node lost its purge log');
      await log.clearReplaced();
    }
    if (result.applied > 0) {
      logger?.info(
        { applied: result.applied, dropped: result.dropped },
        'caught up with purges taken while this node was away',
      );
    }
    this.#synced = true;
    this.#lastSync = { ...result, at: new Date(roundStart).toISOString() };
    return result;
  }

  /**
   * Read one member's log from this node's cursor to its end, page by page, applying each page
   * before the cursor moves past it. Resolves to the member's first page's completeness when the
   * whole log was read, undefined when the member failed (its cursor stays at what was applied).
   */
  async #pullMember(
    member: { nodeId: string; ip: string },
    result: SyncResult,
  ): Promise<{ completeSince: number } | undefined> {
    const { peers, log, logger, serial } = this.#c;
    let completeSince: number | undefined;
    for (let n = 0; n < PURGE_MAX_PAGES; n++) {
      const cursor = log.cursor(member.nodeId);
      const q = cursor
        ? `after=${cursor.seq}&limit=${PURGE_PAGE_LIMIT}&log=${cursor.log}`
        : `after=0&limit=${PURGE_PAGE_LIMIT}`;
      const r = await peers.send(member, 'GET', `${PEER_PURGE_PATH}?${q}`);
      const parsed = r.ok ? pageSchema.safeParse(r.body) : undefined;
      const problem = !r.ok
        ? (r.error ?? `HTTP ${r.status}`)
        : !parsed?.success
          ? 'malformed answer'
          : this.#pageProblem(parsed.data, cursor?.log === parsed.data.log ? cursor.seq : 0);
      if (problem !== undefined || !parsed?.success) {
        logger?.warn(
          { member: r.address, status: r.status, error: problem },
          'purge log pull failed',
        );
        return undefined;
      }
      const page = parsed.data;
      completeSince ??= page.completeSince;
      const known = cursor?.log === page.log ? cursor : undefined;
      await serial.run(async () => {
        // Entries this node never read were dropped from the member's log: it was away longer
        // than the log reaches back.
        if (known && page.first > known.seq + 1) {
          await this.#gap(
            page.floor,
            result,
            `the purge log of ${member.nodeId} moved past this node`,
          );
        }
        await this.#applyPulled(page.entries, result);
        const seq = page.entries.at(-1)?.seq ?? known?.seq ?? 0;
        await log.setCursor(member.nodeId, { log: page.log, seq });
      });
      if (!page.more) return { completeSince };
    }
    return undefined; // the rest next round, from the cursor
  }

  /** Why a member's page cannot be used, or undefined. */
  #pageProblem(page: Page, after: number): string | undefined {
    const latest = this.#c.clock.now() + PURGE_SKEW_MS;
    if (page.floor > latest || page.completeSince > latest) return 'log complete since the future';
    let prev = after;
    for (const e of page.entries) {
      if (e.at > latest) return `purge ${e.id} dated in the future`;
      if (e.seq <= prev) return 'entries out of sequence';
      prev = e.seq;
    }
    return undefined;
  }

  /** Drop everything stored before `before` (a time other nodes' logs can no longer vouch for). */
  async #gap(before: number, result: SyncResult, why: string): Promise<void> {
    const until = before + PURGE_SKEW_MS;
    const match = (m: PurgeCandidate) => m.storedAt < until;
    this.#c.recent.remember(match);
    const dropped = await this.#c.store.purgeWhere(match);
    result.dropped += dropped;
    const at = new Date(until).toISOString();
    result.gap = { before: at, dropped: (result.gap?.dropped ?? 0) + dropped };
    this.#c.logger?.warn(
      { why, before: at, dropped },
      'away longer than the purge log reaches back: dropped every response stored before it',
    );
  }

  /** Apply a page of pulled entries not seen before, in one pass over the store, and record them. */
  async #applyPulled(entries: readonly PurgeEntry[], result: SyncResult): Promise<void> {
    const { log, recent, store, clock, metrics } = this.#c;
    const fresh: PurgeEntry[] = [];
    for (const e of entries) if (!(await log.has(e.id))) fresh.push(e);
    if (fresh.length === 0) return;
    const matchers = fresh.map((e) => purgeMatcher(e, e.at + PURGE_SKEW_MS));
    for (const m of matchers) recent.remember(m);
    const n = await store.purgeWhere((m) => matchers.some((match) => match(m)));
    const added = await log.appendAll(fresh, clock.now());
    added.forEach((_e, i) => metrics?.purge('catch-up', i === 0 ? n : 0));
    result.dropped += n;
    result.applied += added.length;
  }
}
