/**
 * RFC 9111 rules for a shared cache, as pure functions over header records (lowercase names,
 * repeated fields joined with ", "). Times are milliseconds of the injected clock; header dates are
 * converted with `Date.parse`.
 */
import { HEURISTIC_CAP_SECONDS, HEURISTIC_FRACTION, STALE_ON_ERROR_SECONDS } from '../constants.js';

export type HeaderRecord = Record<string, string>;

/** Parsed Cache-Control: directive → argument (`true` when it has none). Names lowercase. */
export type CacheControl = Map<string, string | true>;

export function parseCacheControl(value: string | undefined): CacheControl {
  const cc: CacheControl = new Map();
  if (!value) return cc;
  // Split on commas outside quotes.
  const parts = value.match(/(?:[^,"]+|"[^"]*")+/g) ?? [];
  for (const part of parts) {
    const eq = part.indexOf('=');
    const name = (eq === -1 ? part : part.slice(0, eq)).trim().toLowerCase();
    if (!name) continue;
    let arg: string | true = true;
    if (eq !== -1) {
      arg = part.slice(eq + 1).trim();
      if (arg.startsWith('"') && arg.endsWith('"') && arg.length >= 2) arg = arg.slice(1, -1);
    }
    // RFC 9111 §4.2.1: with duplicates, the first wins (and a conflicting duplicate makes it stale).
    if (!cc.has(name)) cc.set(name, arg);
  }
  return cc;
}

/** A delta-seconds argument, or undefined when absent or malformed. */
export function deltaSeconds(cc: CacheControl, name: string): number | undefined {
  const v = cc.get(name);
  if (typeof v !== 'string' || !/^[0-9]+$/.test(v)) return undefined;
  return Math.min(Number(v), 2 ** 31);
}

function httpDate(v: string | undefined): number | undefined {
  if (!v) return undefined;
  const t = Date.parse(v);
  return Number.isFinite(t) ? t : undefined;
}

/** Statuses a cache may store with heuristic freshness (RFC 9110 §15.1). */
export const HEURISTICALLY_CACHEABLE = new Set([
  200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501,
]);
/** Statuses this cache stores at all (with explicit freshness for the ones not in the set above). */
const STORABLE_STATUS = new Set([...HEURISTICALLY_CACHEABLE, 302, 303, 307, 400, 403]);

export interface StoreDecision {
  store: boolean;
  /** Why not, for logs and Cache-Status detail. */
  reason?: string;
}

export interface PolicyOptions {
  /** Freshness for responses with neither explicit expiry nor Last-Modified (seconds), 0 = none. */
  defaultTtlSeconds: number;
}

/** RFC 9111 §3: may a shared cache store this response to a GET? */
export function storable(
  reqHeaders: HeaderRecord,
  status: number,
  resHeaders: HeaderRecord,
  opts: PolicyOptions,
): StoreDecision {
  if (!STORABLE_STATUS.has(status)) return { store: false, reason: 'status' };
  const reqCc = parseCacheControl(reqHeaders['cache-control']);
  const cc = parseCacheControl(resHeaders['cache-control']);
  if (reqCc.has('no-store') || cc.has('no-store')) return { store: false, reason: 'no-store' };
  if (cc.has('private')) return { store: false, reason: 'private' };
  if (reqHeaders['authorization'] !== undefined) {
    // §3.5: only when the response explicitly allows it.
    if (!cc.has('must-revalidate') && !cc.has('public') && !cc.has('s-maxage')) {
      return { store: false, reason: 'authorization' };
    }
  }
  if ((resHeaders['vary'] ?? '').split(',').some((v) => v.trim() === '*')) {
    return { store: false, reason: 'vary-star' };
  }
  const explicit = explicitLifetime(resHeaders, cc) !== undefined;
  if (!explicit && !HEURISTICALLY_CACHEABLE.has(status) && !cc.has('public')) {
    return { store: false, reason: 'status' };
  }
  const validator = resHeaders['etag'] !== undefined || resHeaders['last-modified'] !== undefined;
  const lifetime = freshnessLifetime(status, resHeaders, opts);
  if (lifetime <= 0 && !validator) return { store: false, reason: 'no-freshness' };
  return { store: true };
}

function explicitLifetime(h: HeaderRecord, cc: CacheControl): number | undefined {
  const s = deltaSeconds(cc, 's-maxage');
  if (s !== undefined) return s;
  const m = deltaSeconds(cc, 'max-age');
  if (m !== undefined) return m;
  if (h['expires'] !== undefined) {
    const exp = httpDate(h['expires']);
    // An invalid Expires (e.g. "0") means already expired.
    if (exp === undefined) return 0;
    const date = httpDate(h['date']);
    if (date === undefined) return undefined;
    return Math.max(0, Math.floor((exp - date) / 1000));
  }
  return undefined;
}

/** RFC 9111 §4.2.1 for a shared cache, plus §4.2.2 heuristics and the optional default TTL (seconds). */
export function freshnessLifetime(status: number, h: HeaderRecord, opts: PolicyOptions): number {
  const cc = parseCacheControl(h['cache-control']);
  const explicit = explicitLifetime(h, cc);
  if (explicit !== undefined) return explicit;
  if (!HEURISTICALLY_CACHEABLE.has(status) && !cc.has('public')) return 0;
  const lm = httpDate(h['last-modified']);
  const date = httpDate(h['date']);
  if (lm !== undefined && date !== undefined && lm <= date) {
    return Math.min(HEURISTIC_CAP_SECONDS, Math.floor(((date - lm) / 1000) * HEURISTIC_FRACTION));
  }
  if (lm !== undefined) return 0;
  return opts.defaultTtlSeconds > 0 ? opts.defaultTtlSeconds : 0;
}

/** The timing facts needed for §4.2.3, captured when a response arrives. */
export interface AgeFacts {
  /** Clock time the request that produced the stored response was sent (ms). */
  requestTime: number;
  /** Clock time its response headers arrived (ms). */
  responseTime: number;
  /** `Age` header of the response (s), 0 if absent. */
  ageValue: number;
  /** `Date` header of the response (ms since epoch), or undefined. */
  dateValue: number | undefined;
}

export function ageFacts(h: HeaderRecord, requestTime: number, responseTime: number): AgeFacts {
  const age = Number(h['age']);
  return {
    requestTime,
    responseTime,
    ageValue: Number.isFinite(age) && age >= 0 ? Math.floor(age) : 0,
    dateValue: httpDate(h['date']),
  };
}

/** Current age in seconds (RFC 9111 §4.2.3). */
export function currentAge(f: AgeFacts, now: number): number {
  const apparent = f.dateValue === undefined ? 0 : Math.max(0, f.responseTime - f.dateValue);
  const correctedAge = f.ageValue * 1000 + (f.responseTime - f.requestTime);
  const initial = Math.max(apparent, correctedAge);
  return Math.max(0, Math.floor((initial + (now - f.responseTime)) / 1000));
}

/** What a stored response allows once it is stale. */
export interface StaleRules {
  /** must-revalidate / proxy-revalidate / s-maxage: never serve stale without validation. */
  mustRevalidate: boolean;
  /** no-cache on the response: validate on every use. */
  noCache: boolean;
  /** stale-while-revalidate window (s), 0 if none. */
  whileRevalidate: number;
  /** How long past expiry a stale copy may be served when the origin fails (s). */
  ifError: number;
}

export function staleRules(h: HeaderRecord): StaleRules {
  const cc = parseCacheControl(h['cache-control']);
  const mustRevalidate =
    cc.has('must-revalidate') || cc.has('proxy-revalidate') || cc.has('s-maxage');
  const sie = deltaSeconds(cc, 'stale-if-error');
  return {
    mustRevalidate,
    noCache: cc.has('no-cache'),
    whileRevalidate: mustRevalidate ? 0 : (deltaSeconds(cc, 'stale-while-revalidate') ?? 0),
    ifError: mustRevalidate || cc.has('no-cache') ? 0 : (sie ?? STALE_ON_ERROR_SECONDS),
  };
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
}

export function requestRules(h: HeaderRecord): RequestRules {
  const cc = parseCacheControl(h['cache-control']);
  const ms = cc.get('max-stale');
  return {
    noCache: cc.has('no-cache') || (!h['cache-control'] && /no-cache/i.test(h['pragma'] ?? '')),
    noStore: cc.has('no-store'),
    onlyIfCached: cc.has('only-if-cached'),
    maxAge: deltaSeconds(cc, 'max-age'),
    minFresh: deltaSeconds(cc, 'min-fresh') ?? 0,
    maxStale: ms === true ? Infinity : (deltaSeconds(cc, 'max-stale') ?? 0),
  };
}

/** Normalized values of the request fields a response varies on (secondary key, §4.1). */
export function varyValues(varyNames: readonly string[], reqHeaders: HeaderRecord): string[] {
  return varyNames.map((n) => (reqHeaders[n] ?? '').replace(/\s+/g, ' ').trim().toLowerCase());
}

/** Field names listed in Vary, lowercase and sorted. */
export function varyNames(resHeaders: HeaderRecord): string[] {
  const v = resHeaders['vary'];
  if (!v) return [];
  return [
    ...new Set(
      v
        .split(',')
        .map((s) => s.trim().toLowerCase())
        .filter(Boolean),
    ),
  ].sort();
}

/** Does `If-None-Match` (weak comparison) match the stored ETag? */
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

/** Stored headers updated from a 304 (RFC 9111 §4.3.4). */
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
  const [, a, b] = m as unknown as [string, string, string];
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
