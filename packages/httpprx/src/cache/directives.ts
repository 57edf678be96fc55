/**
 * Cache directives: the `Cache-Control` field (RFC 9111 §5.2) and the targeted fields of RFC 9213
 * (`Coral-Cache-Control`, which targets this CDN alone, then `CDN-Cache-Control`).
 *
 * Both parse to one `CacheControl` map: directive name (lowercase) → argument, or `true` when the
 * directive has none. `delta-seconds` arguments are read with `deltaSeconds`.
 */
import { Token, parseDictionary } from 'structured-headers';
import type { BareItem } from 'structured-headers';
import { TARGETED_FIELDS } from '../constants.js';

export type HeaderRecord = Record<string, string>;

/** Parsed cache directives: name (lowercase) → argument (`true` when it has none). */
export type CacheControl = Map<string, string | true>;

const TCHAR = /[!#$%&'*+\-.^_`|~0-9A-Za-z]/;

/**
 * `Cache-Control = #cache-directive`, `cache-directive = token [ "=" ( token / quoted-string ) ]`
 * (RFC 9111 §5.2). Names compare case-insensitively; both argument forms are accepted whatever a
 * directive's preferred form (§5.2); with a repeated directive the first occurrence wins (§4.2.1).
 * A member that does not parse is skipped up to the next comma, so one bad directive does not hide
 * the others.
 */
export function parseCacheControl(value: string | undefined): CacheControl {
  const cc: CacheControl = new Map();
  if (!value) return cc;
  const n = value.length;
  let i = 0;
  const skipOws = () => {
    while (i < n && (value[i] === ' ' || value[i] === '\t')) i++;
  };
  const skipMember = () => {
    // Skip to the next comma outside a quoted-string.
    let quoted = false;
    while (i < n) {
      const c = value[i]!;
      if (quoted) {
        if (c === '\\') i++;
        else if (c === '"') quoted = false;
      } else if (c === '"') quoted = true;
      else if (c === ',') return;
      i++;
    }
  };
  while (i < n) {
    skipOws();
    if (value[i] === ',') {
      i++;
      continue;
    }
    const start = i;
    while (i < n && TCHAR.test(value[i]!)) i++;
    const name = value.slice(start, i).toLowerCase();
    if (!name) {
      skipMember();
      continue;
    }
    skipOws();
    let arg: string | true = true;
    let ok = true;
    if (value[i] === '=') {
      i++;
      skipOws();
      if (value[i] === '"') {
        i++;
        let s = '';
        let closed = false;
        while (i < n) {
          const c = value[i]!;
          if (c === '\\' && i + 1 < n) {
            s += value[i + 1];
            i += 2;
            continue;
          }
          if (c === '"') {
            closed = true;
            i++;
            break;
          }
          s += c;
          i++;
        }
        ok = closed;
        arg = s;
      } else {
        const a = i;
        while (i < n && TCHAR.test(value[i]!)) i++;
        arg = value.slice(a, i);
        ok = arg.length > 0;
      }
      skipOws();
    }
    if (i < n && value[i] !== ',') ok = false;
    if (!ok) {
      skipMember();
      continue;
    }
    if (!cc.has(name)) cc.set(name, arg);
  }
  return cc;
}

/** RFC 9111 §1.2.2: values past 2^31 are taken as 2^31. */
export const DELTA_SECONDS_MAX = 2 ** 31;

/**
 * A `delta-seconds` argument (`1*DIGIT`): its value, `'invalid'` when the directive is present
 * with anything else (RFC 9111 §4.2.1 encourages treating such a response as stale), or undefined
 * when the directive is absent.
 */
export function deltaSeconds(cc: CacheControl, name: string): number | 'invalid' | undefined {
  const v = cc.get(name);
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !/^[0-9]+$/.test(v)) return 'invalid';
  return Math.min(Number(v), DELTA_SECONDS_MAX);
}

/** `deltaSeconds`, with an invalid argument read as absent (for windows such as stale-if-error). */
export function deltaSecondsOr0(cc: CacheControl, name: string): number {
  const v = deltaSeconds(cc, name);
  return typeof v === 'number' ? v : 0;
}

function bareToArg(v: BareItem): string | true | undefined {
  if (v === true) return true;
  if (v === false) return undefined;
  if (typeof v === 'number') {
    // Integer → its digits; a Decimal violates every delta-seconds directive (RFC 9213 §2.1: do
    // not consume such values), so it becomes an argument no delta-seconds reader accepts.
    return Number.isInteger(v) ? String(v) : `${v}.decimal`;
  }
  if (typeof v === 'string') return v;
  if (v instanceof Token) return v.toString();
  return undefined;
}

/**
 * A targeted field value (RFC 9213 §2.1): a Structured Fields Dictionary (RFC 8941 §3.2). Empty
 * or unparsable → undefined (the field is ignored). Parameters are ignored; inner lists are not
 * cache directives and are skipped.
 */
export function parseTargeted(value: string | undefined): CacheControl | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  let dict: ReturnType<typeof parseDictionary>;
  try {
    dict = parseDictionary(value);
  } catch {
    return undefined;
  }
  if (dict.size === 0) return undefined;
  const cc: CacheControl = new Map();
  for (const [name, member] of dict) {
    const item = member[0];
    if (Array.isArray(item)) continue; // inner list
    const arg = bareToArg(item);
    if (arg !== undefined) cc.set(name, arg);
  }
  return cc;
}

/** The directives that govern a stored response for this cache, and where they came from. */
export interface ResponseDirectives {
  cc: CacheControl;
  /**
   * The targeted field in force (RFC 9213 §2.2), if any: then `Cache-Control` and `Expires` are
   * ignored for this response.
   */
  targeted: string | undefined;
}

/**
 * RFC 9213 §2.2: the first field of the target list (`TARGETED_FIELDS`) with a valid, non-empty
 * value decides; otherwise `Cache-Control`.
 */
export function responseDirectives(h: HeaderRecord): ResponseDirectives {
  for (const field of TARGETED_FIELDS) {
    const v = h[field];
    if (v === undefined) continue;
    const cc = parseTargeted(v);
    if (cc) return { cc, targeted: field };
  }
  return { cc: parseCacheControl(h['cache-control']), targeted: undefined };
}
