/**
 * Filters of the live log stream: which records a subscriber sees. Every part is optional; a
 * record passes when it passes every part given. Parsed once, from the query parameters of
 * `GET /v1/logs` (`parseFilter`), and checked per record without allocating.
 */
import { cidrContains, parseCidr, parseIp } from '@coral/runtime';
import type { Cidr } from '@coral/runtime';
import { ACCESSLOG_ERR_FILTER, AccessLogError } from '../errors.js';
import { CACHE_RESULTS } from '../record.js';
import type { AccessRecord, CacheResult } from '../record.js';

export interface LogFilter {
  /**
   * Host names (lower case): a record passes when its Host or its origin's host is one of them,
   * or a subdomain of one written with a leading dot (`.example.com`).
   */
  hosts?: readonly string[];
  /** Status classes 1..5 (`2xx` is 2). */
  statusClasses?: readonly number[];
  /** Cache results. */
  cache?: readonly CacheResult[];
  /** Client prefixes. */
  clients?: readonly Cidr[];
}

/** The raw filter as query parameters give it: each a comma-separated list. */
export interface FilterQuery {
  host?: string | undefined;
  status?: string | undefined;
  cache?: string | undefined;
  client?: string | undefined;
}

const HOST = /^\.?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?$/;

function list(v: string | undefined): string[] {
  if (v === undefined) return [];
  return v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function bad(message: string): AccessLogError {
  return new AccessLogError(ACCESSLOG_ERR_FILTER, message);
}

/**
 * Parse `q` (`host=a.example,.b.example&status=4xx,5xx&cache=miss&client=203.0.113.0/24`).
 * Throws `ACCESSLOG_ERR_FILTER` naming the first bad value.
 */
export function parseFilter(q: FilterQuery): LogFilter {
  const f: LogFilter = {};
  const hosts = list(q.host).map((h) => h.toLowerCase());
  for (const h of hosts) {
    if (h.length > 254 || !HOST.test(h)) throw bad(`host filter "${h}" is not a host name`);
  }
  if (hosts.length) f.hosts = hosts.map((h) => (h.endsWith('.') ? h.slice(0, -1) : h));
  const classes: number[] = [];
  for (const s of list(q.status)) {
    const m = /^([1-5])xx$/i.exec(s);
    if (!m) throw bad(`status filter "${s}" is not a status class (1xx..5xx)`);
    classes.push(Number(m[1]));
  }
  if (classes.length) f.statusClasses = classes;
  const cache: CacheResult[] = [];
  for (const s of list(q.cache)) {
    const c = s.toLowerCase() as CacheResult;
    if (!CACHE_RESULTS.includes(c)) {
      throw bad(`cache filter "${s}" is not one of ${CACHE_RESULTS.join(', ')}`);
    }
    cache.push(c);
  }
  if (cache.length) f.cache = cache;
  const clients = list(q.client).map((s) =>
    parseCidr(s, (message) => bad(`client filter: ${message}`)),
  );
  if (clients.length) f.clients = clients;
  return f;
}

/** The host of an absolute URL, lower case, without port or brackets ('' when there is none). */
function hostOf(url: string | undefined): string {
  if (url === undefined) return '';
  const start = url.indexOf('://');
  if (start < 0) return '';
  let end = start + 3;
  while (end < url.length && !'/?#'.includes(url[end]!)) end++;
  let host = url.slice(start + 3, end);
  const at = host.lastIndexOf('@');
  if (at >= 0) host = host.slice(at + 1);
  if (host.startsWith('[')) return host.slice(1, host.indexOf(']')).toLowerCase();
  const colon = host.lastIndexOf(':');
  return (colon >= 0 ? host.slice(0, colon) : host).toLowerCase();
}

function hostMatches(pattern: string, host: string): boolean {
  if (host === '') return false;
  if (pattern.startsWith('.')) return host.endsWith(pattern) || host === pattern.slice(1);
  return host === pattern;
}

/** Does `r` pass `f`? */
export function matches(f: LogFilter, r: AccessRecord): boolean {
  if (f.statusClasses && !f.statusClasses.includes(Math.floor(r.status / 100))) return false;
  if (f.cache && !f.cache.includes(r.cache.result)) return false;
  if (f.clients) {
    const ip = parseIp(r.client);
    if (!ip || !f.clients.some((c) => cidrContains(c, ip))) return false;
  }
  if (f.hosts) {
    const origin = hostOf(r.originUrl);
    if (!f.hosts.some((p) => hostMatches(p, r.host) || hostMatches(p, origin))) return false;
  }
  return true;
}
