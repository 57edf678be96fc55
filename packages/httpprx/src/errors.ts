/**
 * Errors raised by the proxy. Each condition has its own stable `code` (never reused) and the HTTP
 * status the proxy answers with when the condition reaches a client. The list is mirrored in
 * docs/httpprx.md ("Error codes") and checked by a test.
 */
export const ERROR_CODES = {
  /** The Host header is not inside any configured Coral zone nor a configured site. */
  CORAL_NOT_CORALIZED: 403,
  /**
   * The Host header is malformed, missing on HTTP/1.1, or sent more than once (RFC 9112 §3.2);
   * also a malformed URL to coralize.
   */
  CORAL_BAD_HOST: 400,
  /**
   * The request target is not a plain path on the requested site: not origin-form, a fragment, a
   * backslash, a path that a URL parser would read as another authority (`//h/x`, `/%2F%2Fh`), dot
   * segments above the root, or an absolute-form target naming another authority than Host.
   */
  CORAL_BAD_TARGET: 400,
  /** The HTTP message could not be parsed (answered with `Connection: close`). */
  CORAL_BAD_REQUEST: 400,
  /** The request head is larger than the parser accepts (answered with `Connection: close`). */
  CORAL_HEADERS_TOO_LARGE: 431,
  /** The client did not send a complete request head in time (answered with `Connection: close`). */
  CORAL_REQUEST_TIMEOUT: 408,
  /** A URL given to `coralize` / `urlKey` cannot be parsed or is not http. */
  CORAL_BAD_URL: 400,
  /** A method other than GET or HEAD on a Coralized name. */
  CORAL_METHOD_NOT_ALLOWED: 405,
  /** The client exceeded its request rate. */
  CORAL_RATE_LIMITED: 429,
  /** The request already passed through this proxy (`Via` loop). */
  CORAL_LOOP_DETECTED: 508,
  /** The origin's object is larger than `maxObjectBytes`. */
  CORAL_OBJECT_TOO_LARGE: 502,
  /** The origin could not be reached (DNS, connect or transfer failure). */
  CORAL_ORIGIN_UNREACHABLE: 502,
  /** The origin resolves only to addresses the proxy may not connect to (SSRF guard). */
  CORAL_ORIGIN_FORBIDDEN: 403,
  /** The origin failed recently and the failure is still negatively cached. */
  CORAL_ORIGIN_NEGATIVE_CACHED: 502,
  /**
   * An https origin's certificate failed verification (unknown CA, expired or not yet valid,
   * not for the origin's name...): nothing from it is served or stored. The TLS library's code
   * (`CERT_HAS_EXPIRED`, `ERR_TLS_CERT_ALTNAME_INVALID`, ...) is in `x-coral-cause`.
   */
  CORAL_ORIGIN_CERT_INVALID: 502,
  /** The TLS handshake with an https origin failed for another reason (protocol, alert). */
  CORAL_ORIGIN_TLS_FAILED: 502,
  /** The origin did not answer in time. */
  CORAL_ORIGIN_TIMEOUT: 504,
  /** `only-if-cached` (or a peer request) for an object this proxy does not hold. */
  CORAL_NOT_CACHED: 504,
  /** A stored response must be revalidated (must-revalidate) and the origin could not be reached. */
  CORAL_REVALIDATION_FAILED: 504,
  /** A peer request (peer marker header) whose `Coral-Peer-Auth` did not verify. */
  CORAL_PEER_UNAUTHORIZED: 403,
  /** The proxy is shutting down. */
  CORAL_SHUTTING_DOWN: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export class ProxyError extends Error {
  readonly code: ErrorCode;
  /** HTTP status the proxy answers with. */
  readonly status: number;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ProxyError';
    this.code = code;
    this.status = ERROR_CODES[code];
  }
}

export function isProxyError(e: unknown): e is ProxyError {
  return e instanceof ProxyError;
}
