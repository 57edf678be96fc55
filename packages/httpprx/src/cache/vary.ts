/**
 * Secondary cache keys (RFC 9111 §4.1). A stored response with `Vary` matches a request only when
 * every selecting field it names matches the request that stored it, after the normalizations the
 * RFC allows and no others: whitespace where the field's syntax allows it, lines combined, and
 * case only for fields whose values are defined as case-insensitive. A field absent from one
 * request matches only a request where it is absent too (`null` here), never an empty value.
 */
import { createHash } from 'node:crypto';
import type { HeaderRecord } from './directives.js';

/**
 * List fields whose members are case-insensitive tokens (content-codings, charsets, language
 * ranges: RFC 9110 §8.4.1, §12.5.2, §12.5.4): OWS around commas dropped and case folded.
 */
const CASE_INSENSITIVE_LISTS = new Set(['accept-encoding', 'accept-charset', 'accept-language']);
/** Other list fields: OWS around commas dropped, case kept (media type parameters may be case-sensitive). */
const LISTS = new Set(['accept', 'te', 'cache-control', 'pragma', 'if-none-match', 'connection']);

/** Field names listed in Vary, lowercase, without repeats, sorted (order is not significant). */
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

/** The normalized value a request presents for one selecting field, or null when absent. */
export function selectingValue(name: string, reqHeaders: HeaderRecord): string | null {
  const raw = reqHeaders[name];
  if (raw === undefined) return null;
  // Leading and trailing whitespace is never part of a field value (RFC 9110 §5.5).
  let v = raw.replace(/^[ \t]+|[ \t]+$/g, '');
  if (CASE_INSENSITIVE_LISTS.has(name) || LISTS.has(name)) {
    v = v
      .split(',')
      .map((s) => s.replace(/^[ \t]+|[ \t]+$/g, ''))
      .filter((s) => s !== '')
      .join(',');
    if (CASE_INSENSITIVE_LISTS.has(name)) v = v.toLowerCase();
  }
  return v;
}

/** The request's values for `names` (the secondary key's parts). */
export function varyValues(names: readonly string[], reqHeaders: HeaderRecord): (string | null)[] {
  return names.map((n) => selectingValue(n, reqHeaders));
}

/** Does a request present the same selecting values as the one a response was stored with? */
export function varyMatches(
  names: readonly string[],
  stored: readonly (string | null)[],
  reqHeaders: HeaderRecord,
): boolean {
  for (let i = 0; i < names.length; i++) {
    if (selectingValue(names[i]!, reqHeaders) !== (stored[i] ?? null)) return false;
  }
  return true;
}

/** Bytes of the secondary key in a stored object's key (`VARIANT_BYTES`). */
export const SECONDARY_KEY_BYTES = 8;

/**
 * The secondary key of a variant as 8 bytes: zeros without Vary, else the first bytes of SHA-1
 * over the names and values (absent distinct from empty). A collision is harmless: the stored
 * values are compared in full before a variant is used.
 */
export function secondaryKey(
  names: readonly string[],
  values: readonly (string | null)[],
): Uint8Array {
  if (names.length === 0) return new Uint8Array(SECONDARY_KEY_BYTES);
  const h = createHash('sha1');
  for (let i = 0; i < names.length; i++) {
    const v = values[i] ?? null;
    h.update(names[i]!);
    h.update(v === null ? '\u0000\u0001' : '\u0000\u0002' + v);
    h.update('\u0000');
  }
  return new Uint8Array(h.digest().subarray(0, SECONDARY_KEY_BYTES));
}
