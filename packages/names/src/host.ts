/**
 * Origin hosts: what a Coralized name may stand for, in one canonical spelling.
 *
 * A host is Coralizable when it is
 * - a DNS name of at least two labels, each 1–63 octets of letters, digits, `-` and `_`, beginning
 *   with a letter or digit and not ending with `-`, whose last label is not all digits, at most
 *   253 octets; internationalized labels in valid A-label form (U-labels are converted by UTS #46);
 * - or an IPv4 address in dotted-decimal form (no leading zeros).
 * IPv6 literals are not Coralizable (docs/names.md says why).
 *
 * The canonical spelling is lowercase, A-labels, no trailing dot: the form DNS, SNI and the Host
 * header to the origin use.
 */
import { parseIPv4 } from '@coral/runtime';
import { MAX_LABEL_OCTETS, MAX_NAME_OCTETS } from './constants.js';
import { NamesError } from './errors.js';
import { hostToAscii, hostToUnicode, isAscii } from './idna.js';
import { fail, ok, type Checked } from './types.js';

const HOST_LABEL = /^[a-z0-9](?:[a-z0-9_-]*[a-z0-9_])?$/;
const ALL_DIGITS = /^[0-9]+$/;

/** True for an IPv4 address in canonical dotted-decimal form (`192.0.2.1`, not `192.0.2.01`). */
export function isIPv4(host: string): boolean {
  return parseIPv4(host) !== undefined;
}

/** Check a host and return its canonical spelling, or a code and reason. Never throws. */
export function checkHost(input: string): Checked<string> {
  if (input.startsWith('[') || input.includes(':')) {
    return fail(
      'NAMES_ERR_IPV6_LITERAL',
      `IPv6 literal ${JSON.stringify(input)} is not Coralizable`,
    );
  }
  let host: string;
  if (isAscii(input)) {
    host = input.toLowerCase();
  } else {
    const ascii = hostToAscii(input);
    if (ascii === null) {
      return fail(
        'NAMES_ERR_BAD_IDN',
        `${JSON.stringify(input)} is not a valid internationalized domain name (UTS #46)`,
      );
    }
    host = ascii;
  }
  if (host.endsWith('.')) host = host.slice(0, -1);
  if (host.length === 0) return fail('NAMES_ERR_BAD_HOST', 'empty host');
  if (host.length > MAX_NAME_OCTETS) {
    return fail('NAMES_ERR_BAD_HOST', `host is ${host.length} octets, over ${MAX_NAME_OCTETS}`);
  }
  if (isIPv4(host)) return ok(host);
  const labels = host.split('.');
  if (labels.length < 2) {
    return fail(
      'NAMES_ERR_BAD_HOST',
      `single-label host ${JSON.stringify(host)}: an origin needs at least two labels`,
    );
  }
  for (const label of labels) {
    if (label.length === 0)
      return fail('NAMES_ERR_BAD_HOST', `empty label in ${JSON.stringify(host)}`);
    if (label.length > MAX_LABEL_OCTETS) {
      return fail(
        'NAMES_ERR_BAD_HOST',
        `label longer than ${MAX_LABEL_OCTETS} octets in ${JSON.stringify(host)}`,
      );
    }
    if (!HOST_LABEL.test(label)) {
      return fail(
        'NAMES_ERR_BAD_HOST',
        `bad label ${JSON.stringify(label)}: letters, digits, "-" and "_" only, beginning with a letter or digit, not ending with "-"`,
      );
    }
  }
  if (ALL_DIGITS.test(labels[labels.length - 1]!)) {
    return fail(
      'NAMES_ERR_BAD_HOST',
      `all-numeric top-level label in ${JSON.stringify(host)} (and not an IPv4 address)`,
    );
  }
  if (labels.some((l) => l.startsWith('xn--'))) {
    const why = checkALabels(host);
    if (why !== undefined) return fail('NAMES_ERR_BAD_IDN', why);
  }
  return ok(host);
}

/** Why the A-labels of an ASCII host are not valid and canonical, or undefined when they are. */
function checkALabels(host: string): string | undefined {
  const unicode = hostToUnicode(host);
  if (unicode === null) {
    return `${JSON.stringify(host)} has a label that is not a valid A-label (UTS #46: punycode, code points, Bidi or ContextJ)`;
  }
  for (const u of unicode.split('.')) {
    if (u.startsWith('-') || u.endsWith('-')) {
      return `${JSON.stringify(host)} has a U-label that begins or ends with "-" (RFC 5891 §4.2.3.1)`;
    }
  }
  if (hostToAscii(unicode) !== host) {
    return `${JSON.stringify(host)} is not in canonical A-label form`;
  }
  return undefined;
}

/** The canonical spelling of a host (U-labels or A-labels, any case, trailing dot or not). */
export function canonicalHost(input: string): string {
  const r = checkHost(input);
  if (!r.ok) throw new NamesError(r.code, r.reason);
  return r.value;
}

/** The host in Unicode (U-labels), for display. The input must be canonical. */
export function unicodeHost(host: string): string {
  if (!host.includes('xn--')) return host;
  return hostToUnicode(host) ?? host;
}

/** True when `host` is `zone` or inside it (both canonical). */
export function isInZone(host: string, zone: string): boolean {
  return host === zone || host.endsWith(`.${zone}`);
}
