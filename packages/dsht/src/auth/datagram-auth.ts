/**
 * The datagram around a message payload, and in keyed mode its authentication.
 *
 * Open mode:   [0x02] payload [zero padding]
 * Keyed mode:  [0x03] [key id: 4] [timestamp ms: u48 BE] [nonce: 8] payload [zero padding] [MAC: 16]
 *
 * MAC = HMAC-SHA-256, truncated to 16 bytes, under the keyring subkey `coral-dsht-datagram-v1` of
 * the key named by the id, over every byte before it (version, header, payload and padding). A keyed node
 * drops — before looking at the payload — anything that is not a keyed datagram
 * (`unauthenticated`), names a key it does not hold (`unknownKey`), fails the MAC (`badMac`), is
 * outside the timestamp window (`stale`) or repeats a nonce (`replayed`); each is counted. The
 * replay check runs after the MAC, so forgeries cannot fill the nonce memory.
 *
 * Isolation: a keyed node that keeps receiving datagrams under key ids it lacks while nothing
 * authenticates (its fleet rotated keys without it) reports itself isolated, naming those ids.
 * The other way round — a node whose own key id the fleet lacks — is the key notices' business
 * (key-notices.ts): a datagram dropped as `unknownKey` may be answered with one.
 */
import { createHmac, randomFillSync } from 'node:crypto';
import type { Clock } from '@coral/runtime';
import { ReplayGuard, type Keyring } from '@coral/keyring';
import { sameBytes } from './same-bytes.js';
import {
  AUTH_BYTES,
  AUTH_HEADER_BYTES,
  AUTH_TAG_BYTES,
  DATAGRAM_KEY_PURPOSE,
  ISOLATION_AFTER_MS,
  ISOLATION_MIN_DATAGRAMS,
  REPLAY_MAX_NONCES,
  REPLAY_WINDOW_MS,
  WIRE_VERSION,
  WIRE_VERSION_KEYED,
} from '../constants.js';

export type AuthMode = 'keyed' | 'open';

/** Why a datagram was dropped before its payload was looked at. */
export type AuthDrop =
  'unauthenticated' | 'unknownKey' | 'badMac' | 'stale' | 'replayed' | 'wrongMode' | 'malformed';

export interface AuthCounters {
  /** Datagrams that passed (keyed: authenticated and fresh; open: well-formed frame). */
  accepted: number;
  /** Keyed mode: not a keyed datagram (an open-mode or old-version datagram, or too short). */
  unauthenticated: number;
  /** Keyed mode: signed with a key id this node does not hold. */
  unknownKey: number;
  /** Keyed mode: the MAC did not verify. */
  badMac: number;
  /** Keyed mode: timestamp outside the window (or below the replay floor). */
  stale: number;
  /** Keyed mode: nonce seen before. */
  replayed: number;
  /** Open mode: a keyed datagram (this node has no keyring). */
  wrongMode: number;
  /** Bytes of authentication (header + MAC) in datagrams sent. */
  authBytesSent: number;
  /** Datagrams sealed. */
  sealed: number;
}

export interface IsolationState {
  isolated: boolean;
  /** Why, naming the key ids, when isolated. */
  reason?: string;
  /** Key ids (8 hex) this node received datagrams under but does not hold, most recent first. */
  unknownKeyIds: string[];
  /** Clock time of the last authenticated datagram (or of start). */
  lastAuthenticatedAt: number;
}

export interface DatagramAuthComponents {
  clock: Clock;
  /** Keyed mode when present. */
  keyring?: Keyring;
  /** Called when the isolation state flips. */
  onIsolation?: (state: IsolationState) => void;
  /**
   * Called on a datagram under a key id this node does not hold while it is not isolated: the
   * owner then calls `evaluate()` periodically while `judging` holds.
   */
  onUnknownKey?: () => void;
}

export interface DatagramAuthOptions {
  /** Default REPLAY_WINDOW_MS (60 s). */
  replayWindowMs?: number;
  /** Default REPLAY_MAX_NONCES (65,536). */
  maxNonces?: number;
  /** Default ISOLATION_AFTER_MS (30 s). */
  isolationAfterMs?: number;
  /** Default ISOLATION_MIN_DATAGRAMS (3). */
  isolationMinDatagrams?: number;
}

/** Counters of an authenticator that has seen nothing yet. */
export function emptyAuthCounters(): AuthCounters {
  return {
    accepted: 0,
    unauthenticated: 0,
    unknownKey: 0,
    badMac: 0,
    stale: 0,
    replayed: 0,
    wrongMode: 0,
    authBytesSent: 0,
    sealed: 0,
  };
}

/** Random bytes drawn at once for nonces (128 datagrams' worth; made on first use, keyed mode only). */
const NONCE_POOL_BYTES = 1024;
const UNKNOWN_IDS_KEPT = 16;

