/**
 * Locality hints with bounded cost. `NodeDirectory.hinted()` may walk the DSHT (two lookups and a
 * ping per candidate), and every query from a new resolver, or with a new ECS subnet, asks for
 * hints. A stranger who rotates names or source addresses must not be able to make the node walk
 * at will, so:
 *
 * - results are cached per /24 (IPv6: /48) for `ttlMs` (5 min; the nodes are re-checked for
 *   liveness each time they are used) and "no hint" for `negativeTtlMs` (1 min);
 * - concurrent misses for one prefix share one walk;
 * - walks not served by the cache start at most `walksPerSecond` (10) a second on average, and at
 *   most `maxInFlight` (8) run at once; each is aborted after `walkTimeoutMs` (2 s);
 * - a miss that may not start a walk (and any query while its prefix is re-walked) uses the
 *   prefix's expired result, for one more TTL at most, else answers "no hint" at once (the
 *   locator falls through to random proxies).
 *
 * The answer never waits longer than the locator's `hintTimeoutMs` for a walk; the walk goes on in
 * the background (within the bounds above) and fills the cache for the next query.
 */
import type { Clock } from '@coral/runtime';
import { TokenBucket } from '../limits/token-bucket.js';
import { prefixKey } from '../net/ip.js';
import type { HintResult, NodeDirectory } from '../node-directory.js';

export const DEFAULT_HINT_CACHE_TTL_MS = 5 * 60_000;
export const DEFAULT_HINT_NEGATIVE_TTL_MS = 60_000;
export const DEFAULT_HINT_WALKS_PER_SECOND = 10;
export const DEFAULT_HINT_MAX_IN_FLIGHT = 8;
export const DEFAULT_HINT_WALK_TIMEOUT_MS = 2_000;
export const DEFAULT_HINT_CACHE_ENTRIES = 10_000;

export interface HintWalkOptions {
  /** How long a result naming nodes is reused (default 5 min). */
  ttlMs?: number;
  /** How long "no hint" is reused (default 1 min). */
  negativeTtlMs?: number;
  /** Walks started per second when the cache cannot answer, on average (default 10; burst the same). */
  walksPerSecond?: number;
  /** Walks running at once (default 8). */
  maxInFlight?: number;
  /** A walk still running after this long is aborted and counts as "no hint" (default 2 s). */
  walkTimeoutMs?: number;
  /** Prefixes remembered (oldest dropped first; default 10,000). */
  maxEntries?: number;
}

/** What {@link HintWalks.lookup} has for a target right now. */
export type HintLookup =
  | { kind: 'cached'; result: HintResult; key: string; stale: boolean }
  | { kind: 'walk'; walk: Promise<HintResult>; key: string }
  | { kind: 'skipped'; reason: 'rate' | 'busy' | 'closed'; key: string };

interface Row {
  result?: HintResult;
  /** Nodes asked for when `result` was walked: a bigger ask than this needs a new walk. */
  asked: number;
  expiresAt: number;
  walk?: Promise<HintResult>;
}

const NO_HINT: HintResult = Object.freeze({ nodes: [], prefix: null });

export class HintWalks {
  readonly #directory: NodeDirectory;
  readonly #clock: Clock;
  readonly #ttl: number;
  readonly #negativeTtl: number;
  readonly #maxInFlight: number;
  readonly #walkTimeout: number;
  readonly #maxEntries: number;
  readonly #bucket: TokenBucket;
  readonly #rows = new Map<string, Row>();
  readonly #abort = new AbortController();
  #inFlight = 0;
  readonly counters = {
    walks: 0,
    cacheHits: 0,
    joined: 0,
    stale: 0,
    skippedRate: 0,
    skippedBusy: 0,
    timedOut: 0,
  };

