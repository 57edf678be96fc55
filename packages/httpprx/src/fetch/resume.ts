/**
 * Completing a member's copy from the origin (issue 31 item 3; Traffic Server's and download
 * managers' range recovery, which nginx's `proxy_next_upstream` cannot do once bytes are sent).
 *
 * A member's copy larger than `peerVerifyWholeBytes` is streamed to clients as it arrives. When it
 * stalls or is cut short after N bytes, those clients already hold N bytes; the rest may come
 * from the origin with `Range: bytes=N-` and `If-Range: <the member's validator>` (RFC 9110
 * §14.2, §13.1.5), which the origin answers 206 only when its current representation is the one
 * the validator names. The validator is the member's strong ETag, or (no ETag) its Last-Modified
 * when that is a strong validator (at least a second before its Date, §8.8.2.2) and the length is
 * known. The origin's 206 is taken only when it is that representation's rest: `Content-Range`
 * `bytes N-(L-1)/L` with L the member's length, the same strong ETag (or Last-Modified), the same
 * content coding. Anything else — a 200 (Range ignored), 412, another range, other validators —
 * is refused: the bytes of two versions are never spliced, and the clients see their transfer
 * end before its length (`streamResponse` fails it).
 *
 * The origin's part is the origin's; the first N bytes are vouched for by the member alone. The
 * caller (./response.ts, ./peer.ts) checks the assembled whole against the SHA-256 the member
 * announced: a match means the member was honest but failed; a mismatch proves a lie about the
 * bytes it sent (their own validators named the origin's rest), and the member is quarantined.
 */
import { parseHttpDate } from '../cache/http-date.js';
import type { HeaderRecord } from '../cache/policy.js';
import type { UpstreamResponse } from '../origin/upstream.js';
import type { ProxyCore, RequestCtx } from '../kit/core.js';
import { toRecord } from '../kit/headers.js';
import { discard } from './response.js';
import type { ResumeRefusal, Resumption } from './response.js';

/** What an origin range request continues: the member copy's validators and length. */
export interface ResumeBasis {
  /** The If-Range value: a strong ETag, or a Last-Modified date. */
  ifRange: string;
  etag: string | undefined;
  lastModified: string | undefined;
  /** Content-Encoding (undefined: identity). */
  encoding: string | undefined;
  /** The whole body's length when known (Content-Length, or the record's size). */
  length: number | undefined;
}

const strong = (etag: string | undefined): etag is string =>
  etag !== undefined && !etag.startsWith('W/') && /^"[^"]*"$/.test(etag);

/**
 * The validator a member's copy (its response fields `h`) can be resumed with, or undefined: a
 * strong ETag; else a Last-Modified at least one second before the Date, with a known length.
 */
export function resumeBasis(h: HeaderRecord, length: number | undefined): ResumeBasis | undefined {
  const etag = h['etag'];
  const lastModified = h['last-modified'];
  const base = { etag, lastModified, encoding: h['content-encoding'], length };
  if (strong(etag)) return { ifRange: etag, ...base };
  if (etag !== undefined || lastModified === undefined || length === undefined) return undefined;
  const modified = parseHttpDate(lastModified);
  const date = parseHttpDate(h['date']);
  if (modified === undefined || date === undefined || date - modified < 1000) return undefined;
  return { ifRange: lastModified, ...base };
}

/** `bytes first-last/complete` (RFC 9110 §14.4), or undefined. */
function contentRange(
  v: string | undefined,
): { first: number; last: number; complete: number } | undefined {
  const m =
    v === undefined ? null : /^bytes ([0-9]{1,15})-([0-9]{1,15})\/([0-9]{1,15})$/.exec(v.trim());
  if (!m) return undefined;
  return { first: Number(m[1]), last: Number(m[2]), complete: Number(m[3]) };
}

/** Is `res` (a 206) the rest of `basis`'s representation from byte `offset`? Why not, if not. */
function judgeRest(
  fields: HeaderRecord,
  basis: ResumeBasis,
  offset: number,
): { length: number } | { why: ResumeRefusal } {
  if (
    (fields['etag'] ?? null) !== (basis.etag ?? null) ||
    (fields['last-modified'] !== undefined && fields['last-modified'] !== basis.lastModified) ||
    (fields['content-encoding'] ?? 'identity') !== (basis.encoding ?? 'identity')
  ) {
    return { why: 'changed' };
  }
  const r = contentRange(fields['content-range']);
  if (
    !r ||
    r.first !== offset ||
    r.last !== r.complete - 1 ||
    (basis.length !== undefined && r.complete !== basis.length)
  ) {
    return { why: 'bad-range' };
  }
  const cl = fields['content-length'];
  if (cl !== undefined && cl !== String(r.complete - offset)) return { why: 'bad-range' };
  return { length: r.complete };
}

/**
 * Ask the origin for the rest of a member's copy of `ctx` from byte `offset`, with the fields
 * `forward` a fetch of `ctx` sends (../fetch/request-headers.ts), `Range` and `If-Range`.
 */
export async function resumeFromOrigin(
  core: ProxyCore,
  ctx: RequestCtx,
  forward: Record<string, string>,
  basis: ResumeBasis,
  offset: number,
): Promise<Resumption> {
  let res: UpstreamResponse;
  try {
    res = await core.origin.request({
      url: ctx.url,
      method: 'GET',
      headers: { ...forward, range: `bytes=${offset}-`, 'if-range': basis.ifRange },
    });
  } catch (e) {
    core.log.warn({ url: ctx.url, err: String(e) }, 'origin range request failed');
    return { ok: false, why: 'unreachable' };
  }
  const refuse = (why: ResumeRefusal): Resumption => {
    discard(res);
    return { ok: false, why, status: res.status };
  };
  if (res.status === 200) return refuse('ignored-range');
  if (res.status === 412) return refuse('changed');
  if (res.status !== 206) return refuse('status');
  const rest = judgeRest(toRecord(res.headers), basis, offset);
  if ('why' in rest) return refuse(rest.why);
  return { ok: true, body: res.body, length: rest.length, abandon: () => discard(res) };
}
