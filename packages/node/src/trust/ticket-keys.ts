/**
 * The TLS listener's session-ticket keys, the same on every member of a fleet, so a client that
 * got a ticket from one member resumes its session at any other (issue 28; docs/security.md,
 * "TLS session tickets").
 *
 * Time is cut into rotation epochs of `rotationSeconds`, epoch = floor(unix time / period), so
 * every member is in the same epoch at the same moment (as far as their clocks agree). An epoch's
 * 48-byte key (Node's `server.setTicketKeys`: 16 bytes key name, 16 bytes HMAC secret, 16 bytes AES
 * key) is
 *
 *   subkey = keyring.derive(primary id, "coral-tls-ticket-keys-v1")   // the keyring's HKDF-SHA-256
 *   keys   = HKDF-SHA-256(ikm = subkey, salt = "",
 *                         info = "coral tls ticket keys v1" || epoch (8 bytes big-endian),
 *                         48 bytes)
 *
 * so it is deterministic per (fleet primary key, epoch), differs for another key or another epoch,
 * and the fleet key itself never keys a cipher (the keyring's per-purpose subkey does). A timer on
 * the injected clock swaps in the next epoch's keys at each boundary; a change of the keyring's
 * primary key (`coral-node keys use`) swaps them at once. An open-mode node (no keyring) draws
 * random keys for each epoch instead: its tickets resume only at itself. The buffer a rotation
 * replaces is zeroed (the listener holds its own copy inside OpenSSL).
 *
 * No grace period for the previous epoch's key: a Node TLS listener holds exactly one ticket key
 * (`setTicketKeys`), so a ticket issued just before a boundary no longer resumes after it (the
 * client makes one full handshake and gets a ticket under the new key). Node's supported API has
 * no way to accept a second key: the OpenSSL ticket-key callback that could try several keys is
 * reached only through the internal `server._sharedCreds.context.enableTicketKeyCallback()` (used
 * by Node's own tests, undocumented); OpenSSL decrypts tickets with the listener's initial context,
 * so a context that `SNICallback` switches to cannot bring the old key; `newSession` /
 * `resumeSession` is a server-side session-id cache, never consulted for a ticket that failed to
 * decrypt, and would hold session secrets per process. The long default epoch (12 h) keeps the
 * full handshakes a rotation costs rare.
 */
import { createHash, hkdfSync, randomBytes } from 'node:crypto';
import type { Keyring, KeyringChange } from '@coral/keyring';
import type { Clock, TimerHandle } from '@coral/runtime';
import type { Logger } from 'pino';

/** Bytes of a Node TLS ticket-key buffer (key name, HMAC secret, AES key; 16 each). */
export const TICKET_KEY_BYTES = 48;
/** The keyring purpose (HKDF info) of the subkey every epoch's ticket keys are derived from. */
export const TICKET_KEY_PURPOSE = 'coral-tls-ticket-keys-v1';
/** The label that begins the HKDF info of an epoch's keys (the epoch number follows it). */
export const TICKET_KEY_INFO_LABEL = 'coral tls ticket keys v1';
/** Default rotation period (12 h), `tls.ticketKeyRotationSeconds`. */
export const TICKET_KEY_ROTATION_SECONDS = 43_200;
/** Shortest and longest rotation periods the configuration accepts (1 min, 7 days). */
export const TICKET_KEY_ROTATION_MIN_SECONDS = 60;
export const TICKET_KEY_ROTATION_MAX_SECONDS = 7 * 86_400;

/** The rotation epoch at clock time `nowMs` (ms since the Unix epoch on the system clock). */
export function ticketKeyEpoch(nowMs: number, rotationSeconds: number): number {
  return Math.floor(nowMs / (rotationSeconds * 1000));
}

/**
 * The ticket keys of `epoch` derived from the keyring's primary key (see the module comment). A
 * fresh buffer: the caller zeroes it when done.
 */
export function deriveTicketKeys(keyring: Keyring, epoch: number): Buffer {
  const { key } = keyring.signing(TICKET_KEY_PURPOSE);
  const info = Buffer.alloc(TICKET_KEY_INFO_LABEL.length + 8);
  info.write(TICKET_KEY_INFO_LABEL, 0, 'latin1');
  info.writeBigInt64BE(BigInt(epoch), TICKET_KEY_INFO_LABEL.length);
  return Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), info, TICKET_KEY_BYTES));
}

export interface TlsTicketKeysComponents {
  clock: Clock;
  /** The fleet's keyring; absent in open mode (random keys per epoch). */
  keyring?: Keyring;
  logger?: Logger;
}

export interface TlsTicketKeysOptions {
  /** Length of a rotation epoch (s). Default {@link TICKET_KEY_ROTATION_SECONDS}. */
  rotationSeconds?: number;
}

/** Where the keys come from: the fleet's keyring, or this node's own random draw (open mode). */
export type TicketKeySource = 'fleet' | 'random';

/** What the admin API shows of the keys held (never the keys). */
export interface TicketKeyStatus {
  source: TicketKeySource;
  epoch: number;
  rotationSeconds: number;
  /**
   * The first 8 hex digits of SHA-256 of the keys' 16-byte name (the part every ticket carries in
   * clear): equal on members that hold the same keys, so an operator can check the fleet agrees.
   */
  fingerprint: string;
  /** When the next epoch's keys come in (ISO time on this node's clock). */
  nextRotation: string;
  /** Replacements since start (epoch boundaries and primary-key changes). */
  rotations: number;
}

