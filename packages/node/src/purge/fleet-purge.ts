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
 *
 * This file takes purges (here and from members) and answers pulls; the pull itself is
 * catch-up.ts, the messages wire.ts, the store-time check recent.ts.
 */
import { randomBytes } from 'node:crypto';
import type { Clock } from '@coral/runtime';
import type { Logger } from 'pino';
import { PurgeError } from '../errors.js';
import type { PurgeMetricsSink } from '../metrics/metrics.js';
import { bodyDigest, type PeerRequests } from '../peer/requests.js';
import { PurgeCatchUp, type PurgeTarget, type SyncResult } from './catch-up.js';
import { canonicalSpec, purgeMatcher, type PurgeSpec } from './match.js';
import type { PurgeEntry, PurgeLog } from './purge-log.js';
import { RecentPurges } from './recent.js';
import { Serial } from './serial.js';
import {
  PEER_PURGE_PATH,
  PURGE_PAGE_LIMIT,
  PURGE_SKEW_MS,
  parseEntry,
  type PurgePage,
} from './wire.js';

export {
  DEFAULT_PURGE_SYNC_INTERVAL_MS,
  PURGE_MAX_PAGES,
  PURGE_SYNC_RETRY_MS,
  type PurgeTarget,
  type SyncResult,
} from './catch-up.js';
export { RECENT_PURGES_MAX, RECENT_PURGES_MS } from './recent.js';
export {
  MAX_PURGE_VALUE_LENGTH,
  PEER_PURGE_PATH,
  PURGE_PAGE_LIMIT,
  PURGE_SKEW_MS,
  type PurgePage,
} from './wire.js';

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

export class FleetPurge {
  readonly #store: PurgeTarget;
  readonly log: PurgeLog;
  readonly #peers: PeerRequests;
  readonly #clock: Clock;
  /** Purges applied here lately, for `admits`. */
  readonly #recent: RecentPurges;
  /** Log changes run one at a time (an id is checked and recorded atomically). */
  readonly #serial = new Serial();
  readonly #catchUp: PurgeCatchUp;
  readonly #logger: FleetPurgeComponents['logger'];
  readonly #metrics: FleetPurgeComponents['metrics'];
  readonly #cutOff: FleetPurgeComponents['cutOff'];
  readonly #nodeId: string;

  constructor(components: FleetPurgeComponents, options: FleetPurgeOptions) {
    this.#store = components.store;
    this.log = components.log;
    this.#peers = components.peers;
    this.#clock = components.clock;
    this.#logger = components.logger;
    this.#metrics = components.metrics;
    this.#cutOff = components.cutOff;
    this.#nodeId = options.nodeId;
    this.#recent = new RecentPurges(components.clock);
    this.#catchUp = new PurgeCatchUp(
      { ...components, recent: this.#recent, serial: this.#serial },
      options.syncIntervalMs !== undefined ? { syncIntervalMs: options.syncIntervalMs } : {},
    );
  }

  /** True once a catch-up round reached at least one member since start. */
  get synced(): boolean {
    return this.#catchUp.synced;
  }

  /** The last catch-up round that reached a member. */
  get lastSync(): (SyncResult & { at: string }) | undefined {
    return this.#catchUp.lastSync;
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
    return this.#recent.admits(c);
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
    const local = this.#serial.run(async () => {
      const match = purgeMatcher(canonical);
      this.#recent.remember(match);
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
    return this.#serial.run(async () => {
      if (await this.log.has(entry.id)) return { id: entry.id, count: 0, duplicate: true as const };
      const match = purgeMatcher(entry);
      this.#recent.remember(match);
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

  /** Pull what this node has not seen from every live member and apply it (catch-up.ts). */
  sync(): Promise<SyncResult> {
    return this.#catchUp.sync();
  }

  /**
   * Run the catch-up: every `PURGE_SYNC_RETRY_MS` until a round reaches a member, then every
   * `syncIntervalMs`. Nothing in open mode.
   */
  start(): void {
    this.#catchUp.start();
  }

  /** Stop the catch-up and wait for log changes in progress. */
  async stop(): Promise<void> {
    await this.#catchUp.stop();
    await this.#serial.idle();
  }
}
