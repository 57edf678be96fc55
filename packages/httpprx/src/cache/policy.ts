/**
 * RFC 9111 rules for a shared cache, as pure functions over header records (lowercase names,
 * repeated fields joined with ", "). Times are milliseconds of the injected clock; header dates are
 * HTTP-dates (RFC 9110 §5.6.7, ./http-date.ts). The directives come from the first targeted field
 * of RFC 9213 that is present and valid (`Coral-Cache-Control`, `CDN-Cache-Control`), else from
 * `Cache-Control` and `Expires` (./directives.ts).
 */
import { HEURISTIC_CAP_SECONDS, HEURISTIC_FRACTION, NEGATIVE_TTL_SECONDS } from '../constants.js';
import {
  DELTA_SECONDS_MAX,
  deltaSeconds,
  deltaSecondsOr0,
  parseCacheControl,
  responseDirectives,
} from './directives.js';
import type { HeaderRecord, ResponseDirectives } from './directives.js';
import { parseHttpDate } from './http-date.js';

export type { CacheControl, HeaderRecord } from './directives.js';
export { deltaSeconds, parseCacheControl } from './directives.js';

/** Statuses defined as heuristically cacheable (RFC 9110 §15.1). */
export const HEURISTICALLY_CACHEABLE: ReadonlySet<number> = new Set([
  200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501,
]);

/**
 * The negative answers among them: without explicit freshness they are kept for
 * `negativeTtlSeconds`, not by the Last-Modified heuristic.
 */
export const NEGATIVE_STATUSES: ReadonlySet<number> = new Set([404, 405, 410, 414, 501]);

/**
 * Final statuses whose caching requirements this cache understands (RFC 9111 §3, §5.2.2.3
 * must-understand): those RFC 9110 defines, less 206 (partial content is never stored here) and
 * 304 (it only ever freshens a stored response).
 */
export const UNDERSTOOD_STATUSES: ReadonlySet<number> = new Set([
  200, 201, 202, 203, 204, 205, 300, 301, 302, 303, 305, 307, 308, 400, 401, 402, 403, 404, 405,
  406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 421, 422, 426, 500, 501, 502, 503,
  504, 505,
]);

export interface PolicyOptions {
  /**
   * Freshness given to a heuristically cacheable response with no explicit expiry and no
   * Last-Modified (s); 0 = none.
   */
  defaultTtlSeconds: number;
  /** Cap on heuristic freshness from Last-Modified (s); default `HEURISTIC_CAP_SECONDS`. */
  heuristicMaxSeconds?: number;
  /**
   * Freshness of a negative answer (`NEGATIVE_STATUSES`) with no explicit freshness (s); 0 = not
   * kept. Default `NEGATIVE_TTL_SECONDS`.
   */
  negativeTtlSeconds?: number;
  /**
   * Serve a stale copy when the origin fails, for this long past expiry (s), to responses that
   * do not name a `stale-if-error` window of their own (RFC 9111 §4.2.4: a disconnected cache
   * may); 0 = only with the origin's or the client's permission.
   */
  staleOnErrorSeconds?: number;
}

/** What one response allows a shared cache to do, read once from its headers. */
export interface ResponseRules {
  /** The directives in force and the field they came from (RFC 9213 §2.2). */
  directives: ResponseDirectives;
  /** Freshness lifetime (s): explicit (§4.2.1), else heuristic (§4.2.2), else the default TTL. */
  lifetime: number;
  /** Whether `lifetime` came from explicit freshness information. */
  explicit: boolean;
  noStore: boolean;
  /** Unqualified `private`: no shared cache may store it. */
  private: boolean;
  /** `private="a, b"`: fields a shared cache must not store (§5.2.2.7). */
  privateFields: string[];
  /** Unqualified `no-cache`: reuse only after validation (§5.2.2.4). */
  noCache: boolean;
  /** `no-cache="a, b"`: fields that may not be reused without validation (stripped when stored). */
  noCacheFields: string[];
  public: boolean;
  /** must-revalidate, proxy-revalidate or s-maxage: never served stale (§5.2.2.2, .8, .10). */
  mustRevalidate: boolean;
  mustUnderstand: boolean;
  /** stale-while-revalidate window (s, RFC 5861 §3), 0 if none or forbidden. */
  whileRevalidate: number;
  /** stale-if-error window the response grants (s, RFC 5861 §4), undefined if it grants none. */
  ifError: number | undefined;
}

