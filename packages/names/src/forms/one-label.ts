/**
 * The one-label form: an origin as a single DNS label, so `*.<zone>` covers it.
 *
 * Anchored on the AMP cache's "domain prefix" (amp.dev, "AMP Cache URL Format"): the host in
 * Unicode, every `-` doubled, every `.` turned into `-`, wrapped as `0-…-0` when that gives `--`
 * at positions 3–4, then back to an A-label when it is not ASCII. Coral adds one thing AMP does
 * not need, a scheme/port marker after a run of exactly three hyphens:
 *
 *   https://www.example.com        www-example-com
 *   https://www.example.com:8443   www-example-com---8443
 *   http://www.example.com         www-example-com---h
 *   http://www.example.com:8080    www-example-com---h8080
 *
 * A host's encoding never holds an odd run of three or more hyphens, so the marker cannot be
 * confused with any part of a host (the proof is in docs/names.md). AMP's SHA-256 fallback for
 * hosts that do not fit is not used: it cannot be reversed, and the proxy must know the origin.
 */
import { DEFAULT_PORTS, HTTP_TAG, MAX_LABEL_OCTETS, ONE_LABEL_MARKER } from '../constants.js';
import { checkHost } from '../host.js';
import { originText } from '../http.js';
import { hostToUnicode, isAscii, labelToAscii, labelToUnicode, whyLabelInvalid } from '../idna.js';
import { fail, ok, type Checked, type Origin, type Scheme } from '../types.js';

/** True when the code points at positions 3 and 4 (1-based) are both hyphens. */
function hyphensAt3And4(s: string): boolean {
  const cps = Array.from(s.slice(0, 8));
  return cps[2] === '-' && cps[3] === '-';
}

/** The tag after the marker: '' for https:443, else `---<port>`, `---h`, `---h<port>`. */
function tagOf(scheme: Scheme, port: number): string {
  if (scheme === 'https') return port === DEFAULT_PORTS.https ? '' : `${ONE_LABEL_MARKER}${port}`;
  return `${ONE_LABEL_MARKER}${HTTP_TAG}${port === DEFAULT_PORTS.http ? '' : port}`;
}

/**
 * The AMP cache's human-readable body of a host given in Unicode: `-` → `--`, `.` → `-`, and the
 * `0-…-0` wrap when the result has `--` at positions 3–4.
 */
export function ampBody(unicodeHost: string): string {
  const body = unicodeHost
    .split('.')
    .map((l) => l.replaceAll('-', '--'))
    .join('-');
  return hyphensAt3And4(body) ? `0-${body}-0` : body;
}

/**
 * Encode an origin whose host is canonical (see `checkHost`) and port in range. Fails with
 * `NAMES_ERR_LABEL_TOO_LONG` or `NAMES_ERR_LABEL_INVALID` when the origin has no one-label form.
 */
export function encodeOneLabel(origin: Origin): Checked<string> {
  const unicode = origin.host.includes('xn--') ? hostToUnicode(origin.host) : origin.host;
  if (unicode === null) return fail('NAMES_ERR_BAD_IDN', `${origin.host} is not a valid IDN host`);
  const s = ampBody(unicode) + tagOf(origin.scheme, origin.port);
  let label = s;
  if (!isAscii(s)) {
    const a = labelToAscii(s);
    if (a === null) {
      return fail(
        'NAMES_ERR_LABEL_INVALID',
        `${originText(origin)} cannot be a single label: ${whyLabelInvalid(s)}`,
      );
    }
    label = a;
  }
  if (label.length > MAX_LABEL_OCTETS) {
    return fail(
      'NAMES_ERR_LABEL_TOO_LONG',
      `${originText(origin)} cannot be a single label: "${label}" is ${label.length} octets, over ${MAX_LABEL_OCTETS}`,
    );
  }
  return ok(label);
}

const LABEL_CHARS = /^[a-z0-9_-]+$/;
const TAG = /^(h)?([1-9][0-9]{0,4})?$/;

/**
 * Decode one label (lowercase ASCII, as found under the zone) into its origin. Only the
 * canonical spelling is accepted: the decoded origin must encode back to exactly `label`.
 */
