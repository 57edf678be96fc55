/**
 * Content codings (RFC 9110 §8.4, §12.5.3), pure: which stored responses Coral compresses, how a
 * request's Accept-Encoding is normalised before it takes part in the cache key or Vary, and which
 * coding a client is sent.
 *
 * The model (Varnish's, with Fastly's normalisation): a compressible response the origin sent
 * uncompressed is gzip-compressed once, when it is committed, and that one representation is
 * stored. It is marked by `CODED_FIELD` (`gzip; length=<identity bytes>; sha256=<identity hash>`),
 * a field kept in the store and passed to members but never to clients. Each hit is then served
 * the stored gzip bytes as they are, or decoded (identity), or re-encoded from them (br, zstd) for
 * a client that accepts those and not gzip.
 */
import type { HeaderRecord } from '../cache/policy.js';

/** The stored field marking a representation Coral compressed (never sent to clients). */
export const CODED_FIELD = 'coral-coded';

/** Bodies smaller than this are not compressed: the saving is below a packet (bytes). */
export const COMPRESS_MIN_BYTES = 1024;

/** Bodies larger than this are not compressed at commit (bytes; the body is read whole). */
export const COMPRESS_MAX_BYTES = 16 * 1024 * 1024;

/** The media types compressed (text/* is added to these; `+json` / `+xml` suffixes too). */
export const COMPRESSIBLE_TYPES: readonly string[] = [
  'application/javascript',
  'application/ecmascript',
  'application/json',
  'application/ld+json',
  'application/manifest+json',
  'application/xml',
  'application/xhtml+xml',
  'application/rss+xml',
  'application/atom+xml',
  'application/wasm',
  'application/x-javascript',
  'image/svg+xml',
  'image/x-icon',
  'image/vnd.microsoft.icon',
  'font/ttf',
  'font/otf',
  'application/vnd.ms-fontobject',
];

const TYPES = new Set(COMPRESSIBLE_TYPES);

/** The codings this proxy sends, in the order it prefers them at equal q (cheapest first). */
export type Coding = 'gzip' | 'zstd' | 'br' | 'identity';
const SERVED: readonly Coding[] = ['gzip', 'zstd', 'br'];

/** Is a response with this Content-Type one Coral compresses? */
export function compressibleType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const t = contentType.split(';', 1)[0]!.trim().toLowerCase();
  if (t.startsWith('text/') && t !== 'text/event-stream') return true;
  return TYPES.has(t) || t.endsWith('+json') || t.endsWith('+xml');
}

/**
 * Should this stored response be compressed at commit? A 200 of a compressible type, sent with
 * no content coding, without `Cache-Control: no-transform` (RFC 9110 §7.7), of a size in
 * [`COMPRESS_MIN_BYTES`, `COMPRESS_MAX_BYTES`].
 */
export function shouldCompress(status: number, headers: HeaderRecord, size: number): boolean {
  if (status !== 200 || size < COMPRESS_MIN_BYTES || size > COMPRESS_MAX_BYTES) return false;
  const ce = headers['content-encoding'];
  if (ce !== undefined && ce.trim().toLowerCase() !== 'identity') return false;
  if (headers[CODED_FIELD] !== undefined || headers['content-range'] !== undefined) return false;
  if (/(^|,)\s*no-transform\s*(,|$)/i.test(headers['cache-control'] ?? '')) return false;
  return compressibleType(headers['content-type']);
}

/** A stored representation Coral compressed: its coding and its identity form's size and hash. */
export interface Coded {
  coding: 'gzip';
  length: number;
  sha256: string;
}

export function codedValue(c: Coded): string {
  return `${c.coding}; length=${c.length}; sha256=${c.sha256}`;
}

