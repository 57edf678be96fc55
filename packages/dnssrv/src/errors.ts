/**
 * Thrown errors of @coral/dnssrv. Each class carries a stable `code` (listed in docs/dnssrv.md,
 * "Error codes"). Wire-level problems never throw: they become DNS rcodes (FORMERR, REFUSED, ...)
 * or a dropped datagram, so nothing a client sends can crash the server.
 */
export class DnsError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** An option passed to `DnsServer` is invalid (bad CIDR, zone, nameserver, address ...). */
export class DnsConfigError extends DnsError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('DNS_ERR_CONFIG', message, options);
  }
}

/** `listen()` could not bind its UDP or TCP socket. */
export class DnsListenError extends DnsError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('DNS_ERR_LISTEN', message, options);
  }
}

/** `listen()` called twice, or after `close()`. */
export class DnsStateError extends DnsError {
  constructor(message: string) {
    super('DNS_ERR_STATE', message);
  }
}

/** An ACME challenge value could not be set: bad zone, value or lifetime, or too many values. */
export class DnsChallengeError extends DnsError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('DNS_ERR_CHALLENGE', message, options);
  }
}

/** Every code above, for the docs test. */
export const DNS_ERROR_CODES = [
  'DNS_ERR_CONFIG',
  'DNS_ERR_LISTEN',
  'DNS_ERR_STATE',
  'DNS_ERR_CHALLENGE',
] as const;