function fieldList(arg: string | true | undefined): string[] {
  if (typeof arg !== 'string') return [];
  return arg
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
}

/**
 * Explicit expiration (RFC 9111 §4.2.1, shared cache): s-maxage, then max-age, then Expires minus
 * Date (the time received when Date is absent). An invalid max-age/s-maxage, or an invalid
 * Expires ("0" included), means already stale (§4.2.1, §5.3). Targeted fields replace
 * Cache-Control and Expires (RFC 9213 §2.2).
 */
function explicitLifetime(
  h: HeaderRecord,
  d: ResponseDirectives,
  responseTime: number | undefined,
): number | undefined {
  for (const name of ['s-maxage', 'max-age']) {
    const v = deltaSeconds(d.cc, name);
    if (v === 'invalid') return 0;
    if (v !== undefined) return v;
  }
  if (d.targeted === undefined && h['expires'] !== undefined) {
    const exp = parseHttpDate(h['expires'], responseTime);
    if (exp === undefined) return 0;
    const date = parseHttpDate(h['date'], responseTime) ?? responseTime;
    if (date === undefined) return 0;
    return Math.min(DELTA_SECONDS_MAX, Math.max(0, Math.floor((exp - date) / 1000)));
  }
  return undefined;
}

/**
 * Heuristic freshness (§4.2.2) of a heuristically cacheable status: a negative answer gets the
 * negative TTL; any other a fraction of Date − Last-Modified, capped; else the default TTL.
 */
function heuristicLifetime(
  status: number,
  h: HeaderRecord,
  opts: PolicyOptions,
  responseTime: number | undefined,
): number {
  if (NEGATIVE_STATUSES.has(status))
    return Math.max(0, opts.negativeTtlSeconds ?? NEGATIVE_TTL_SECONDS);
  const lm = parseHttpDate(h['last-modified'], responseTime);
  if (lm !== undefined) {
    const date = parseHttpDate(h['date'], responseTime) ?? responseTime;
    if (date === undefined || lm > date) return 0;
    const cap = opts.heuristicMaxSeconds ?? HEURISTIC_CAP_SECONDS;
    return Math.max(0, Math.min(cap, Math.floor(((date - lm) / 1000) * HEURISTIC_FRACTION)));
  }
  return opts.defaultTtlSeconds > 0 ? opts.defaultTtlSeconds : 0;
}

/**
 * Read a response's caching rules. `responseTime` (ms) stands in for a missing Date (RFC 9110
 * §6.6.1); stored responses always carry a Date (the proxy adds one on receipt).
 */
export function responseRules(
  status: number,
  h: HeaderRecord,
  opts: PolicyOptions,
  responseTime?: number,
): ResponseRules {
  const d = responseDirectives(h);
  const cc = d.cc;
  const explicit = explicitLifetime(h, d, responseTime);
  // Heuristics only for statuses defined as heuristically cacheable (RFC 9110 §15.1).
  const lifetime =
    explicit ??
    (HEURISTICALLY_CACHEABLE.has(status) ? heuristicLifetime(status, h, opts, responseTime) : 0);
  const noCacheArg = cc.get('no-cache');
  const privateArg = cc.get('private');
  const mustRevalidate =
    cc.has('must-revalidate') || cc.has('proxy-revalidate') || cc.has('s-maxage');
  const noCache = noCacheArg === true;
  const sie = deltaSeconds(cc, 'stale-if-error');
  return {
    directives: d,
    lifetime,
    explicit: explicit !== undefined,
    noStore: cc.has('no-store'),
    private: privateArg === true,
    privateFields: fieldList(privateArg),
    noCache,
    noCacheFields: fieldList(noCacheArg),
    public: cc.has('public'),
    mustRevalidate,
    mustUnderstand: cc.has('must-understand'),
    whileRevalidate: mustRevalidate || noCache ? 0 : deltaSecondsOr0(cc, 'stale-while-revalidate'),
    ifError: typeof sie === 'number' ? sie : undefined,
  };
}

/** RFC 9111 §4.2.1 (shared cache), §4.2.2 heuristics and the optional default TTL (seconds). */
export function freshnessLifetime(
  status: number,
  h: HeaderRecord,
  opts: PolicyOptions,
  responseTime?: number,
): number {
  return responseRules(status, h, opts, responseTime).lifetime;
}

export interface StoreDecision {
  store: boolean;
  /** Why not, for logs and Cache-Status detail. */
  reason?: string;
}