/** The `CODED_FIELD` of stored headers, or undefined (absent or malformed: not ours). */
export function codedOf(headers: HeaderRecord): Coded | undefined {
  const v = headers[CODED_FIELD];
  if (v === undefined) return undefined;
  const m = /^gzip; length=(\d{1,15}); sha256=([0-9a-f]{64})$/.exec(v);
  if (!m || headers['content-encoding'] !== 'gzip') return undefined;
  return { coding: 'gzip', length: Number(m[1]), sha256: m[2]! };
}

/** Accept-Encoding as q-values per coding (lowercase); `*` kept as the key `*`. */
export function parseAcceptEncoding(value: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const part of value.split(',')) {
    const [name, ...params] = part.split(';');
    const coding = name!.trim().toLowerCase();
    if (coding === '') continue;
    let q = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*([0-9](?:\.[0-9]{0,3})?)\s*$/i.exec(p);
      if (m) q = Math.min(1, Number(m[1]));
    }
    // x-gzip is gzip (RFC 9110 §8.4.1.3).
    const key = coding === 'x-gzip' ? 'gzip' : coding;
    out.set(key, Math.max(out.get(key) ?? 0, q));
  }
  return out;
}

function qOf(accepted: Map<string, number>, c: Coding): number {
  const q = accepted.get(c);
  if (q !== undefined) return q;
  // identity is acceptable unless excluded, by name or by `*;q=0` (RFC 9110 §12.5.3).
  if (c === 'identity') return accepted.get('*') === 0 ? 0 : 1;
  return accepted.get('*') ?? 0;
}

/**
 * The normalised Accept-Encoding: the codings served here that the client accepts, most wanted
 * first (q, then this proxy's preference), a q-value kept only below 1, and `identity;q=0` when the
 * client refuses identity. Normalising again changes nothing. Every browser's header collapses to
 * a few values ("gzip, zstd, br", "gzip, br", "gzip"); an absent header stays absent, and a header
 * naming none of them becomes "identity".
 */
export function normalizeAcceptEncoding(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const accepted = parseAcceptEncoding(value);
  const codings = SERVED.filter((c) => qOf(accepted, c) > 0).sort(
    (a, b) => qOf(accepted, b) - qOf(accepted, a),
  );
  const noIdentity = qOf(accepted, 'identity') === 0;
  if (codings.length === 0) return noIdentity ? 'identity;q=0' : 'identity';
  const listed = codings.map((c) => {
    const q = qOf(accepted, c);
    return q < 1 ? `${c};q=${q}` : c;
  });
  return listed.join(', ') + (noIdentity ? ', identity;q=0' : '');
}

/**
 * The coding to send a client for a stored gzip representation: the one it wants most among those
 * served (gzip first at equal q: it costs nothing), identity for a client that sends no
 * Accept-Encoding (browsers always send one; curl without --compressed and most scripts do not,
 * and expect identity), and identity also when it accepts none of them (RFC 9110 §12.5.3: a
 * response without a content coding is then the usual answer).
 */
export function chooseCoding(acceptEncoding: string | undefined): Coding {
  if (acceptEncoding === undefined) return 'identity';
  const accepted = parseAcceptEncoding(acceptEncoding);
  let best: Coding = 'identity';
  let bestQ = qOf(accepted, 'identity');
  for (const c of SERVED) {
    const q = qOf(accepted, c);
    if (q > bestQ || (q > 0 && q === bestQ && best === 'identity')) {
      best = c;
      bestQ = q;
    }
  }
  return best;
}

/** An ETag for a coded form (RFC 9110 §8.8.3: a transformed representation's tag is weak). */
export function weakEtag(etag: string | undefined): string | undefined {
  if (etag === undefined || etag.startsWith('W/')) return etag;
  return `W/${etag}`;
}

/** Vary with Accept-Encoding added (once). */
export function varyWithEncoding(vary: string | undefined): string {
  if (vary === undefined || vary.trim() === '') return 'Accept-Encoding';
  if (vary.split(',').some((v) => ['accept-encoding', '*'].includes(v.trim().toLowerCase()))) {
    return vary;
  }
  return `${vary}, Accept-Encoding`;
}
