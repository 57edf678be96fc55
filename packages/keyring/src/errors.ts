/**
 * Errors thrown by the keyring. Each has a stable `code` (never reused); docs/security.md and the
 * docs/errors.md index list them. Messages name the offending entry by position, never the secret.
 */
export class KeyringError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'KeyringError';
    this.code = code;
  }
}

/** A key is not 32 bytes written as 64 hex digits or base64 / base64url. */
export const KEYRING_ERR_INVALID_KEY = 'KEYRING_ERR_INVALID_KEY';
/** A keyring needs at least one key. */
export const KEYRING_ERR_EMPTY = 'KEYRING_ERR_EMPTY';
/** Two different keys share a key id (first 4 bytes of SHA-256): replace one of them. */
export const KEYRING_ERR_ID_COLLISION = 'KEYRING_ERR_ID_COLLISION';
/** `use` / `remove` named a key id the keyring does not hold. */
export const KEYRING_ERR_UNKNOWN_KEY = 'KEYRING_ERR_UNKNOWN_KEY';
/** `remove` named the primary key: make another key primary first. */
export const KEYRING_ERR_PRIMARY = 'KEYRING_ERR_PRIMARY';
/** A bad argument to a MAC helper, the replay guard or the peer signer. */
export const KEYRING_ERR_INVALID_ARGUMENT = 'KEYRING_ERR_INVALID_ARGUMENT';

/** Every code above, for the docs test. */
export const KEYRING_ERROR_CODES = [
  KEYRING_ERR_INVALID_KEY,
  KEYRING_ERR_EMPTY,
  KEYRING_ERR_ID_COLLISION,
  KEYRING_ERR_UNKNOWN_KEY,
  KEYRING_ERR_PRIMARY,
  KEYRING_ERR_INVALID_ARGUMENT,
] as const;