export function decodeOneLabel(label: string): Checked<Origin> {
  if (label.length > MAX_LABEL_OCTETS) {
    return fail('NAMES_ERR_BAD_HOST', `label is ${label.length} octets, over ${MAX_LABEL_OCTETS}`);
  }
  if (!LABEL_CHARS.test(label)) {
    return fail(
      'NAMES_ERR_BAD_HOST',
      `label ${JSON.stringify(label)} has characters a host name cannot have`,
    );
  }
  let s = label;
  if (label.startsWith('xn--')) {
    const u = labelToUnicode(label);
    if (u === null) {
      return fail('NAMES_ERR_BAD_IDN', `${JSON.stringify(label)} is not a valid A-label`);
    }
    s = u;
  }

  // 1. The marker: the only maximal run of hyphens of odd length ≥ 3, which must be exactly 3.
  let scheme: Scheme = 'https';
  let port: number = DEFAULT_PORTS.https;
  let body = s;
  const odd = [...s.matchAll(/-+/g)].filter((m) => m[0].length >= 3 && m[0].length % 2 === 1);
  if (odd.length > 1 || (odd.length === 1 && odd[0]![0].length !== ONE_LABEL_MARKER.length)) {
    return fail(
      'NAMES_ERR_BAD_MARKER',
      `${JSON.stringify(label)}: the scheme/port marker is exactly one run of three hyphens`,
    );
  }
  if (odd.length === 1) {
    const m = odd[0]!;
    body = s.slice(0, m.index);
    const tag = s.slice(m.index + m[0].length);
    const t = TAG.exec(tag);
    if (tag === '' || t === null) {
      return fail(
        'NAMES_ERR_BAD_MARKER',
        `${JSON.stringify(label)}: the tag after "---" must be a port, "h" or "h" and a port`,
      );
    }
    scheme = t[1] === HTTP_TAG ? 'http' : 'https';
    port = t[2] === undefined ? DEFAULT_PORTS[scheme] : Number(t[2]);
    if (port > 65535)
      return fail('NAMES_ERR_BAD_PORT', `${JSON.stringify(label)}: port ${port} is over 65535`);
    if (t[2] !== undefined && port === DEFAULT_PORTS[scheme]) {
      return fail(
        'NAMES_ERR_NOT_CANONICAL',
        `${JSON.stringify(label)}: the default port ${port} of ${scheme} is left out`,
      );
    }
  }

  // 2. The AMP wrap: `0-X-0` with X beginning and ending in a non-hyphen and `--` at 3–4.
  if (body.length > 4 && body.startsWith('0-') && body.endsWith('-0')) {
    const inner = body.slice(2, -2);
    if (!inner.startsWith('-') && !inner.endsWith('-') && hyphensAt3And4(inner)) body = inner;
  }

  // 3. Hyphen runs: one is a dot, 2k are k hyphens; anything else is not a host's encoding.
  if (body.startsWith('-') || body.endsWith('-')) {
    return fail(
      'NAMES_ERR_BAD_HOST',
      `${JSON.stringify(label)} does not encode a host (hyphen at an end)`,
    );
  }
  let bad = false;
  const unicode = body.replace(/-+/g, (run) => {
    if (run.length === 1) return '.';
    if (run.length % 2 === 0) return '-'.repeat(run.length / 2);
    bad = true;
    return run;
  });
  if (bad) {
    return fail(
      'NAMES_ERR_BAD_MARKER',
      `${JSON.stringify(label)} has an odd run of hyphens that is not the marker`,
    );
  }

  // 4. The host must be a Coralizable host, and the label its canonical spelling.
  const host = checkHost(unicode);
  if (!host.ok) return host;
  const origin: Origin = { scheme, host: host.value, port };
  const again = encodeOneLabel(origin);
  if (!again.ok) return again;
  if (again.value !== label) {
    return fail(
      'NAMES_ERR_NOT_CANONICAL',
      `${JSON.stringify(label)} is not canonical: ${originText(origin)} is spelled ${JSON.stringify(again.value)}`,
    );
  }
  return ok(origin);
}
