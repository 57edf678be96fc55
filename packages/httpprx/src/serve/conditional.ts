/**
 * Answering a client's conditional and range requests from a full 200 response, stored or in
 * flight (RFC 9110 §13, §14).
 */
import type { HeaderRecord } from '../cache/policy.js';
import { etagMatches, parseRange } from '../cache/policy.js';
import { parseHttpDate } from '../cache/http-date.js';

/** Fields a 304 carries from the 200 it stands for (RFC 9110 §15.4.5), plus ours. */
const NOT_MODIFIED_FIELDS = [
  'etag',
  'cache-control',
  'expires',
  'date',
  'vary',
  'content-location',
  'last-modified',
  'age',
  'via',
  'cache-status',
];

/**
 * Does the client's If-None-Match (weak comparison, §13.1.2) or, without it, If-Modified-Since
 * (§13.1.3: a valid HTTP-date, the representation not modified since) turn this 200 into a 304?
 */
export function notModified(req: HeaderRecord, res: HeaderRecord, now: number): boolean {
  const inm = req['if-none-match'];
  if (inm !== undefined) return etagMatches(inm, res['etag']);
  const ims = parseHttpDate(req['if-modified-since'], now);
  const lm = parseHttpDate(res['last-modified'], now);
  return ims !== undefined && lm !== undefined && lm <= ims;
}

/** The header fields of a 304 for a 200 with `headers`. */
export function notModifiedHeaders(headers: HeaderRecord): HeaderRecord {
  const h: HeaderRecord = {};
  for (const k of NOT_MODIFIED_FIELDS) if (headers[k] !== undefined) h[k] = headers[k]!;
  return h;
}

/**
 * Does If-Range (§13.1.5) allow a partial answer: a strong ETag equal to the representation's
 * strong ETag, or a date equal to its Last-Modified?
 */
export function ifRangeOk(ifRange: string | undefined, res: HeaderRecord, now: number): boolean {
  if (ifRange === undefined) return true;
  const etag = res['etag'];
  const v = ifRange.trim();
  if (v.startsWith('"') || v.startsWith('W/')) {
    return !!etag && !etag.startsWith('W/') && !v.startsWith('W/') && etag === v;
  }
  const date = parseHttpDate(v, now);
  const lm = parseHttpDate(res['last-modified'], now);
  return date !== undefined && lm !== undefined && date === lm;
}

export type RangeAnswer =
  { kind: 'full' } | { kind: 'partial'; start: number; end: number } | { kind: 'unsatisfiable' };

/** What to send for a request's Range against a 200 of `size` bytes (single ranges, §14.2). */
export function rangeFor(
  req: HeaderRecord,
  res: HeaderRecord,
  size: number,
  now: number,
): RangeAnswer {
  if (req['range'] === undefined || !ifRangeOk(req['if-range'], res, now)) return { kind: 'full' };
  const r = parseRange(req['range'], size);
  if (r === undefined) return { kind: 'full' };
  if (r === 'unsatisfiable') return { kind: 'unsatisfiable' };
  return { kind: 'partial', start: r.start, end: r.end };
}