export class DatagramAuth {
  readonly mode: AuthMode;
  /** Bytes added around a payload: 1 (open) or 1 + AUTH_BYTES (keyed). */
  readonly overhead: number;
  readonly counters: AuthCounters = emptyAuthCounters();
  readonly #onIsolation: ((state: IsolationState) => void) | undefined;
  readonly #onUnknownKey: (() => void) | undefined;
  #clock: Clock;
  #keyring: Keyring | undefined;
  #replay: ReplayGuard | undefined;
  /** Verifying keys by u32 key id (raw bytes: createHmac is faster with them than a KeyObject). */
  #keys = new Map<number, Buffer>();
  #signId = 0;
  #signKey: Buffer | undefined;
  #pool: Buffer | undefined;
  #poolAt = NONCE_POOL_BYTES;
  #isolationAfter: number;
  #isolationMin: number;
  #lastAuthenticated: number;
  #unknownSinceAuth = 0;
  #lastUnknownAt = -Infinity;
  /** key id hex → datagrams and last time, most recent last. */
  #unknownIds = new Map<string, { datagrams: number; lastSeen: number }>();
  #isolated = false;
  #reason: string | undefined;

  constructor(components: DatagramAuthComponents, options: DatagramAuthOptions = {}) {
    this.#clock = components.clock;
    this.#keyring = components.keyring;
    this.#onIsolation = components.onIsolation;
    this.#onUnknownKey = components.onUnknownKey;
    this.mode = this.#keyring ? 'keyed' : 'open';
    this.overhead = this.#keyring ? 1 + AUTH_BYTES : 1;
    this.#isolationAfter = options.isolationAfterMs ?? ISOLATION_AFTER_MS;
    this.#isolationMin = options.isolationMinDatagrams ?? ISOLATION_MIN_DATAGRAMS;
    this.#lastAuthenticated = this.#clock.now();
    if (this.#keyring) {
      this.#replay = new ReplayGuard(
        { clock: this.#clock },
        {
          windowMs: options.replayWindowMs ?? REPLAY_WINDOW_MS,
          maxNonces: options.maxNonces ?? REPLAY_MAX_NONCES,
        },
      );
      this.refreshKeys();
    }
  }