/** RFC 9111 §3: may a shared cache store this response to a GET? */
export function storable(
  reqHeaders: HeaderRecord,
  status: number,
  resHeaders: HeaderRecord,
  opts: PolicyOptions,
  responseTime?: number,
): StoreDecision {
  // §3: a final status; 206 and 304 (and anything under must-understand) only if understood.
  if (status < 200 || status === 206 || status === 304) return { store: false, reason: 'status' };
  const r = responseRules(status, resHeaders, opts, responseTime);
  const cc = r.directives.cc;
  const reqCc = parseCacheControl(reqHeaders['cache-control']);
  if (reqCc.has('no-store')) return { store: false, reason: 'no-store' };
  if (r.mustUnderstand) {
    // §5.2.2.3: must-understand overrides no-store when the status is understood.
    if (!UNDERSTOOD_STATUSES.has(status)) return { store: false, reason: 'must-understand' };
  } else if (r.noStore) return { store: false, reason: 'no-store' };
  if (r.private) return { store: false, reason: 'private' };
  if (reqHeaders['authorization'] !== undefined) {
    // §3.5: only when the response explicitly allows it.
    if (!cc.has('must-revalidate') && !r.public && !cc.has('s-maxage')) {
      return { store: false, reason: 'authorization' };
    }
  }
  if ((resHeaders['vary'] ?? '').split(',').some((v) => v.trim() === '*')) {
    return { store: false, reason: 'vary-star' };
  }
  // §3: explicit freshness, public, or a heuristically cacheable status. Expires counts only while
  // no targeted field is in force (RFC 9213 §2.2).
  const allowed =
    r.explicit ||
    r.public ||
    (r.directives.targeted === undefined && resHeaders['expires'] !== undefined) ||
    HEURISTICALLY_CACHEABLE.has(status);
  if (!allowed) return { store: false, reason: 'status' };
  // Worth keeping only if it can ever be reused: fresh for a while, or revalidatable.
  const validator = resHeaders['etag'] !== undefined || resHeaders['last-modified'] !== undefined;
  if (r.lifetime <= 0 && !validator) return { store: false, reason: 'no-freshness' };
  return { store: true };
}

/** The timing facts needed for §4.2.3, captured when a response arrives. */
export interface AgeFacts {
  /** Clock time the request that produced the stored response was sent (ms). */
  requestTime: number;
  /** Clock time its response headers arrived (ms). */
  responseTime: number;
  /** `Age` header of the response (s), 0 if absent or invalid. */
  ageValue: number;
  /** `Date` header of the response (ms since epoch), or undefined. */
  dateValue: number | undefined;
}

/**
 * The Age field (RFC 9111 §5.1): `delta-seconds`; with a list, the first member; anything else
 * (`7200.0`, `-3`, `abc`) is ignored (0). Values past 2^31 are 2^31.
 */
export function parseAge(value: string | undefined): number {
  if (value === undefined) return 0;
  const comma = value.indexOf(',');
  const first = (comma === -1 ? value : value.slice(0, comma)).trim();
  if (!/^[0-9]+$/.test(first)) return 0;
  return Math.min(Number(first), DELTA_SECONDS_MAX);
}

export function ageFacts(h: HeaderRecord, requestTime: number, responseTime: number): AgeFacts {
  return {
    requestTime,
    responseTime,
    ageValue: parseAge(h['age']),
    dateValue: parseHttpDate(h['date'], responseTime),
  };
}

/** Current age in seconds (RFC 9111 §4.2.3). */
export function currentAge(f: AgeFacts, now: number): number {
  const apparent = f.dateValue === undefined ? 0 : Math.max(0, f.responseTime - f.dateValue);
  const correctedAge = f.ageValue * 1000 + (f.responseTime - f.requestTime);
  const initial = Math.max(apparent, correctedAge);
  return Math.min(
    DELTA_SECONDS_MAX,
    Math.max(0, Math.floor((initial + (now - f.responseTime)) / 1000)),
  );
}

/** The request's own cache directives (RFC 9111 §5.2.1). */
export interface RequestRules {
  noCache: boolean;
  noStore: boolean;
  onlyIfCached: boolean;
  maxAge: number | undefined;
  minFresh: number;
  /** max-stale: seconds of staleness the client accepts (Infinity for a bare max-stale). */
  maxStale: number;
  /** stale-if-error the client grants (RFC 5861 §4), 0 if none. */
  staleIfError: number;
}

