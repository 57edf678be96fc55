/**
 * Fleet purge (docs/node.md "Purge"), like Fastly's purge and Varnish xkey: one node takes
 * `POST /v1/purge` with a URL, a URL prefix or a tag, drops the matching stored responses (their
 * announcements are withdrawn by the proxy), records the purge in its log (purge-log.ts) and
 * sends it to every verified live member as a signed peer request (peer/requests.ts):
 *
 *   POST /v1/peer/purges/<sha256 of the body>      body: the entry (JSON)
 *
 * The signature covers method, authority and path; the path carries the body's digest, so the
 * entry cannot be changed in flight. A member applies it to everything it stores, records it and
 * answers its count; an id it already holds is answered `duplicate` and changes nothing.
 *
 * A member that was down (or unreachable) catches up by pulling, signed, from every member, by
 * the member's local append sequence (purge-log.ts), from the cursor it keeps for that member:
 *
 *   GET /v1/peer/purges?after=<seq>&limit=<n>[&log=<the member's log id the cursor is for>]
 *       → { log, first, last, floor, completeSince, entries: [{ seq, ...entry }], more }
 *
 * at start (before the node turns ready) and every `syncIntervalMs`, page by page: each page is
 * applied (in one pass over the store) and only then the cursor moves to its last entry, so a
 * member that fails mid-pull is asked again from there. An entry not seen before is applied only
 * to responses stored before the purge's time plus {@link PURGE_SKEW_MS} (the clock skew the
 * fleet's signatures accept), then recorded. A **gap** — the member's oldest kept sequence is past
 * this node's cursor — means purges were dropped from its log before this node read them (it was
 * away longer than the log reaches): every response stored before the member's `floor` is dropped
 * as stale. A log that replaced a lost one cannot know what it missed: its first catch-up drops
 * what was stored before the members' logs are complete (`completeSince`). A member met for the
 * first time (or whose log is new) is read from its start, with no gap: nothing is assumed lost.
 *
 * Answers are sealed (peer/requests.ts); entries and floors dated after now plus the skew are
 * refused, so no member can claim a purge from the future.
 *
 * Open mode (no fleet keys): as for ACME challenges, nothing is sent or taken: a purge applies to
 * the node that took it, and the answer says so.
 */
import { randomBytes } from 'node:crypto';
import { REPLAY_WINDOW_MS } from '@coral/keyring';
import type { Clock, TimerHandle } from '@coral/runtime';
import type { Logger } from 'pino';
import { z } from 'zod';
import { PurgeError } from '../errors.js';
import type { PurgeMetricsSink } from '../metrics/metrics.js';
import { bodyDigest, type PeerRequests } from '../peer/requests.js';
import { canonicalSpec, purgeMatcher, type PurgeCandidate, type PurgeSpec } from './match.js';
import type { LoggedEntry, PurgeEntry, PurgeLog } from './purge-log.js';

/** Path of the peer endpoints on every member's admin port. */
export const PEER_PURGE_PATH = '/v1/peer/purges';
/** Default period of the catch-up pull. */
export const DEFAULT_PURGE_SYNC_INTERVAL_MS = 30_000;
/** Entries per page of a pull. */
export const PURGE_PAGE_LIMIT = 1_000;
/** Pages read from one member in one round (its cursor keeps the place: the rest comes next round). */
export const PURGE_MAX_PAGES = 1_000;
/**
 * Clock skew allowed between members: a pulled purge also drops responses stored this long after
 * its time, and times later than now plus this are refused. The fleet's signatures accept the
 * same skew (@coral/keyring REPLAY_WINDOW_MS).
 */
export const PURGE_SKEW_MS = REPLAY_WINDOW_MS;
/** Longest value (URL, prefix or tag) of a purge. */
export const MAX_PURGE_VALUE_LENGTH = 8_192;
/** Retry period of the catch-up until a round succeeds after start. */
export const PURGE_SYNC_RETRY_MS = 500;

export interface PurgeTarget {
  /** Drop every stored response the predicate selects; resolves to the count. */
  purgeWhere(match: (meta: PurgeCandidate) => boolean): Promise<number>;
}

