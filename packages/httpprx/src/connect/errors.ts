/**
 * Errors of the origin connector. One class per condition, each with a stable `code` that is never
 * reused; errors an HTTP-facing caller may turn into a response also carry the `status` to answer
 * with. The codes that the SmartConnect seed names (`EADDRNOTAVAIL`, `ETIMEDOUT`) keep their errno
 * spelling; the others are Coral's own (`CORAL_*`).
 */

/** Base class: every connector error has a stable `code` and an HTTP `status`. */
export class OriginConnectError extends Error {
  readonly code: string;
  readonly status: number;
  /** The origin host and port the error is about (as given to `connect`). */
  readonly host: string | undefined;
  readonly port: number | undefined;

  constructor(
    code: string,
    status: number,
    message: string,
    opts: { host?: string; port?: number; cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.host = opts.host;
    this.port = opts.port;
  }
}

/** The name has no IPv4 or IPv6 address (NXDOMAIN, NODATA, empty answer). Seed: `EADDRNOTAVAIL`. */
export class OriginAddressUnavailableError extends OriginConnectError {
  static readonly code = 'EADDRNOTAVAIL';
  constructor(host: string, port?: number, cause?: unknown) {
    super(OriginAddressUnavailableError.code, 502, `origin ${host} has no IPv4 or IPv6 address`, {
      host,
      ...(port === undefined ? {} : { port }),
      cause,
    });
  }
}

/** Name resolution failed for another reason than "no such name" (server failure, timeout...). */
export class OriginResolveError extends OriginConnectError {
  static readonly code = 'CORAL_ORIGIN_DNS_FAILED';
  /** The resolver's own error code (`EAI_AGAIN`, `ESERVFAIL`, ...), when it had one. */
  readonly dnsCode: string | undefined;
  constructor(host: string, port: number | undefined, cause: unknown) {
    const dnsCode = errorCode(cause);
    super(
      OriginResolveError.code,
      502,
      `resolving origin ${host} failed${dnsCode ? ` (${dnsCode})` : ''}`,
      { host, ...(port === undefined ? {} : { port }), cause },
    );
    this.dnsCode = dnsCode;
  }
}

/** The bounded variant ran out of time before any address connected. Seed: `ETIMEDOUT`. */
export class OriginTimeoutError extends OriginConnectError {
  static readonly code = 'ETIMEDOUT';
  readonly timeoutMs: number;
  constructor(host: string, port: number, timeoutMs: number) {
    super(
      OriginTimeoutError.code,
      504,
      `connecting to origin ${host}:${port} timed out after ${timeoutMs} ms`,
      { host, port },
    );
    this.timeoutMs = timeoutMs;
  }
}

/** One address the policy refused, with the class that made it refused. */
export interface RefusedAddress {
  address: string;
  family: 4 | 6;
  class: string;
}

/**
 * Every address of the origin is in a refused class (loopback, private, link-local...): the proxy
 * must not become a way into its own network. No connection attempt was made.
 */
export class OriginForbiddenError extends OriginConnectError {
  static readonly code = 'CORAL_ORIGIN_FORBIDDEN';
  readonly refused: readonly RefusedAddress[];
  constructor(host: string, port: number | undefined, refused: readonly RefusedAddress[]) {
    super(
      OriginForbiddenError.code,
      403,
      `origin ${host} resolves only to refused addresses (${refused
        .map((r) => `${r.address} ${r.class}`)
        .join(', ')})`,
      { host, ...(port === undefined ? {} : { port }) },
    );
    this.refused = refused;
  }
}

/** Every connection attempt failed (refused, unreachable, reset...). `causes` holds each failure. */
export class OriginUnreachableError extends OriginConnectError {
  static readonly code = 'CORAL_ORIGIN_UNREACHABLE';
  readonly causes: ReadonlyArray<{ address: string; error: unknown }>;
  constructor(
    host: string,
    port: number,
    causes: ReadonlyArray<{ address: string; error: unknown }>,
  ) {
    super(
      OriginUnreachableError.code,
      502,
      `no address of origin ${host}:${port} accepted a connection (${causes
        .map((c) => `${c.address}: ${errorCode(c.error) ?? String(c.error)}`)
        .join(', ')})`,
      { host, port, cause: causes[0]?.error },
    );
    this.causes = causes;
  }
}

/** A host or port that cannot name an origin (empty, spaces, port outside 1..65535...). */
export class InvalidOriginError extends OriginConnectError {
  static readonly code = 'CORAL_INVALID_ORIGIN';
  constructor(message: string) {
    super(InvalidOriginError.code, 400, message);
  }
}

/** A failure remembered by the negative cache, re-thrown without a new attempt until it expires. */
export class OriginNegativelyCachedError extends OriginConnectError {
  static readonly code = 'CORAL_ORIGIN_NEGATIVE_CACHED';
  /** Milliseconds until the remembered failure expires. */
  readonly retryAfterMs: number;
  constructor(key: string, original: unknown, retryAfterMs: number) {
    const status = original instanceof OriginConnectError ? original.status : 502;
    super(
      OriginNegativelyCachedError.code,
      status,
      `origin ${key} failed recently (${errorCode(original) ?? String(original)}); not retried for ${retryAfterMs} ms`,
      { cause: original },
    );
    this.retryAfterMs = retryAfterMs;
  }
}

/** The caller's AbortSignal fired. Same `code` as Node's own AbortError. */
export class ConnectAbortedError extends OriginConnectError {
  static readonly code = 'ABORT_ERR';
  constructor(host: string, port: number, reason?: unknown) {
    super(ConnectAbortedError.code, 499, `connecting to origin ${host}:${port} was aborted`, {
      host,
      port,
      cause: reason,
    });
    this.name = 'AbortError';
  }
}

/** Every code the connector throws, for docs and for the test that checks the docs list them. */
export const CONNECT_ERROR_CODES = [
  OriginAddressUnavailableError.code,
  OriginResolveError.code,
  OriginTimeoutError.code,
  OriginForbiddenError.code,
  OriginUnreachableError.code,
  InvalidOriginError.code,
  OriginNegativelyCachedError.code,
  ConnectAbortedError.code,
] as const;

/** The `code` property of an error-like value, if it has a string one. */
export function errorCode(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err) {
    const code = err.code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}
