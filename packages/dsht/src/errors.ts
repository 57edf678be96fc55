/**
 * Errors thrown by the DSHT. Each class has a stable `code` (never reused); docs/dsht.md lists them.
 * Wire-level refusal reasons are separate numbers in the codec (see `wire/messages.ts`).
 */
export class DshtError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DshtError';
    this.code = code;
  }
}

/** A datagram failed decoding or validation. */
export class MalformedMessageError extends DshtError {
  constructor(message: string) {
    super('DSHT_ERR_MALFORMED', message);
    this.name = 'MalformedMessageError';
  }
}

/** An encoded message would exceed the datagram limit. */
export class MessageTooLargeError extends DshtError {
  constructor(size: number, limit: number) {
    super(
      'DSHT_ERR_TOO_LARGE',
      `message of ${size} bytes exceeds the ${limit}-byte datagram limit`,
    );
    this.name = 'MessageTooLargeError';
  }
}

/** An RPC got no answer after all retries. */
export class RpcTimeoutError extends DshtError {
  constructor(type: string, to: string, attempts: number) {
    super('DSHT_ERR_TIMEOUT', `${type} to ${to} timed out after ${attempts} attempts`);
    this.name = 'RpcTimeoutError';
  }
}

/** The peer answered with an error message. */
export class RemoteError extends DshtError {
  readonly remoteCode: number;
  constructor(remoteCode: number, message: string) {
    super('DSHT_ERR_REMOTE', `peer error ${remoteCode}: ${message}`);
    this.name = 'RemoteError';
    this.remoteCode = remoteCode;
  }
}

/** An operation was aborted through its AbortSignal. */
export class AbortedError extends DshtError {
  constructor(message = 'operation aborted') {
    super('DSHT_ERR_ABORTED', message);
    this.name = 'AbortedError';
  }
}

/** A caller passed an invalid argument (bad key length, oversized value, bad TTL, ...). */
export class InvalidArgumentError extends DshtError {
  constructor(message: string) {
    super('DSHT_ERR_INVALID_ARGUMENT', message);
    this.name = 'InvalidArgumentError';
  }
}

/** The node is not started, or already stopped. */
export class NotRunningError extends DshtError {
  constructor(message = 'DSHT node is not running') {
    super('DSHT_ERR_NOT_RUNNING', message);
    this.name = 'NotRunningError';
  }
}

/** A put found no node willing to store the value. */
export class PutRejectedError extends DshtError {
  constructor(message: string) {
    super('DSHT_ERR_PUT_REJECTED', message);
    this.name = 'PutRejectedError';
  }
}

/** The transport could not bind or send. */
export class TransportError extends DshtError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('DSHT_ERR_TRANSPORT', message, options);
    this.name = 'TransportError';
  }
}

/** Every code above, for the docs test. */
export const ERROR_CODES = [
  'DSHT_ERR_MALFORMED',
  'DSHT_ERR_TOO_LARGE',
  'DSHT_ERR_TIMEOUT',
  'DSHT_ERR_REMOTE',
  'DSHT_ERR_ABORTED',
  'DSHT_ERR_INVALID_ARGUMENT',
  'DSHT_ERR_NOT_RUNNING',
  'DSHT_ERR_PUT_REJECTED',
  'DSHT_ERR_TRANSPORT',
] as const;

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new AbortedError();
}