export interface FleetPurgeComponents {
  store: PurgeTarget;
  log: PurgeLog;
  peers: PeerRequests;
  clock: Clock;
  logger?: Pick<Logger, 'info' | 'warn' | 'error'>;
  metrics?: Pick<PurgeMetricsSink, 'purge'>;
  /**
   * Why this node may not see every member it should (isolated from the fleet's keys, not joined
   * yet), or undefined: with a reason, no live member means "not reached", not "none to reach".
   */
  cutOff?: () => string | undefined;
}

export interface FleetPurgeOptions {
  /** This node's id (hex): the origin of the purges it takes. */
  nodeId: string;
  syncIntervalMs?: number;
}

/** What became of a purge at one member. */
export interface MemberPurgeResult {
  nodeId: string;
  address: string;
  ok: boolean;
  /** Responses the member dropped. */
  count?: number;
  /** The member had applied this purge already. */
  duplicate?: boolean;
  status?: number;
  error?: string;
}

export interface PurgeResult {
  id: string;
  at: string;
  kind: PurgeSpec['kind'];
  value: string;
  /** This node's count. */
  local: { nodeId: string; count: number };
  propagation: {
    /** `off`: no fleet keys, nothing sent; `sent`: every live member was asked. */
    mode: 'off' | 'sent';
    /** True when every live member applied it (or there is none). */
    complete: boolean;
    members: MemberPurgeResult[];
    reason?: string;
  };
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

const entrySchema = z.strictObject({
  id: z.string().regex(/^[0-9a-f]{32}$/),
  at: z.number().int().nonnegative(),
  kind: z.enum(['url', 'prefix', 'tag']),
  value: z.string().min(1).max(MAX_PURGE_VALUE_LENGTH),
  origin: z.string().regex(/^[0-9a-f]{1,128}$/),
});
const pageSchema = z.object({
  log: z.string().regex(/^[0-9a-f]{1,64}$/),
  first: z.number().int().positive(),
  last: z.number().int().nonnegative(),
  floor: z.number().int().nonnegative(),
  completeSince: z.number().int().nonnegative(),
  entries: z.array(entrySchema.extend({ seq: z.number().int().positive() })).max(PURGE_PAGE_LIMIT),
  more: z.boolean(),
});
type Page = z.infer<typeof pageSchema>;

/** One page of a member's log, as {@link FleetPurge.page} answers it. */
export interface PurgePage {
  log: string;
  first: number;
  last: number;
  floor: number;
  completeSince: number;
  entries: LoggedEntry[];
  more: boolean;
}

/**
 * How long, and how many, applied purges are kept in memory for the proxy's store-time check
 * (`admits`): a fetch that started before a matching purge was applied here and ends after it must
 * not store what the purge dropped. A fetch is bounded far below an hour (the origin's timeouts).
 */
export const RECENT_PURGES_MS = 60 * 60_000;
export const RECENT_PURGES_MAX = 10_000;

export class FleetPurge {
  readonly #store: PurgeTarget;
  readonly log: PurgeLog;
  readonly #peers: PeerRequests;
  readonly #clock: Clock;
  /** Purges applied here lately, oldest first, for `admits` (bounded by RECENT_PURGES_*). */
  readonly #recent: Array<{ appliedAt: number; match: (m: PurgeCandidate) => boolean }> = [];
  readonly #logger: FleetPurgeComponents['logger'];
  readonly #metrics: FleetPurgeComponents['metrics'];
  readonly #cutOff: FleetPurgeComponents['cutOff'];
  readonly #nodeId: string;
  readonly #intervalMs: number;
  /** Log changes run one at a time (an id is checked and recorded atomically). */
  #serial: Promise<unknown> = Promise.resolve();
  #timer: TimerHandle | undefined;
  #stopped = false;
  #synced = false;
  #syncing: Promise<SyncResult> | undefined;
  #lastSync: (SyncResult & { at: string }) | undefined;

  constructor(components: FleetPurgeComponents, options: FleetPurgeOptions) {
    this.#store = components.store;
    this.log = components.log;
    this.#peers = components.peers;
    this.#clock = components.clock;
    this.#logger = components.logger;
    this.#metrics = components.metrics;
    this.#cutOff = components.cutOff;
    this.#nodeId = options.nodeId;
    this.#intervalMs = options.syncIntervalMs ?? DEFAULT_PURGE_SYNC_INTERVAL_MS;
  }

