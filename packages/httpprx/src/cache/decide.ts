/**
 * What to do with one GET or HEAD request, given the responses stored for its URL and the time:
 * a pure function of RFC 9111 §4 (and RFC 5861), tested exhaustively in test/cache/decide.spec.ts.
 *
 *   decide(request, variants, now, options) →
 *     hit      serve `meta` (fresh, or stale as the client allows); `refresh`: also revalidate it in
 *              the background (stale-while-revalidate)
 *     forward  ask upstream: `stale` is the stored response to revalidate (and fall back on under
 *              stale-if-error); `join`: the request may share a fetch already in flight (if that
 *              response turns out reusable for it, `mayJoin`); `peers`: fleet peers may answer it;
 *              `register`: other requests may join this fetch
 *     refuse   504: only-if-cached (or a peer request) and nothing reusable is stored; `join` as above
 *
 * The same rules decide whether a request may join a fetch in flight: its response is handed to
 * the joiner only if the joiner could have been served it had it been stored (`mayJoin`).
 */
import type { PolicyOptions, RequestRules, ResponseRules } from './policy.js';
import {
  HEURISTICALLY_CACHEABLE,
  currentAge,
  requestRules,
  responseRules,
  staleWindows,
} from './policy.js';
import type { AgeFacts, HeaderRecord } from './policy.js';
import { varyMatches } from './vary.js';

/** What `decide` needs of a stored (or in-flight) response. */
export interface Candidate {
  status: number;
  headers: HeaderRecord;
  vary: readonly string[];
  varyValues: readonly (string | null)[];
  facts: AgeFacts;
}

export interface CacheRequest {
  method: string;
  /** Request header fields, lowercase names. */
  headers: HeaderRecord;
  /** Its cache directives (`requestRules(headers)`). */
  rules: RequestRules;
  /** A peer request (served only from this node's cache or in-flight fetches). */
  peer: boolean;
}

/** Cache-Status `fwd` values (RFC 9211 §2.2). */
export type Fwd = 'uri-miss' | 'vary-miss' | 'stale' | 'request' | 'method';

export type Decision<M extends Candidate = Candidate> =
  | {
      kind: 'hit';
      meta: M;
      rules: ResponseRules;
      age: number;
      /** Remaining freshness (s); negative when stale. */
      ttl: number;
      /** Serve now and revalidate in the background (stale-while-revalidate, RFC 5861 §3). */
      refresh: boolean;
    }
  | {
      kind: 'forward';
      fwd: Fwd;
      stale?: M;
      join: boolean;
      peers: boolean;
      register: boolean;
    }
  | { kind: 'refuse'; reason: string; join: boolean };

export function cacheRequest(method: string, headers: HeaderRecord, peer = false): CacheRequest {
  return { method, headers, rules: requestRules(headers), peer };
}

/** The Date of a response (ms), else the time it was received. */
function dateOf(c: Candidate): number {
  return c.facts.dateValue ?? c.facts.responseTime;
}

/**
 * The stored response to use (RFC 9111 §4.1): one whose Vary fields match the request; among
 * several, the most recent by Date (§4).
 */
export function selectVariant<M extends Candidate>(
  req: CacheRequest,
  variants: readonly M[],
): M | undefined {
  let best: M | undefined;
  for (const m of variants) {
    if (!varyMatches(m.vary, m.varyValues, req.headers)) continue;
    if (!best || dateOf(m) > dateOf(best)) best = m;
  }
  return best;
}

