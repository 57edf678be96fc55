/**
 * Errors of @coral/names. Every condition has its own stable `code`, never reused, listed in
 * docs/names.md ("Error codes") and indexed in docs/errors.md (test/docs.spec.ts checks both).
 *
 * The encoders (`coralizeHost`, `coralizeUrl`, `canonicalHost`, `splitHostHeader`) throw a
 * `NamesError`; the parser (`parseCoralName`) never throws: it returns `{ kind: 'invalid', code,
 * reason }` with the same codes, so a DNS server can answer NXDOMAIN and a proxy a 400 page.
 */
export const NAMES_ERROR_CODES = {
  /** Not a host name a Coralized name can stand for: bad characters, empty or over-long label,
   *  a single label (`localhost`), an all-numeric top-level label that is not an IPv4 address. */
  NAMES_ERR_BAD_HOST: 'not a valid origin host name',
  /** An internationalized label fails UTS #46 / IDNA2008: a `xn--` label that is not a valid
   *  A-label, a disallowed code point, the Bidi rule (RFC 5893) or the ContextJ rules. */
  NAMES_ERR_BAD_IDN: 'not a valid internationalized domain name',
  /** An IPv6 literal origin (`[2001:db8::1]`): not Coralizable in either form. */
  NAMES_ERR_IPV6_LITERAL: 'IPv6 literal origins are not Coralizable',
  /** A port that is not a canonical decimal number from 1 to 65535. */
  NAMES_ERR_BAD_PORT: 'bad port',
  /** A scheme other than http or https. */
  NAMES_ERR_BAD_SCHEME: 'scheme is not http or https',
  /** The one-label form would be longer than 63 octets (RFC 1035 §2.3.4). */
  NAMES_ERR_LABEL_TOO_LONG: 'the one-label form would exceed 63 octets',
  /** The one-label form would not be a valid label (an IDNA Bidi or ContextJ violation once the
   *  origin's labels are joined into one). */
  NAMES_ERR_LABEL_INVALID: 'the one-label form would not be a valid DNS label',
  /** The whole Coralized name would be longer than 253 octets. */
  NAMES_ERR_NAME_TOO_LONG: 'the Coralized name would exceed 253 octets',
  /** The legacy multi-label form was asked for an https origin: it stands for http origins only. */
  NAMES_ERR_LEGACY_HTTPS: 'the legacy multi-label form has no https variant',
  /** A one-label name whose scheme/port marker is malformed (`---` tag). */
  NAMES_ERR_BAD_MARKER: 'malformed scheme/port marker',
  /** A one-label name that decodes, but is not the one canonical spelling of its origin. */
  NAMES_ERR_NOT_CANONICAL: 'not the canonical one-label spelling',
  /** The origin host is itself inside the Coral zone (a name that would make the fleet fetch
   *  from itself). */
  NAMES_ERR_ORIGIN_IN_ZONE: 'origin host is inside the Coral zone',
  /** A label under the zone that starts with `_` other than `_acme-challenge` (reserved for DNS
   *  service names, RFC 8552). */
  NAMES_ERR_RESERVED: 'reserved underscore name',
  /** A zone that is not a valid DNS name. */
  NAMES_ERR_BAD_ZONE: 'bad zone',
  /** A URL that cannot be parsed, has credentials, or is not absolute http(s). */
  NAMES_ERR_BAD_URL: 'bad URL',
  /** A Host header value that is not `host[:port]`. */
  NAMES_ERR_BAD_HOST_HEADER: 'malformed Host header',
} as const;

export type NamesErrorCode = keyof typeof NAMES_ERROR_CODES;

export class NamesError extends Error {
  readonly code: NamesErrorCode;

  constructor(code: NamesErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NamesError';
    this.code = code;
  }
}

export function isNamesError(e: unknown): e is NamesError {
  return e instanceof NamesError;
}
