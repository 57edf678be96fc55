/**
 * The `combined` format: Apache's and nginx's combined log format, with the cache result
 * appended as nginx users do with `$upstream_cache_status`:
 *
 *     client - - [10/Oct/2026:13:55:36 +0000] "GET /a.jpg HTTP/1.1" 200 2326 "referer" "agent" "HIT"
 *
 * Strings are escaped as nginx's `escape=default` does: `"`, `\`, bytes below 32 and above 126
 * become `\xXX`, so a hostile request target or header can neither end a field nor a line. Node
 * hands request targets and header values over as latin1 (one character per byte), so a character
 * up to U+00FF is written as that byte; one above (only from code that built the record itself)
 * as the bytes of its UTF-8 form. A missing value is `-`. Times are UTC.
 */
import type { AccessRecord } from '../record.js';

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const HEX = '0123456789ABCDEF';

function hexByte(b: number): string {
  return '\\x' + HEX[b >> 4]! + HEX[b & 15]!;
}

/** `s` escaped as nginx's `escape=default`, `-` when empty or absent. */
export function escapeDefault(s: string | undefined): string {
  if (s === undefined || s === '') return '-';
  let out = '';
  let from = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 32 && c <= 126 && c !== 0x22 && c !== 0x5c) continue;
    out += s.slice(from, i);
    if (c <= 0xff) {
      out += hexByte(c);
    } else {
      // Whole code point (a surrogate pair is one), as its UTF-8 bytes.
      const cp = s.codePointAt(i)!;
      const ch = String.fromCodePoint(cp);
      for (const b of Buffer.from(ch, 'utf8')) out += hexByte(b);
      i += ch.length - 1;
    }
    from = i + 1;
  }
  return from === 0 ? s : out + s.slice(from);
}

function two(n: number): string {
  return n < 10 ? '0' + n : String(n);
}

let clfSecond = NaN;
let clfText = '';

/** `[10/Oct/2026:13:55:36 +0000]`, in UTC (formatted once per second). */
export function clfTime(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second === clfSecond) return clfText;
  const d = new Date(second * 1000);
  clfSecond = second;
  clfText =
    `[${two(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]!}/${d.getUTCFullYear()}:` +
    `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} +0000]`;
  return clfText;
}

/** The request target of a URL (`/path?query`): what the request line carried. */
function target(url: string): string {
  const scheme = url.indexOf('://');
  if (scheme < 0) return url;
  const slash = url.indexOf('/', scheme + 3);
  return slash < 0 ? '/' : url.slice(slash);
}

/** One access line in the `combined` format, newline included. */
export function formatCombined(r: AccessRecord): string {
  const request = `${r.method} ${target(r.url)} ${r.protocol}`;
  return (
    `${escapeDefault(r.client)} - - ${clfTime(r.time)} "${escapeDefault(request)}" ` +
    `${r.status} ${r.bytes} "${escapeDefault(r.referer)}" "${escapeDefault(r.userAgent)}" ` +
    `"${r.cache.result.toUpperCase()}"\n`
  );
}
