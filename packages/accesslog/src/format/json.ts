/**
 * The `json` format: one JSON object per line. Its first field, `"log":"access"`, tells an access
 * line apart from the node's own pino lines on the same stdout (those carry `level` and `msg`,
 * never `log`). `time` is ISO 8601 (UTC, milliseconds); absent facts are left out, never `null`.
 */
import type { AccessRecord } from '../record.js';

/** The value of the field that marks an access line. */
export const ACCESS_LOG_MARK = 'access';

/** The JSON of a record's cache facts, made once per (shared, frozen) facts object. */
const factsJson = new WeakMap<object, string>();

function cacheJson(c: AccessRecord['cache']): string {
  let j = factsJson.get(c);
  if (j === undefined) {
    j = JSON.stringify(c);
    if (Object.isFrozen(c)) factsJson.set(c, j);
  }
  return j;
}

/** Characters JSON must escape (and lone surrogates, which JSON.stringify writes as \u escapes). */
// eslint-disable-next-line no-control-regex -- the control characters are what JSON escapes
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;
const str = (s: string) => (NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`);

/** `toISOString` of the last second seen, up to its milliseconds (`2026-12-04T18:05:09.`). */
let isoSecond = NaN;
let isoPrefix = '';

/** ISO 8601 in UTC with milliseconds, the date formatted once per second. */
export function isoTime(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== isoSecond) {
    isoSecond = second;
    isoPrefix = new Date(second * 1000).toISOString().slice(0, 20);
  }
  const frac = ms - second * 1000;
  return `${isoPrefix}${frac < 10 ? '00' : frac < 100 ? '0' : ''}${Math.floor(frac)}Z`;
}

/** One access line in the `json` format, newline included. */
export function formatJson(r: AccessRecord): string {
  // Built as text in a fixed order (so lines diff and grep the same way every time), each string
  // escaped by JSON.stringify: a third of the cost of stringifying an object built for it.
  let o = `{"log":"${ACCESS_LOG_MARK}","time":"${isoTime(r.time)}","client":${str(r.client)}`;
  if (r.clientPort !== undefined) o += `,"clientPort":${r.clientPort}`;
  o += `,"method":${str(r.method)},"host":${str(r.host)},"url":${str(r.url)}`;
  if (r.originUrl !== undefined) o += `,"originUrl":${str(r.originUrl)}`;
  o += `,"protocol":${str(r.protocol)},"status":${r.status},"bytes":${r.bytes}`;
  o += `,"cache":${cacheJson(r.cache)},"served":`;
  o +=
    r.served.peer === undefined
      ? `{"from":"${r.served.from}"}`
      : `{"from":"${r.served.from}","peer":${str(r.served.peer)}}`;
  if (r.upstreamMs !== undefined) o += `,"upstreamMs":${r.upstreamMs}`;
  if (r.ttfbMs !== undefined) o += `,"ttfbMs":${r.ttfbMs}`;
  o += `,"totalMs":${r.totalMs}`;
  if (r.tls !== undefined) o += `,"tls":${str(r.tls)}`;
  o += `,"requestId":${str(r.requestId)},"aborted":${r.aborted}`;
  if (r.referer !== undefined) o += `,"referer":${str(r.referer)}`;
  if (r.userAgent !== undefined) o += `,"userAgent":${str(r.userAgent)}`;
  return o + '}\n';
}

/**
 * The record of a `json` access line (the inverse of `formatJson`, for tools reading the log or
 * the live stream: `coral-node logs --format combined`); undefined for a line that is not one.
 */
export function parseJsonLine(line: string): AccessRecord | undefined {
  let o: unknown;
  try {
    o = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof o !== 'object' || o === null) return undefined;
  const { log, time, ...rest } = o as Record<string, unknown>;
  if (log !== ACCESS_LOG_MARK || typeof time !== 'string') return undefined;
  const ms = Date.parse(time);
  if (!Number.isFinite(ms)) return undefined;
  const r = rest as Partial<AccessRecord>;
  if (typeof r.status !== 'number' || typeof r.url !== 'string' || typeof r.cache !== 'object') {
    return undefined;
  }
  return { ...r, time: ms } as AccessRecord;
}