/**
 * The ticket keys of the current epoch, swapped at each epoch boundary and when the keyring's
 * primary key changes. `current()` gives the keys for the listener's start; `start(apply)` then
 * hands every later change to `apply` (the listener's `setTlsTicketKeys`).
 */
export class TlsTicketKeys {
  readonly #clock: Clock;
  readonly #keyring: Keyring | undefined;
  readonly #log: Logger | undefined;
  readonly #periodMs: number;
  #keys: Buffer | undefined;
  #epoch = 0;
  #primaryId: string | undefined;
  #apply: ((keys: Buffer) => void) | undefined;
  #timer: TimerHandle | undefined;
  #rotations = 0;
  readonly #onKeyringChange = (change: KeyringChange): void => {
    if (change.primaryId !== this.#primaryId) this.#refresh('primary key changed');
  };

  constructor(components: TlsTicketKeysComponents, options: TlsTicketKeysOptions = {}) {
    const seconds = options.rotationSeconds ?? TICKET_KEY_ROTATION_SECONDS;
    if (!Number.isInteger(seconds) || seconds <= 0) {
      throw new RangeError(`rotationSeconds must be a positive integer, got ${seconds}`);
    }
    this.#clock = components.clock;
    this.#keyring = components.keyring;
    this.#log = components.logger;
    this.#periodMs = seconds * 1000;
  }

  /** `fleet` with a keyring (every member derives the same keys), else `random`. */
  get source(): TicketKeySource {
    return this.#keyring ? 'fleet' : 'random';
  }

  /** The epoch of the keys held (after `current()` or `start`). */
  get epoch(): number {
    return this.#epoch;
  }

  /** Times the keys were replaced since `start` (epoch boundaries and primary-key changes). */
  get rotations(): number {
    return this.#rotations;
  }

  /**
   * The keys held: the current epoch's, derived on the first call. The buffer stays valid until
   * the next rotation or `stop`, which zero it: a holder that keeps them copies them.
   */
  current(): Buffer {
    if (!this.#keys) this.#replace(this.#epochNow());
    return this.#keys!;
  }

  /** What the admin API shows of the keys held; undefined before they are derived, after `stop`. */
  status(): TicketKeyStatus | undefined {
    if (!this.#keys) return undefined;
    return {
      source: this.source,
      epoch: this.#epoch,
      rotationSeconds: this.#periodMs / 1000,
      fingerprint: createHash('sha256')
        .update(this.#keys.subarray(0, 16))
        .digest()
        .subarray(0, 4)
        .toString('hex'),
      nextRotation: new Date((this.#epoch + 1) * this.#periodMs).toISOString(),
      rotations: this.#rotations,
    };
  }

  /** Hand every later change of the keys to `apply`, from now until `stop`. */
  start(apply: (keys: Buffer) => void): void {
    if (this.#apply) throw new Error('TlsTicketKeys already started');
    this.#apply = apply;
    this.#keyring?.on('change', this.#onKeyringChange);
    if (!this.#keys) {
      this.#replace(this.#epochNow());
      apply(this.#keys!);
    } else if (this.#epochNow() !== this.#epoch) {
      // The epoch turned between current() and start().
      this.#refresh('epoch boundary');
    }
    this.#schedule();
  }

  /** Stop rotating and zero the keys held. */
  stop(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#keyring?.off('change', this.#onKeyringChange);
    this.#apply = undefined;
    this.#keys?.fill(0);
    this.#keys = undefined;
  }

  #schedule(): void {
    const now = this.#clock.now();
    const next = (Math.floor(now / this.#periodMs) + 1) * this.#periodMs;
    this.#timer = this.#clock.setTimeout(() => this.#onBoundary(), Math.max(1, next - now));
  }

  #onBoundary(): void {
    this.#timer = undefined;
    if (!this.#apply) return;
    // A timer may fire a little early or late: the clock says which epoch it is.
    if (this.#epochNow() !== this.#epoch) {
      this.#refresh('epoch boundary');
    }
    this.#schedule();
  }

  #refresh(reason: string): void {
    if (!this.#apply) return;
    const epoch = this.#epochNow();
    const old = this.#keys;
    this.#replace(epoch, false);
    try {
      this.#apply(this.#keys!);
    } catch (err) {
      this.#log?.error({ err, epoch }, 'TLS ticket keys could not be applied');
    }
    old?.fill(0);
    this.#rotations++;
    this.#log?.info(
      {
        epoch,
        source: this.source,
        ...(this.#primaryId ? { keyId: this.#primaryId } : {}),
        reason,
      },
      'TLS ticket keys rotated',
    );
  }

  #epochNow(): number {
    return ticketKeyEpoch(this.#clock.now(), this.#periodMs / 1000);
  }

  /** Derive (or draw) the keys of `epoch`; the old buffer is zeroed unless `zeroOld` is off. */
  #replace(epoch: number, zeroOld = true): void {
    const old = this.#keys;
    if (this.#keyring) {
      this.#primaryId = this.#keyring.primaryId;
      this.#keys = deriveTicketKeys(this.#keyring, epoch);
    } else {
      this.#keys = randomBytes(TICKET_KEY_BYTES);
    }
    this.#epoch = epoch;
    if (zeroOld) old?.fill(0);
  }
}