  /** Re-read the keyring (call on its 'change' event). */
  refreshKeys(): void {
    const ring = this.#keyring;
    if (!ring) return;
    this.#keys.clear();
    for (const { id } of ring.list()) {
      const key = ring.derive(id, DATAGRAM_KEY_PURPOSE);
      if (key) this.#keys.set(parseInt(id, 16) >>> 0, key.export());
    }
    const primary = ring.primaryId;
    this.#signId = parseInt(primary, 16) >>> 0;
    this.#signKey = this.#keys.get(this.#signId);
    // A key id now held is no longer a sign of isolation.
    for (const id of [...this.#unknownIds.keys()]) if (ring.has(id)) this.#unknownIds.delete(id);
  }

  /** Nonces remembered by the replay guard (keyed mode). */
  get nonces(): number {
    return this.#replay?.size ?? 0;
  }

  /**
   * Wrap a payload into a datagram (signed with the primary key in keyed mode), zero-padded so the
   * whole datagram has at least `padTo` bytes.
   */
  seal(payload: Uint8Array, padTo = 0): Uint8Array {
    this.counters.sealed++;
    const size = Math.max(payload.length + this.overhead, padTo);
    const pad = size - payload.length - this.overhead;
    if (!this.#keyring || !this.#signKey) {
      const out = new Uint8Array(size);
      out[0] = WIRE_VERSION;
      out.set(payload, 1);
      return out;
    }
    const head = 1 + AUTH_HEADER_BYTES;
    const end = head + payload.length + pad;
    const out = Buffer.allocUnsafe(size);
    out[0] = WIRE_VERSION_KEYED;
    out.writeUInt32BE(this.#signId, 1);
    out.writeUIntBE(Math.max(0, Math.floor(this.#clock.now())), 5, 6);
    this.#nonce(out, 11);
    out.set(payload, head);
    if (pad > 0) out.fill(0, head + payload.length, end);
    // The digest as a binary (latin1) string, one character per byte: an on-heap string instead of a
    // Buffer over a natively allocated backing store, two of which per datagram the collector had
    // to track and free.
    const tag = createHmac('sha256', this.#signKey).update(out.subarray(0, end)).digest('binary');
    out.write(tag, end, AUTH_TAG_BYTES, 'latin1');
    this.counters.authBytesSent += AUTH_BYTES;
    return new Uint8Array(out.buffer, out.byteOffset, out.length);
  }

  /**
   * Unwrap a received datagram: the payload (a view into `data`), or why it was dropped (counted).
   * In keyed mode nothing past the 19-byte header is read before the MAC verified.
   */
  open(data: Uint8Array): Uint8Array | AuthDrop {
    const v = data[0];
    if (!this.#keyring) {
      if (v === WIRE_VERSION && data.length > 1) {
        this.counters.accepted++;
        return data.subarray(1);
      }
      return this.#drop(v === WIRE_VERSION_KEYED ? 'wrongMode' : 'malformed');
    }
    const head = 1 + AUTH_HEADER_BYTES;
    if (v !== WIRE_VERSION_KEYED || data.length <= head + AUTH_TAG_BYTES) {
      return this.#drop('unauthenticated');
    }
    const buf = Buffer.from(data.buffer, data.byteOffset, data.length);
    const kid = buf.readUInt32BE(1);
    const key = this.#keys.get(kid);
    if (!key) {
      this.#noteUnknown(kid);
      return this.#drop('unknownKey');
    }
    const end = data.length - AUTH_TAG_BYTES;
    const mac = createHmac('sha256', key).update(buf.subarray(0, end)).digest('binary');
    if (!sameBytes(mac, data, end, AUTH_TAG_BYTES)) return this.#drop('badMac');
    const ts = buf.readUIntBE(5, 6);
    const verdict = this.#replay!.check(ts, data.subarray(11, head));
    if (verdict !== 'ok') return this.#drop(verdict);
    this.counters.accepted++;
    this.#lastAuthenticated = this.#clock.now();
    this.#unknownSinceAuth = 0;
    if (this.#isolated) this.#setIsolated(false);
    return data.subarray(head, end);
  }

  /** The isolation state now (re-evaluated). */
  isolation(): IsolationState {
    this.evaluate();
    const state: IsolationState = {
      isolated: this.#isolated,
      unknownKeyIds: [...this.#unknownIds.keys()].reverse(),
      lastAuthenticatedAt: this.#lastAuthenticated,
    };
    if (this.#reason) state.reason = this.#reason;
    return state;
  }

  /**
   * Has this node authenticated a datagram within the isolation window (`isolationAfterMs`)? A
   * node that has is talking to its fleet (key notices use it to tell "a peer lacks this node's
   * key" from "the fleet does not accept it").
   */
  get heardLately(): boolean {
    return (
      this.counters.accepted > 0 &&
      this.#clock.now() - this.#lastAuthenticated <= this.#isolationAfter
    );
  }

  /**
   * Is there something for a later `evaluate()` to decide: not isolated, datagrams under unknown
   * key ids since the last authenticated one, the last of them recent enough to count?
   */
  get judging(): boolean {
    return (
      !this.#isolated &&
      this.#unknownSinceAuth > 0 &&
      this.#clock.now() - this.#lastUnknownAt <= this.#isolationAfter
    );
  }

  /** Decide whether this node is isolated (called on unknown-key datagrams and by a timer). */
  evaluate(): void {
    if (!this.#keyring || this.#isolated) return;
    const now = this.#clock.now();
    if (
      this.#unknownSinceAuth >= this.#isolationMin &&
      now - this.#lastAuthenticated >= this.#isolationAfter &&
      now - this.#lastUnknownAt <= this.#isolationAfter
    ) {
      this.#setIsolated(true);
    }
  }

  #setIsolated(on: boolean): void {
    this.#isolated = on;
    if (on) {
      const ids = [...this.#unknownIds.keys()].reverse();
      const held = this.#keyring!.list().map((k) => k.id);
      const quiet = Math.round((this.#clock.now() - this.#lastAuthenticated) / 1000);
      this.#reason =
        `no authenticated DSHT traffic for ${quiet} s while receiving ${this.#unknownSinceAuth} ` +
        `datagrams under key id(s) ${ids.join(', ')} that this node does not hold ` +
        `(it holds ${held.join(', ')}): the fleet's keys have changed without this node`;
    } else {
      this.#reason = undefined;
    }
    this.#onIsolation?.(this.isolation());
  }

  #noteUnknown(kid: number): void {
    const id = kid.toString(16).padStart(8, '0');
    const now = this.#clock.now();
    const e = this.#unknownIds.get(id);
    if (e) this.#unknownIds.delete(id);
    this.#unknownIds.set(id, { datagrams: (e?.datagrams ?? 0) + 1, lastSeen: now });
    if (this.#unknownIds.size > UNKNOWN_IDS_KEPT) {
      this.#unknownIds.delete(this.#unknownIds.keys().next().value as string);
    }
    this.#unknownSinceAuth++;
    this.#lastUnknownAt = now;
    this.evaluate();
    if (!this.#isolated) this.#onUnknownKey?.();
  }

  /** Datagrams received per unknown key id (most recent first). */
  unknownKeys(): Array<{ id: string; datagrams: number; lastSeen: number }> {
    return [...this.#unknownIds].reverse().map(([id, e]) => ({ id, ...e }));
  }

  /** Count a drop (a bad open-mode frame is the RPC layer's `malformed`). */
  #drop(reason: AuthDrop): AuthDrop {
    if (reason !== 'malformed') this.counters[reason]++;
    return reason;
  }

  /** 8 random bytes into `out` at `at`, from a pool refilled from the OS CSPRNG. */
  #nonce(out: Buffer, at: number): void {
    let pool = this.#pool;
    if (!pool || this.#poolAt + 8 > NONCE_POOL_BYTES) {
      pool = this.#pool ??= Buffer.allocUnsafe(NONCE_POOL_BYTES);
      randomFillSync(pool);
      this.#poolAt = 0;
    }
    pool.copy(out, at, this.#poolAt, this.#poolAt + 8);
    this.#poolAt += 8;
  }
}
