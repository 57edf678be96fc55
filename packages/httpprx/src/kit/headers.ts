/** Header plumbing shared by the miss, hit and peer paths. */
import type { IncomingHttpHeaders } from 'node:http';
import type { HeaderRecord } from '../cache/policy.js';

/** Hop-by-hop fields (RFC 9110 §7.6.1) plus the ones a cache must not pass on or keep. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

function connectionTokens(h: Record<string, unknown>): Set<string> {
  const c = h['connection'];
  const v = Array.isArray(c) ? c.join(',') : typeof c === 'string' ? c : '';
  return new Set(
    v
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean),
  );
}

/** Flatten Node/undici headers to a record, joining repeats; drops hop-by-hop fields and `drop`. */
export function toRecord(
  h: IncomingHttpHeaders | Record<string, string | string[] | undefined>,
  drop: ReadonlySet<string> = new Set(),
): HeaderRecord {
  const out: HeaderRecord = {};
  const conn = connectionTokens(h);
  for (const [k0, v] of Object.entries(h)) {
    if (v === undefined) continue;
    const k = k0.toLowerCase();
    if (HOP_BY_HOP.has(k) || conn.has(k) || drop.has(k)) continue;
    out[k] = Array.isArray(v) ? v.join(k === 'cookie' ? '; ' : ', ') : String(v);
  }
  return out;
}

/** Response fields never stored (and Age, which is recomputed on every use). */
export const NOT_STORED = new Set([
  'set-cookie',
  'age',
  'cache-status',
  'x-coral-sha256',
  // The origin's instruction to the fleet (../site-control/): acted on, never kept or passed on.
  'coral-control',
]);

/**
 * Request fields never forwarded upstream on site mode's other methods (../fetch/request-headers.ts
 * decides the rest): the cache's own conditionals and ranges, the fleet's fields, Via (ours is
 * appended), the framing ones.
 */
export const NOT_FORWARDED_COMMON = new Set([
  'host',
  'if-none-match',
  'if-modified-since',
  'if-match',
  'if-unmodified-since',
  'if-range',
  'range',
  'x-coral-peer',
  'x-coral-designated',
  'coral-peer-auth',
  // Fleet instructions come from origins' responses only; a client's is not passed on.
  'coral-control',
  'via',
  'content-length',
  'expect',
]);

/** Append our Via member to an existing Via value. */
export function appendVia(existing: string | undefined, token: string): string {
  return existing ? `${existing}, ${token}` : token;
}

/** Serialize a header record as a flat [name, value, ...] array for `writeHead`. */
export function flatten(h: HeaderRecord): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(h)) out.push(k, v);
  return out;
}

/** One RFC 9211 Cache-Status member for this cache. */
export function cacheStatus(name: string, params: Array<string | undefined>): string {
  const p = params.filter((x): x is string => x !== undefined && x !== '');
  return p.length ? `${name}; ${p.join('; ')}` : name;
}
