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
 * A member that was down (or unreachable) catches up by pulling, signed, from every member:
 *
 *   GET /v1/peer/purges?since=<ms>&limit=<n>[&after=<cursor>]
 *       → { entries, next?, completeSince }
 *
 * at start (before the node turns ready) and every `syncIntervalMs`. Each entry it has not seen
 * is applied only to responses stored before the purge's time (plus {@link PURGE_SKEW_MS} for
 * clocks that disagree), then recorded. When the members' logs are not complete back to this
 * node's last sync (it was away longer than their retention, or their logs are newer), every
 * response it stored before the earliest time they vouch for is dropped as stale.
 *
 * Open mode (no fleet keys): as for ACME challenges, nothing is sent or taken: a purge applies to
 * the node that took it, and the answer says so.
 */
import { randomBytes } from 'node:crypto';
import type { Clock, TimerHandle } from '@coral/testkit';
import type { Logger } from 'pino';
import { z } from 'zod';
import { PurgeError } from '../errors.js';
import type { PurgeMetricsSink } from '../metrics/metrics.js';
import { bodyDigest, type PeerRequests } from '../peer/requests.js';
import { canonicalSpec, purgeMatcher, type PurgeCandidate, type PurgeSpec } from './match.js';
import { CURSOR, type PurgeEntry, type PurgeLog } from './purge-log.js';

/** Path of the peer endpoints on every member's admin port. */
export const PEER_PURGE_PATH = '/v1/peer/purges';
/** Default period of the catch-up pull. */
export const DEFAULT_PURGE_SYNC_INTERVAL_MS = 30_000;
/** Entries per page of a pull. */
export const PURGE_PAGE_LIMIT = 1_000;
/** Pages read from one member in one round (the rest comes next round). */
export const PURGE_MAX_PAGES = 20;
/** A pulled purge also drops responses stored this long after its time (clock skew). */
export const PURGE_SKEW_MS = 5_000;
/** Each pull starts this long before the last one (late and skewed entries; ids deduplicate). */
export const PURGE_SYNC_OVERLAP_MS = 60_000;
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
  entries: z.array(entrySchema).max(PURGE_PAGE_LIMIT),
  next: z.string().regex(CURSOR).optional(),
  completeSince: z.number().int().nonnegative(),
});

export class FleetPurge {
  readonly #store: PurgeTarget;
  readonly log: PurgeLog;
  readonly #peers: PeerRequests;
  readonly #clock: Clock;
  readonly #logger: FleetPurgeComponents['logger'];
  readonly #metrics: FleetPurgeComponents['metrics'];
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
    const count = await this.#exclusive(async () => {
      const n = await this.#store.purgeWhere(purgeMatcher(canonical));
      await this.log.append(entry, now);
      this.#metrics?.purge('local', n);
      return n;
    });
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
      propagation: await this.#propagate(entry),
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
    return this.#exclusive(async () => {
      if (await this.log.has(entry.id)) return { id: entry.id, count: 0, duplicate: true as const };
      const count = await this.#store.purgeWhere(purgeMatcher(entry));
      await this.log.append(entry, this.#clock.now());
      this.#metrics?.purge('peer', count);
      this.#logger?.info(
        { purgeId: entry.id, kind: entry.kind, value: entry.value, from: entry.origin, count },
        'purge applied for a member',
      );
      return { id: entry.id, count };
    });
  }

  /** From when this node's log holds every purge of the fleet (ms). */
  completeSince(): number {
    return this.log.completeSince(this.#clock.now());
  }

  /** One page of the log for a member's pull. */
  async page(
    since: number,
    limit: number,
    after?: string,
  ): Promise<{ entries: PurgeEntry[]; next?: string; completeSince: number }> {
    const page = await this.log.since(since, Math.min(limit, PURGE_PAGE_LIMIT), after);
    return { ...page, completeSince: this.completeSince() };
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
    const watermark = this.log.watermark;
    const since = Math.max(0, (watermark ?? 0) - PURGE_SYNC_OVERLAP_MS);
    const pulled = new Map<string, PurgeEntry>();
    let completeSince = Infinity;
    await Promise.all(
      members.map(async (member) => {
        let after: string | undefined;
        for (let page = 0; page < PURGE_MAX_PAGES; page++) {
          const q = `since=${since}&limit=${PURGE_PAGE_LIMIT}${after ? `&after=${after}` : ''}`;
          const r = await this.#peers.send(member, 'GET', `${PEER_PURGE_PATH}?${q}`);
          const parsed = r.ok ? pageSchema.safeParse(r.body) : undefined;
          if (!parsed?.success) {
            if (page === 0) {
              this.#logger?.warn(
                { member: r.address, status: r.status, error: r.error ?? 'malformed answer' },
                'purge log pull failed',
              );
            }
            return;
          }
          if (page === 0) {
            result.answered++;
            completeSince = Math.min(completeSince, parsed.data.completeSince);
          }
          for (const e of parsed.data.entries) pulled.set(e.id, e);
          after = parsed.data.next;
          if (!after) return;
        }
      }),
    );
    if (result.answered === 0) return result;
    // Applying waits for purges in progress (not the other way round: the pull is done).
    await this.#exclusive(() => this.#applyPulled(pulled, completeSince, watermark, result));
    await this.log.setWatermark(roundStart);
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

  async #applyPulled(
    pulled: Map<string, PurgeEntry>,
    completeSince: number,
    watermark: number | undefined,
    result: SyncResult,
  ): Promise<void> {
    for (const e of [...pulled.values()].sort((a, b) => a.at - b.at)) {
      if (await this.log.has(e.id)) continue;
      const n = await this.#store.purgeWhere(purgeMatcher(e, e.at + PURGE_SKEW_MS));
      await this.log.append(e, this.#clock.now());
      this.#metrics?.purge('catch-up', n);
      result.dropped += n;
      result.applied++;
    }
    // The members' logs vouch only from `completeSince`: anything stored before it, and after the
    // last sync, may have missed a purge that is no longer in any log. A node that never synced
    // has nothing to be behind on (a new node, or the first start with purges: everything was
    // pulled from 0 and applied by time), unless its log replaced a lost one.
    const behind = watermark ?? (this.log.replaced ? -Infinity : Infinity);
    if (completeSince > behind) {
      const dropped = await this.#store.purgeWhere((m) => m.storedAt < completeSince);
      await this.log.raiseFloor(completeSince);
      result.gap = { before: new Date(completeSince).toISOString(), dropped };
      if (dropped > 0) {
        this.#logger?.warn(
          {
            lastSync: watermark === undefined ? null : new Date(watermark).toISOString(),
            logsCompleteSince: result.gap.before,
            dropped,
          },
          'away longer than the purge log reaches back: dropped every response stored before it',
        );
      }
    }
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
