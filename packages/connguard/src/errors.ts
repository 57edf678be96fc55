/**
 * Errors thrown by @coral/connguard. Each has a stable `code` (never reused); docs/connguard.md
 * and the docs/errors.md index list them. Refusals and closes are never thrown: they are counted.
 */
export class ConnGuardError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'ConnGuardError';
    this.code = code;
  }
}

/** A limit is not a positive integer (or 0 where "off" is allowed), or a timeout is out of order. */
export const CONNGUARD_ERR_OPTIONS = 'CONNGUARD_ERR_OPTIONS';
/** Two listeners of one budget got the same name (their counters would mix). */
export const CONNGUARD_ERR_DUPLICATE_LISTENER = 'CONNGUARD_ERR_DUPLICATE_LISTENER';

/** Every code above, for the docs test. */
export const CONNGUARD_ERROR_CODES = [
  CONNGUARD_ERR_OPTIONS,
  CONNGUARD_ERR_DUPLICATE_LISTENER,
] as const;
