/**
 * The DSHT as the proxy's `ContentIndex`: `announce` is a sloppy put of a holder record under the
 * URL key, `lookup` a hierarchical get whose values are decoded, validated and reduced to one
 * (the newest) record per node, and `withdraw` puts a tombstone that replaces this node's earlier
 * record wherever the put lands. Invalid values are counted and skipped, never thrown.
 *
 * Claims (`claimOnMiss`, the fallback of the proxy's designated fetcher: used only when the member
 * designated for a URL did not answer, because it is down or sees the membership differently): in
 * a flash crowd every proxy misses the same URL at the same moment, and a plain
 * lookup-then-announce lets each of them find nobody and go to the origin. With claims, a node
 * that found no holder puts its `fetching` record at once and looks again: of the
 * fetching claims it then sees (its own included), the earliest (then lowest node id) wins; the
 * others are told to fetch from the winner, whose in-flight fetch they join. The order is total,
 * so two nodes never defer to each other. Claims made at the same instant may not see each other
 * (the sloppy store spreads them over several nodes), so before claiming, a node waits a step per
 * rank of its own in a rendezvous order of the live proxies for this key (`rank`, bounded by
 * `claimRankCap`): in a flash crowd the first-ranked node claims first and the others, looking
 * again after their wait, find its claim and join it.
 */
import type { Clock } from '@coral/runtime';
import { systemClock } from '@coral/runtime';
import { Packr } from 'msgpackr';
import type { ClaimResult, ContentIndex, Holder, SiteControlRecord } from '@coral/httpprx';
import type { Logger } from 'pino';
import type { IndexMetricsSink } from '../metrics/metrics.js';
import { decodeHolder, encodeHolder, type HolderRecord } from './holder-codec.js';

/** The part of the DSHT this adapter uses. */
export interface DshtValueStore {
  get(
    key: Uint8Array,
    opts?: { signal?: AbortSignal },
  ): Promise<{
    values: Uint8Array[];
    /** The same values with their publisher (the authenticated node that stored each). */
    records?: ReadonlyArray<{ publisher: Uint8Array; value: Uint8Array }>;
    stats: { level?: number };
  }>;
  put(
    key: Uint8Array,
    value: Uint8Array,
    ttlSeconds: number,
    opts?: { signal?: AbortSignal; level?: number },
  ): Promise<unknown>;
}

export interface DshtContentIndexComponents {
  dsht: DshtValueStore;
  metrics?: IndexMetricsSink;
  /** This node's rank among the live proxies for a key (0 = first); without it every node is 0. */
  rank?: (urlKey: Uint8Array) => number;
  clock?: Clock;
  logger?: Pick<Logger, 'debug' | 'warn'>;
}

export interface DshtContentIndexOptions {
  /** This node (hex id, advertised ip and proxy port): its own records are never returned. */
  self: { nodeId: string; ip: string; httpPort: number };
  /** TTL of the tombstone a withdraw puts (default {@link DEFAULT_WITHDRAW_TTL_SECONDS}). */
  withdrawTtlSeconds?: number;
  /** Offer `claim` (see above); default false. */
  claimOnMiss?: boolean;
  /** TTL of a claim (default {@link DEFAULT_CLAIM_TTL_SECONDS}, the proxy's fetching TTL). */
  claimTtlSeconds?: number;
  /** Upper bound of the wait between a claim and the second look (default {@link DEFAULT_CLAIM_SETTLE_MAX_MS}). */
  claimSettleMaxMs?: number;
  /** Wait per rank before claiming (default {@link DEFAULT_CLAIM_STEP_MS}) ... */
  claimStepMs?: number;
  /** ... for ranks up to this one (default {@link DEFAULT_CLAIM_RANK_CAP}). */
  claimRankCap?: number;
}

export const DEFAULT_WITHDRAW_TTL_SECONDS = 600;
export const DEFAULT_CLAIM_TTL_SECONDS = 20;
export const DEFAULT_CLAIM_SETTLE_MAX_MS = 250;
export const DEFAULT_CLAIM_STEP_MS = 100;
export const DEFAULT_CLAIM_RANK_CAP = 3;

export class DshtContentIndex implements ContentIndex {
  readonly #dsht: DshtValueStore;
  readonly #clock: Clock;
  readonly #logger: Pick<Logger, 'debug' | 'warn'> | undefined;
  readonly #self: DshtContentIndexOptions['self'];
  readonly #withdrawTtl: number;
  readonly #claimOnMiss: boolean;
  readonly #claimTtl: number;
  readonly #claimSettleMaxMs: number;
  readonly #claimStepMs: number;
  readonly #claimRankCap: number;
  readonly #rank: ((urlKey: Uint8Array) => number) | undefined;
  readonly #metrics: IndexMetricsSink | undefined;
  /** Lookups that ended in a claim, and claims lost to another node. */
  claims = 0;
  claimsLost = 0;
  /** Values found in the DSHT that failed validation, since start. */
  invalidValues = 0;