  constructor(
    components: { directory: NodeDirectory; clock: Clock },
    options: HintWalkOptions = {},
  ) {
    this.#directory = components.directory;
    this.#clock = components.clock;
    this.#ttl = options.ttlMs ?? DEFAULT_HINT_CACHE_TTL_MS;
    this.#negativeTtl = options.negativeTtlMs ?? DEFAULT_HINT_NEGATIVE_TTL_MS;
    this.#maxInFlight = options.maxInFlight ?? DEFAULT_HINT_MAX_IN_FLIGHT;
    this.#walkTimeout = options.walkTimeoutMs ?? DEFAULT_HINT_WALK_TIMEOUT_MS;
    this.#maxEntries = options.maxEntries ?? DEFAULT_HINT_CACHE_ENTRIES;
    this.#bucket = new TokenBucket(
      this.#clock,
      options.walksPerSecond ?? DEFAULT_HINT_WALKS_PER_SECOND,
    );
  }

  /** The cache key of an address: its /24 (IPv6: /48). */
  static keyOf(address: Uint8Array): string {
    return prefixKey(address, address.length === 4 ? 24 : 48);
  }

  /**
   * Hints for `target` (`address` = the bytes of the address hints are looked up for: the ECS
   * subnet's, else the resolver's), `count` nodes wanted. Never starts work beyond the bounds.
   */
  lookup(target: { ip: string; subnet?: string }, address: Uint8Array, count: number): HintLookup {
    const key = HintWalks.keyOf(address);
    const row = this.#rows.get(key);
    const now = this.#clock.now();
    const result = row?.result;
    const enough =
      result !== undefined && (count <= row!.asked || result.nodes.length < row!.asked);
    if (enough && row!.expiresAt > now) {
      this.counters.cacheHits++;
      return { kind: 'cached', result, key, stale: false };
    }
    // An expired result may stand in, for one more TTL at most, while it cannot be refreshed.
    const usable = enough && now < row!.expiresAt + this.#ttl;
    if (row?.walk) {
      // Being walked again: the expired result meanwhile (stale while revalidating), else wait.
      if (usable) {
        this.counters.stale++;
        return { kind: 'cached', result, key, stale: true };
      }
      this.counters.joined++;
      return { kind: 'walk', walk: row.walk, key };
    }
    const fallback = (reason: 'rate' | 'busy' | 'closed'): HintLookup => {
      if (usable) {
        this.counters.stale++;
        return { kind: 'cached', result, key, stale: true };
      }
      return { kind: 'skipped', reason, key };
    };
    if (this.#abort.signal.aborted) return fallback('closed');
    if (this.#inFlight >= this.#maxInFlight) {
      this.counters.skippedBusy++;
      return fallback('busy');
    }
    if (!this.#bucket.take()) {
      this.counters.skippedRate++;
      return fallback('rate');
    }
    return { kind: 'walk', walk: this.#walk(key, row, target, count), key };
  }

  /** Drop a prefix's result (its nodes all turned out dead), so the next miss walks again. */
  forget(key: string): void {
    const row = this.#rows.get(key);
    if (row && !row.walk) this.#rows.delete(key);
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  get entries(): number {
    return this.#rows.size;
  }

  /** Abort every walk in flight (on server close). */
  close(): void {
    this.#abort.abort();
  }

  #walk(
    key: string,
    existing: Row | undefined,
    target: { ip: string; subnet?: string },
    count: number,
  ): Promise<HintResult> {
    const row: Row = existing ?? { asked: 0, expiresAt: 0 };
    if (!existing) {
      this.#rows.set(key, row);
      while (this.#rows.size > this.#maxEntries) {
        this.#rows.delete(this.#rows.keys().next().value as string);
      }
    }
    this.#inFlight++;
    this.counters.walks++;
    const ac = new AbortController();
    const onClose = (): void => ac.abort();
    this.#abort.signal.addEventListener('abort', onClose, { once: true });
    let timedOut = false;
    const aborted = new Promise<HintResult>((resolve) => {
      ac.signal.addEventListener('abort', () => resolve(NO_HINT), { once: true });
    });
    const timer = this.#clock.setTimeout(() => {
      timedOut = true;
      ac.abort();
    }, this.#walkTimeout);
    let asked: Promise<HintResult>;
    try {
      asked = this.#directory.hinted(target, count, { signal: ac.signal });
    } catch {
      asked = Promise.resolve(NO_HINT);
    }
    const walk = Promise.race([asked.then(sanitize, () => NO_HINT), aborted]).then((result) => {
      this.#inFlight--;
      timer.cancel();
      this.#abort.signal.removeEventListener('abort', onClose);
      if (timedOut) this.counters.timedOut++;
      row.walk = undefined;
      if (this.#rows.get(key) !== row) return result;
      if (this.#abort.signal.aborted) {
        this.#rows.delete(key);
        return result;
      }
      row.result = result;
      row.asked = count;
      row.expiresAt = this.#clock.now() + (result.nodes.length > 0 ? this.#ttl : this.#negativeTtl);
      // Refreshed rows go to the back: the oldest-refreshed prefix is dropped first.
      this.#rows.delete(key);
      this.#rows.set(key, row);
      return result;
    });
    row.walk = walk;
    return walk;
  }
}

/** Whatever the directory returned, as a HintResult of plain node objects. */
function sanitize(r: HintResult | undefined): HintResult {
  if (!r || !Array.isArray(r.nodes)) return NO_HINT;
  const prefix = r.prefix === 24 || r.prefix === 16 ? r.prefix : null;
  return { nodes: r.nodes.filter((n) => n && typeof n === 'object'), prefix };
}