export function decide<M extends Candidate>(
  req: CacheRequest,
  variants: readonly M[],
  now: number,
  opts: PolicyOptions,
): Decision<M> {
  const q = req.rules;
  // §3.5: a response to a request with Authorization is not shared, whatever is stored.
  if (req.headers['authorization'] !== undefined && !req.peer) {
    return { kind: 'forward', fwd: 'request', join: false, peers: false, register: false };
  }
  const meta = selectVariant(req, variants);
  if (!meta) {
    if (req.peer) return { kind: 'refuse', reason: 'not held here', join: true };
    if (q.onlyIfCached) return { kind: 'refuse', reason: 'not cached', join: false };
    const fwd: Fwd = q.noCache ? 'request' : variants.length > 0 ? 'vary-miss' : 'uri-miss';
    if (req.method !== 'GET') {
      // A HEAD miss is forwarded as HEAD: it may share a GET in flight, never start one.
      return { kind: 'forward', fwd, join: !q.noCache, peers: false, register: false };
    }
    return {
      kind: 'forward',
      fwd,
      // §5.2.1.4: no-cache requires the origin; a response fetched for someone else is not that.
      join: !q.noCache,
      peers: !q.noStore && !q.noCache,
      register: !q.noStore,
    };
  }
  const r = responseRules(meta.status, meta.headers, opts, meta.facts.responseTime);
  const age = currentAge(meta.facts, now);
  const ttl = r.lifetime - age;
  const hit = (refresh: boolean): Decision<M> => ({
    kind: 'hit',
    meta,
    rules: r,
    age,
    ttl,
    refresh,
  });
  if (req.peer) {
    // A peer is served a fresh copy only; it applies its own client's directives itself.
    if (ttl > 0 && !r.noCache) return hit(false);
    return { kind: 'refuse', reason: 'not fresh here', join: true };
  }
  const ageOk = q.maxAge === undefined || age <= q.maxAge; // §5.2.1.1
  const fresh = ttl > 0 && ttl >= q.minFresh; // §4.2, §5.2.1.3
  // §4.2.4 / §5.2.1.2: stale only as far as the client allows, never under must-revalidate.
  const staleOk = q.maxStale > 0 && ttl <= 0 && !r.mustRevalidate && -ttl <= q.maxStale;
  // §5.2.2.4 / §5.2.1.4: no-cache on either side means validate first.
  const reusable = !r.noCache && !q.noCache;
  if (reusable && ageOk && (fresh || staleOk)) return hit(false);
  if (q.onlyIfCached) return { kind: 'refuse', reason: 'stale', join: false };
  // RFC 5861 §3: within stale-while-revalidate, serve now and refresh in the background.
  if (reusable && ageOk && ttl <= 0 && -ttl < r.whileRevalidate) return hit(true);
  return {
    kind: 'forward',
    fwd: q.noCache ? 'request' : 'stale',
    stale: meta,
    join: !q.noCache,
    peers: false,
    register: req.method === 'GET',
  };
}

/**
 * May a request that arrived while `c` was being fetched for another one be given `c`? Exactly
 * when `decide` would serve it from the cache had `c` been stored (RFC 9111 §4): same selecting
 * fields, fresh enough for this request, no no-cache on either side.
 */
export function mayJoin(
  req: CacheRequest,
  c: Candidate,
  now: number,
  opts: PolicyOptions,
): boolean {
  const d = decide(req, [c], now, opts);
  return d.kind === 'hit' && !d.refresh;
}

/**
 * May a request that was waiting for `c` — it joined the fetch before `c`'s head arrived — be
 * given it? Whatever `mayJoin` allows, and also a response whose only freshness is this cache's
 * own heuristic (RFC 9111 §4.2.2) and that is stale on arrival, such as a file modified moments
 * ago (10 % of a few seconds is 0 s): the origin said nothing against reuse, and the response was
 * produced while the request waited, as recent as a fetch of its own would get. Never a response
 * whose explicit freshness is spent (`max-age=0`, an Expires in the past: the origin asks for
 * validation), one with `no-cache`, nor to a `no-cache` or `min-fresh` request or one whose
 * `max-age` the response's age exceeds; the selecting fields must match (§4.1).
 */
export function mayShareWithWaiter(
  req: CacheRequest,
  c: Candidate,
  now: number,
  opts: PolicyOptions,
): boolean {
  if (mayJoin(req, c, now, opts)) return true;
  const q = req.rules;
  if (q.noCache || q.minFresh > 0 || !HEURISTICALLY_CACHEABLE.has(c.status)) return false;
  if (req.headers['authorization'] !== undefined && !req.peer) return false;
  if (!varyMatches(c.vary, c.varyValues, req.headers)) return false;
  const r = responseRules(c.status, c.headers, opts, c.facts.responseTime);
  if (r.explicit || r.noCache) return false;
  return q.maxAge === undefined || currentAge(c.facts, now) <= q.maxAge;
}

/**
 * May a stale stored response be served to `req` because the origin failed (RFC 9111 §4.2.4,
 * RFC 5861 §4)? Within the window the response, the client or the operator grants.
 */
export function staleOnErrorOk(
  req: CacheRequest | undefined,
  c: Candidate,
  now: number,
  opts: PolicyOptions,
): boolean {
  return staleOnError(req, c, now, opts) !== undefined;
}

/**
 * Why a stale stored response may be served because the origin failed: `stale-if-error` when the
 * response or the request allows it, `stale-on-error` when only the operator's
 * `staleOnErrorSeconds` does; undefined when it may not.
 */
export function staleOnError(
  req: CacheRequest | undefined,
  c: Candidate,
  now: number,
  opts: PolicyOptions,
): 'stale-if-error' | 'stale-on-error' | undefined {
  // §5.2.1.4: a no-cache request is never answered without the origin.
  if (req?.rules.noCache) return undefined;
  const r = responseRules(c.status, c.headers, opts, c.facts.responseTime);
  const staleness = currentAge(c.facts, now) - r.lifetime;
  const { granted, window } = staleWindows(r, req?.rules, opts);
  if (staleness < granted) return 'stale-if-error';
  if (staleness < window) return 'stale-on-error';
  return undefined;
}