export function requestRules(h: HeaderRecord): RequestRules {
  const cc = parseCacheControl(h['cache-control']);
  const ms = cc.get('max-stale');
  const maxAge = deltaSeconds(cc, 'max-age');
  const maxStale = deltaSeconds(cc, 'max-stale');
  return {
    // §5.4: Pragma: no-cache counts only when there is no Cache-Control.
    noCache:
      cc.has('no-cache') ||
      (!h['cache-control'] && /(^|,)\s*no-cache\s*(,|$)/i.test(h['pragma'] ?? '')),
    noStore: cc.has('no-store'),
    onlyIfCached: cc.has('only-if-cached'),
    // An invalid max-age asks for nothing older than 0 s (the safe reading).
    maxAge: maxAge === 'invalid' ? 0 : maxAge,
    minFresh: deltaSecondsOr0(cc, 'min-fresh'),
    maxStale: ms === true ? Infinity : typeof maxStale === 'number' ? maxStale : 0,
    staleIfError: deltaSecondsOr0(cc, 'stale-if-error'),
  };
}

/**
 * How long past expiry a stored response may be served when the origin fails (RFC 9111 §4.2.4):
 * never under must-revalidate / proxy-revalidate / s-maxage / no-cache; otherwise the largest
 * window granted by the response's stale-if-error (else the operator's `staleOnErrorSeconds`:
 * the response's own window takes precedence), the request's stale-if-error or max-stale
 * (RFC 5861 §4, RFC 9111 §5.2.1.2). 0 = not at all.
 */
export function staleIfErrorWindow(
  r: ResponseRules,
  req: RequestRules | undefined,
  opts: PolicyOptions,
): number {
  return staleWindows(r, req, opts).window;
}

/**
 * The windows behind `staleIfErrorWindow`: `granted`, what the response (its stale-if-error) or
 * the request (stale-if-error, max-stale) allows; `window`, that or the operator's default.
 */
export function staleWindows(
  r: ResponseRules,
  req: RequestRules | undefined,
  opts: PolicyOptions,
): { granted: number; window: number } {
  if (r.mustRevalidate || r.noCache) return { granted: 0, window: 0 };
  const granted = Math.max(r.ifError ?? 0, req?.staleIfError ?? 0, req?.maxStale ?? 0);
  const operator = r.ifError === undefined ? (opts.staleOnErrorSeconds ?? 0) : 0;
  return { granted, window: Math.max(granted, operator) };
}

/** Does `If-None-Match` (weak comparison, RFC 9110 §13.1.2) match the stored ETag? */
export function etagMatches(ifNoneMatch: string, etag: string | undefined): boolean {
  if (ifNoneMatch.trim() === '*') return etag !== undefined;
  if (!etag) return false;
  const strip = (t: string) => t.trim().replace(/^W\//, '');
  const want = strip(etag);
  return ifNoneMatch.split(',').some((t) => strip(t) === want);
}

/** Headers a 304 must not overwrite in the stored response (RFC 9111 §3.2). */
const NOT_UPDATED = new Set([
  'content-length',
  'content-encoding',
  'transfer-encoding',
  'content-range',
]);

/** Stored headers updated from a 304 (RFC 9111 §3.2, §4.3.4). */
export function mergeNotModified(stored: HeaderRecord, notModified: HeaderRecord): HeaderRecord {
  const out: HeaderRecord = { ...stored };
  for (const [k, v] of Object.entries(notModified)) {
    if (!NOT_UPDATED.has(k)) out[k] = v;
  }
  return out;
}

/**
 * A single byte range of a `size`-byte body (RFC 9110 §14.1.2). `undefined` means "serve the
 * whole body" (no Range, not bytes, or several ranges); `'unsatisfiable'` means 416.
 */
export function parseRange(
  value: string | undefined,
  size: number,
): { start: number; end: number } | 'unsatisfiable' | undefined {
  if (!value) return undefined;
  const m = /^\s*bytes\s*=\s*([0-9]*)\s*-\s*([0-9]*)\s*$/i.exec(value);
  if (!m) return undefined;
  const [, a = '', b = ''] = m; // both groups always take part (possibly empty)
  if (a === '' && b === '') return undefined;
  if (a === '') {
    const n = Number(b);
    if (n === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(a);
  if (start >= size) return 'unsatisfiable';
  const end = b === '' ? size - 1 : Math.min(Number(b), size - 1);
  if (end < start) return undefined;
  return { start, end };
}