  constructor(components: DshtContentIndexComponents, options: DshtContentIndexOptions) {
    this.#dsht = components.dsht;
    this.#clock = components.clock ?? systemClock;
    this.#logger = components.logger;
    this.#self = options.self;
    this.#withdrawTtl = options.withdrawTtlSeconds ?? DEFAULT_WITHDRAW_TTL_SECONDS;
    this.#claimOnMiss = options.claimOnMiss ?? false;
    this.#claimTtl = options.claimTtlSeconds ?? DEFAULT_CLAIM_TTL_SECONDS;
    this.#claimSettleMaxMs = options.claimSettleMaxMs ?? DEFAULT_CLAIM_SETTLE_MAX_MS;
    this.#claimStepMs = options.claimStepMs ?? DEFAULT_CLAIM_STEP_MS;
    this.#claimRankCap = options.claimRankCap ?? DEFAULT_CLAIM_RANK_CAP;
    this.#rank = components.rank;
    this.#metrics = components.metrics;
    if (this.#claimOnMiss) this.claim = (urlKey, opts) => this.#claim(urlKey, opts);
  }

  async lookup(urlKey: Uint8Array, opts?: { signal?: AbortSignal }): Promise<Holder[]> {
    const { values, stats } = await this.#dsht.get(urlKey, opts);
    return this.#holders(this.#newest(values), stats.level);
  }

  /**
   * Claim a miss nobody holds (see above). Only when claims are on (`claimOnMiss`); the proxy
   * calls it only when no designated fetcher answered.
   */
  readonly claim?: (urlKey: Uint8Array, opts?: { signal?: AbortSignal }) => Promise<ClaimResult>;

  async #claim(urlKey: Uint8Array, opts?: { signal?: AbortSignal }): Promise<ClaimResult> {
    // Nodes ranked behind others for this key give them a head start.
    const rank = Math.min(this.#rank?.(urlKey) ?? 0, this.#claimRankCap);
    if (rank > 0) {
      await this.#sleep(rank * this.#claimStepMs);
      const { values: later, stats: laterStats } = await this.#dsht.get(urlKey, opts);
      const found = this.#holders(this.#newest(later), laterStats.level);
      if (found.length > 0) return { won: false, holders: found };
    }
    // Still nobody: claim it, then see who else did.
    const at = Math.floor(this.#clock.now());
    const mine: HolderRecord = { ...this.#self, state: 'fetching', at };
    // Claims go to the global level only: one root per key, so claimers see each other.
    await this.#dsht.put(urlKey, encodeHolder(mine), this.#claimTtl, { ...opts, level: 0 });
    this.claims++;
    // Claims started at about the same time finish their puts at about the same time: wait as
    // long as ours took (bounded) so that theirs are stored before we look.
    const settle = Math.min(this.#clock.now() - at, this.#claimSettleMaxMs);
    if (settle > 0) await this.#sleep(settle);
    const again = await this.#dsht.get(urlKey, opts);
    const seen = this.#newest(again.values);
    const others = this.#holders(seen, again.stats.level);
    if (others.some((h) => h.state === 'complete')) return { won: false, holders: others };
    let winner: HolderRecord = mine;
    for (const r of seen.values()) {
      if (r.state !== 'fetching' || r.nodeId === this.#self.nodeId) continue;
      if (r.at < winner.at || (r.at === winner.at && r.nodeId < winner.nodeId)) winner = r;
    }
    if (winner === mine) {
      this.#metrics?.claim('won');
      return { won: true };
    }
    this.claimsLost++;
    this.#metrics?.claim('lost');
    return {
      won: false,
      holders: others.sort((a, b) =>
        a.nodeId === winner.nodeId ? -1 : b.nodeId === winner.nodeId ? 1 : 0,
      ),
    };
  }

  #newest(values: Uint8Array[]): Map<string, HolderRecord> {
    const newest = new Map<string, HolderRecord>();
    for (const value of values) {
      let record: HolderRecord;
      try {
        record = decodeHolder(value);
      } catch (err) {
        this.invalidValues++;
        this.#metrics?.invalidValue();
        this.#logger?.debug({ err }, 'skipping an invalid holder record');
        continue;
      }
      const prev = newest.get(record.nodeId);
      if (!prev || record.at > prev.at || (record.at === prev.at && record.state === 'withdrawn')) {
        newest.set(record.nodeId, record);
      }
    }
    return newest;
  }

  #holders(records: Map<string, HolderRecord>, level: number | undefined): Holder[] {
    const holders: Holder[] = [];
    for (const r of records.values()) {
      if (r.state === 'withdrawn' || r.nodeId === this.#self.nodeId) continue;
      const holder: Holder = { nodeId: r.nodeId, ip: r.ip, httpPort: r.httpPort, state: r.state };
      if (r.size !== undefined) holder.size = r.size;
      if (r.sha256 !== undefined) holder.sha256 = r.sha256;
      if (level !== undefined) holder.level = level;
      holders.push(holder);
    }
    // A complete copy serves at once; a fetching one makes the client wait on its fetch.
    return holders.sort((a, b) => rank(b) - rank(a));
  }

  #sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => this.#clock.setTimeout(resolve, ms));
  }

  async announce(urlKey: Uint8Array, holder: Holder, ttlSeconds: number): Promise<void> {
    const record: HolderRecord = {
      nodeId: holder.nodeId,
      ip: holder.ip,
      httpPort: holder.httpPort,
      state: holder.state,
      at: Math.floor(this.#clock.now()),
    };
    if (holder.size !== undefined) record.size = holder.size;
    if (holder.sha256 !== undefined) record.sha256 = holder.sha256;
    await this.#dsht.put(urlKey, encodeHolder(record), ttlSeconds);
  }

  /**
   * Publish a site's opt-out (`Coral-Control: redirect-home`) under its site key. The DSHT of a
   * keyed fleet authenticates every put, and the proxy believes these records only then.
   */
  async publishSiteControl(
    siteKey: Uint8Array,
    record: SiteControlRecord,
    ttlSeconds: number,
  ): Promise<void> {
    await this.#dsht.put(siteKey, encodeSiteControl(record), Math.max(1, Math.ceil(ttlSeconds)));
  }

  /** The opt-out records under a site key; values that do not decode are counted and skipped. */
  async siteControl(
    siteKey: Uint8Array,
    opts?: { signal?: AbortSignal },
  ): Promise<SiteControlRecord[]> {
    const { values } = await this.#dsht.get(siteKey, opts);
    const out: SiteControlRecord[] = [];
    for (const value of values) {
      const record = decodeSiteControl(value);
      if (record) out.push(record);
      else {
        this.invalidValues++;
        this.#metrics?.invalidValue();
      }
    }
    return out;
  }

  async withdraw(urlKey: Uint8Array): Promise<void> {
    const record: HolderRecord = {
      ...this.#self,
      state: 'withdrawn',
      at: Math.floor(this.#clock.now()),
    };
    await this.#dsht.put(urlKey, encodeHolder(record), this.#withdrawTtl);
  }
}

function rank(r: { state: string }): number {
  return r.state === 'complete' ? 2 : r.state === 'fetching' ? 1 : 0;
}

/**
 * A site opt-out record as stored in the DSHT under the site's key (SHA-1 of `"site:" + origin`,
 * never a URL key): a msgpack array `[version=1, "site", origin: str, at: uint, until: uint,
 * nodeId: bin(20)]`, at most {@link MAX_SITE_CONTROL_BYTES}.
 */
export const SITE_CONTROL_VERSION = 1;
export const MAX_SITE_CONTROL_BYTES = 512;
const sitePackr = new Packr({ useRecords: false, mapsAsObjects: true });
const SITE_ORIGIN = /^https?:\/\/[a-z0-9.\-[\]:]{1,300}$/;

export function encodeSiteControl(r: SiteControlRecord): Uint8Array {
  const bytes = sitePackr.pack([
    SITE_CONTROL_VERSION,
    'site',
    r.origin,
    Math.max(0, Math.floor(r.at)),
    Math.max(0, Math.floor(r.until)),
    Buffer.from(r.nodeId, 'hex'),
  ]);
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
}

/** The record, or undefined when the value is not a well-formed site record. */
export function decodeSiteControl(bytes: Uint8Array): SiteControlRecord | undefined {
  if (bytes.length === 0 || bytes.length > MAX_SITE_CONTROL_BYTES) return undefined;
  let raw: unknown;
  try {
    raw = sitePackr.unpack(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length));
  } catch {
    return undefined;
  }
  if (!Array.isArray(raw) || raw.length !== 6) return undefined;
  const [version, kind, origin, at, until, nodeId] = raw as unknown[];
  const uint = (v: unknown): v is number =>
    typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
  if (version !== SITE_CONTROL_VERSION || kind !== 'site') return undefined;
  if (typeof origin !== 'string' || !SITE_ORIGIN.test(origin)) return undefined;
  if (!uint(at) || !uint(until)) return undefined;
  if (!(nodeId instanceof Uint8Array) || nodeId.length !== 20) return undefined;
  return { origin, at, until, nodeId: Buffer.from(nodeId).toString('hex') };
}