  /** True once a catch-up round reached at least one member since start. */
  get synced(): boolean {
    return this.#synced;
  }

  /** Check a member's request against the fleet's keys (throws PeerAuthError). */
  verifyPeer(req: {
    method: string;
    url: string;
    headers: Record<string, string | string[] | undefined>;
  }): void {
    this.#peers.verify(req);
  }

  /** Whether purges travel between members (keyed mode). */
  get propagating(): boolean {
    return this.#peers.enabled;
  }

  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#serial.then(fn, fn);
    this.#serial = run.catch(() => undefined);
    return run;
  }

  /** Remember an applied purge for `admits`, before its scan of the store starts. */
  #remember(match: (m: PurgeCandidate) => boolean): void {
    this.#recent.push({ appliedAt: this.#clock.now(), match });
    this.#forget();
  }

  /** Drop the remembered purges beyond the bounds. */
  #forget(): void {
    const now = this.#clock.now();
    while (
      this.#recent.length > RECENT_PURGES_MAX ||
      (this.#recent[0] !== undefined && this.#recent[0].appliedAt < now - RECENT_PURGES_MS)
    ) {
      this.#recent.shift();
    }
  }

  /**
   * The proxy's store-time check (`ProxyComponents.admit`): false when a purge matching the
   * response was applied here at or after its fetch started — the scan could not see a response
   * that was not stored yet, so the commit must not bring it back.
   */
  admits(c: {
    url: string;
    headers: Readonly<Record<string, string>>;
    fetchStartedAt: number;
  }): boolean {
    this.#forget();
    const m = { url: c.url, headers: { ...c.headers }, storedAt: c.fetchStartedAt };
    return !this.#recent.some((p) => p.appliedAt >= c.fetchStartedAt && p.match(m));
  }

  /** Purge here and on every live member (see the module comment). */
  async purge(spec: PurgeSpec): Promise<PurgeResult> {
    let canonical: PurgeSpec;
    try {
      canonical = canonicalSpec(spec);
    } catch (err) {
      throw new PurgeError('CORAL_ERR_PURGE_INVALID', `${spec.kind}: ${(err as Error).message}`);
    }
    const now = this.#clock.now();
    const entry: PurgeEntry = {
      id: randomBytes(16).toString('hex'),
      at: now,
      ...canonical,
      origin: this.#nodeId,
    };
    // The members are asked while this node scans its own store (the entry is final already).
    const local = this.#exclusive(async () => {
      const match = purgeMatcher(canonical);
      this.#remember(match);
      const n = await this.#store.purgeWhere(match);
      await this.log.append(entry, now);
      this.#metrics?.purge('local', n);
      return n;
    });
    const sent = this.#propagate(entry);
    const [count, propagation] = await Promise.all([local, sent]);
    this.#logger?.info(
      { purgeId: entry.id, kind: entry.kind, value: entry.value, count },
      'purge taken',
    );
    const result: PurgeResult = {
      id: entry.id,
      at: new Date(entry.at).toISOString(),
      kind: entry.kind,
      value: entry.value,
      local: { nodeId: this.#nodeId, count },
      propagation,
    };
    return result;
  }

  async #propagate(entry: PurgeEntry): Promise<PurgeResult['propagation']> {
    if (!this.#peers.enabled) {
      return {
        mode: 'off',
        complete: this.#peers.members().length === 0,
        members: [],
        reason: 'no fleet keys (fleet.open): the purge applies to this node only',
      };
    }
    const body = JSON.stringify(entry);
    const path = `${PEER_PURGE_PATH}/${bodyDigest(body)}`;
    const members = (await this.#peers.sendAll('POST', path, body)).map((r) => {
      const out: MemberPurgeResult = { nodeId: r.nodeId, address: r.address, ok: r.ok };
      if (r.status !== undefined) out.status = r.status;
      const answer = r.body as { count?: unknown; duplicate?: unknown } | undefined;
      if (r.ok && typeof answer?.count === 'number') out.count = answer.count;
      if (r.ok && answer?.duplicate === true) out.duplicate = true;
      if (r.error !== undefined) out.error = r.error;
      return out;
    });
    const failed = members.filter((m) => !m.ok);
    if (members.length === 0) {
      // A node alone in its fleet is the whole fleet; one that is cut off (isolated, not joined
      // yet) cannot tell: members pull the purge from this node's log when they reach it.
      const cutOff = this.#cutOff?.();
      return cutOff === undefined
        ? { mode: 'sent', complete: true, members, reason: 'no other live member' }
        : { mode: 'sent', complete: false, members, reason: cutOff };
    }
    if (failed.length > 0) {
      this.#logger?.warn(
        { purgeId: entry.id, failed },
        'purge not applied by every member: they catch up from the purge log',
      );
    }
    return { mode: 'sent', complete: failed.length === 0, members };
  }

  /**
   * A purge a member sent (its signature already verified): `digest` is the one of the path.
   * Applied to everything stored now, recorded, not passed on.
   */
  async applyPeer(
    body: string,
    digest: string,
  ): Promise<{ id: string; count: number; duplicate?: true }> {
    if (bodyDigest(body) !== digest) {
      throw new PurgeError(
        'CORAL_ERR_PURGE_INVALID',
        "the body's SHA-256 is not the one the signed path names",
      );
    }
    const entry = parseEntry(body);
    if (entry.at > this.#clock.now() + PURGE_SKEW_MS) {
      throw new PurgeError('CORAL_ERR_PURGE_INVALID', 'the purge is dated in the future');
    }
    return this.#exclusive(async () => {
      if (await this.log.has(entry.id)) return { id: entry.id, count: 0, duplicate: true as const };
      const match = purgeMatcher(entry);
      this.#remember(match);
      const count = await this.#store.purgeWhere(match);
      await this.log.append(entry, this.#clock.now());
      this.#metrics?.purge('peer', count);
      this.#logger?.info(
        { purgeId: entry.id, kind: entry.kind, value: entry.value, from: entry.origin, count },
        'purge applied for a member',
      );
      return { id: entry.id, count };
    });
  }

  /** From when this node's log holds every purge of the fleet (ms): its creation or its floor. */
  completeSince(): number {
    return Math.max(this.log.created, this.log.floor);
  }

  /**
   * One page of the log for a member's pull: entries after sequence `after` of the log `log`
   * (when `log` is not this log's id, the member's cursor is for a log that was lost: from the
   * start).
   */
  async page(after: number, limit: number, log?: string): Promise<PurgePage> {
    const from = log !== undefined && log !== this.log.id ? 0 : after;
    const page = await this.log.after(from, Math.min(limit, PURGE_PAGE_LIMIT));
    return {
      log: this.log.id,
      first: this.log.firstSeq,
      last: this.log.lastSeq,
      floor: this.log.floor,
      completeSince: this.completeSince(),
      ...page,
    };
  }

  /** Pull what this node has not seen from every live member and apply it (module comment). */
  sync(): Promise<SyncResult> {
    if (this.#stopped) return Promise.resolve({ asked: 0, answered: 0, applied: 0, dropped: 0 });
    // One round at a time; a caller during a round gets that round's result.
    this.#syncing ??= this.#sync().finally(() => (this.#syncing = undefined));
    return this.#syncing;
  }

  async #sync(): Promise<SyncResult> {
    const members = this.#peers.enabled ? this.#peers.members() : [];
    const result: SyncResult = { asked: members.length, answered: 0, applied: 0, dropped: 0 };
    if (members.length === 0) return result;
    const roundStart = this.#clock.now();
    const replaced = this.log.replaced;
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
      await this.log.clearReplaced();
    }
    if (result.applied > 0) {
      this.#logger?.info(
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
    let completeSince: number | undefined;
    for (let n = 0; n < PURGE_MAX_PAGES; n++) {
      const cursor = this.log.cursor(member.nodeId);
      const q = cursor
        ? `after=${cursor.seq}&limit=${PURGE_PAGE_LIMIT}&log=${cursor.log}`
        : `after=0&limit=${PURGE_PAGE_LIMIT}`;
      const r = await this.#peers.send(member, 'GET', `${PEER_PURGE_PATH}?${q}`);
      const parsed = r.ok ? pageSchema.safeParse(r.body) : undefined;
      const problem = !r.ok
        ? (r.error ?? `HTTP ${r.status}`)
        : !parsed?.success
          ? 'malformed answer'
          : this.#pageProblem(parsed.data, cursor?.log === parsed.data.log ? cursor.seq : 0);
      if (problem !== undefined || !parsed?.success) {
        this.#logger?.warn(
          { member: r.address, status: r.status, error: problem },
          'purge log pull failed',
        );
        return undefined;
      }
      const page = parsed.data;
      completeSince ??= page.completeSince;
      const known = cursor?.log === page.log ? cursor : undefined;
      await this.#exclusive(async () => {
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
        await this.log.setCursor(member.nodeId, { log: page.log, seq });
      });
      if (!page.more) return { completeSince };
    }
    return undefined; // the rest next round, from the cursor
  }

  /** Why a member's page cannot be used, or undefined. */
  #pageProblem(page: Page, after: number): string | undefined {
    const latest = this.#clock.now() + PURGE_SKEW_MS;
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
    this.#remember(match);
    const dropped = await this.#store.purgeWhere(match);
    result.dropped += dropped;
    const at = new Date(until).toISOString();
    result.gap = { before: at, dropped: (result.gap?.dropped ?? 0) + dropped };
    this.#logger?.warn(
      { why, before: at, dropped },
      'away longer than the purge log reaches back: dropped every response stored before it',
    );
  }

  /** Apply a page of pulled entries not seen before, in one pass over the store, and record them. */
  async #applyPulled(entries: readonly PurgeEntry[], result: SyncResult): Promise<void> {
    const fresh: PurgeEntry[] = [];
    for (const e of entries) if (!(await this.log.has(e.id))) fresh.push(e);
    if (fresh.length === 0) return;
    const matchers = fresh.map((e) => purgeMatcher(e, e.at + PURGE_SKEW_MS));
    for (const m of matchers) this.#remember(m);
    const n = await this.#store.purgeWhere((m) => matchers.some((match) => match(m)));
    const added = await this.log.appendAll(fresh, this.#clock.now());
    added.forEach((_e, i) => this.#metrics?.purge('catch-up', i === 0 ? n : 0));
    result.dropped += n;
    result.applied += added.length;
  }

  /** The last catch-up round that reached a member. */
  get lastSync(): (SyncResult & { at: string }) | undefined {
    return this.#lastSync;
  }

  /**
   * Run the catch-up: every {@link PURGE_SYNC_RETRY_MS} until a round reaches a member, then
   * every `syncIntervalMs`. Nothing in open mode.
   */
  start(): void {
    if (!this.#peers.enabled || this.#stopped) return;
    const tick = () => {
      if (this.#stopped) return;
      void this.sync()
        .catch((err: unknown) => this.#logger?.error({ err }, 'purge catch-up failed'))
        .finally(() => {
          if (this.#stopped) return;
          this.#timer = this.#clock.setTimeout(
            tick,
            this.#synced ? this.#intervalMs : PURGE_SYNC_RETRY_MS,
          );
        });
    };
    this.#timer = this.#clock.setTimeout(tick, this.#synced ? this.#intervalMs : 0);
  }

  /** Stop the catch-up and wait for log changes in progress. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#timer?.cancel();
    await this.#syncing?.catch(() => undefined);
    await this.#serial;
  }
}

/** A purge entry from a member's body; throws PurgeError when it is not one. */
function parseEntry(body: string): PurgeEntry {
  let raw: unknown;
  try {
    raw = JSON.parse(body);
  } catch {
    throw new PurgeError('CORAL_ERR_PURGE_INVALID', 'the purge entry is not JSON');
  }
  const r = entrySchema.safeParse(raw);
  if (!r.success) {
    throw new PurgeError(
      'CORAL_ERR_PURGE_INVALID',
      `not a purge entry: ${r.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ')}`,
    );
  }
  let spec: PurgeSpec;
  try {
    spec = canonicalSpec({ kind: r.data.kind, value: r.data.value });
  } catch (err) {
    throw new PurgeError('CORAL_ERR_PURGE_INVALID', (err as Error).message);
  }
  return { ...r.data, ...spec };
}
