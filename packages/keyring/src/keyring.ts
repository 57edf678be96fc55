/**
 * A fleet's shared secrets, rotated the way HashiCorp memberlist / Serf keyrings are: the first
 * (primary) key signs, every key verifies, so a rotation is three fleet-wide steps with no
 * downtime — `install(B)` everywhere, `use(B)` everywhere, `remove(A)` everywhere.
 *
 * A key is 32 random bytes, written as 64 hex digits or as base64 / base64url. Its id is the first
 * 4 bytes of SHA-256(key), shown as 8 hex digits; datagrams and headers carry the id so a receiver
 * picks the right key without trying them all. Secrets never appear in errors, logs or `list()`.
 *
 * Consumers never MAC with a fleet key directly: `derive(id, purpose)` gives an HKDF-SHA-256
 * subkey per purpose (one for DSHT datagrams, one for node-to-node HTTP, ...), cached, so a key
 * used in one protocol can never authenticate a message of another.
 */
import { createHash, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import { EventEmitter } from 'node:events';
import {
  KEYRING_ERR_EMPTY,
  KEYRING_ERR_ID_COLLISION,
  KEYRING_ERR_INVALID_KEY,
  KEYRING_ERR_PRIMARY,
  KEYRING_ERR_UNKNOWN_KEY,
  KeyringError,
} from './errors.js';
import { macKey } from './mac.js';

/** Bytes in a fleet key. */
export const KEY_BYTES = 32;
/** Bytes in a key id. */
export const KEY_ID_BYTES = 4;
/** HKDF salt of every derived subkey (a fixed, public domain separator). */
export const DERIVE_SALT = 'coral-keyring-v1';

const HEX_KEY = /^[0-9a-fA-F]{64}$/;
const B64_KEY = /^[A-Za-z0-9+/_-]{43}=?$/;
const HEX_ID = /^[0-9a-f]{8}$/;

/** What `list()` shows: ids only, never secrets. */
export interface KeyInfo {
  /** 8 hex digits. */
  id: string;
  /** True for the key that signs. */
  primary: boolean;
}

/** Emitted on every change (install, use, remove, replace). */
export interface KeyringChange {
  kind: 'install' | 'use' | 'remove' | 'replace';
  /** The key id the change was about (install / use / remove). */
  id?: string;
  primaryId: string;
  /** Every key id held after the change, primary first. */
  ids: string[];
}

type KeyringEvents = { change: [change: KeyringChange] };

interface Entry {
  id: string;
  secret: Buffer;
}

/** Decode one written key; throws KeyringError naming `what` (e.g. "key #2"). */
export function decodeKey(text: string, what = 'key'): Buffer {
  if (typeof text !== 'string') {
    throw new KeyringError(KEYRING_ERR_INVALID_KEY, `${what}: not a string`);
  }
  const s = text.trim();
  let bytes: Buffer | undefined;
  if (HEX_KEY.test(s)) bytes = Buffer.from(s, 'hex');
  else if (B64_KEY.test(s)) bytes = Buffer.from(s, 'base64');
  if (!bytes || bytes.length !== KEY_BYTES) {
    const shape = s.length === 0 ? 'empty' : `${s.length} characters`;
    throw new KeyringError(
      KEYRING_ERR_INVALID_KEY,
      `${what}: expected ${KEY_BYTES} bytes written as 64 hex digits or base64/base64url, got ${shape}`,
    );
  }
  return bytes;
}

/** The id of a key: first 4 bytes of SHA-256(key) as 8 lower-case hex digits. */
export function keyIdOf(secret: Uint8Array): string {
  return createHash('sha256').update(secret).digest().subarray(0, KEY_ID_BYTES).toString('hex');
}

export class Keyring extends EventEmitter<KeyringEvents> {
  /** Keys, primary first. */
  #entries: Entry[];
  #derived = new Map<string, KeyObject>();

  private constructor(entries: Entry[]) {
    super();
    this.#entries = entries;
  }

  /**
   * Build a keyring from written keys; the first signs. Duplicates of one key collapse into one
   * entry. Throws `KeyringError` (KEYRING_ERR_EMPTY, KEYRING_ERR_INVALID_KEY naming the entry by
   * position, KEYRING_ERR_ID_COLLISION).
   */
  static parse(keys: readonly string[]): Keyring {
    return new Keyring(Keyring.#parseEntries(keys));
  }

  /** A fresh random key, as 64 hex digits. */
  static generateKey(): string {
    return randomBytes(KEY_BYTES).toString('hex');
  }

  /** The id a written key would have (validates it). */
  static keyId(key: string): string {
    return keyIdOf(decodeKey(key));
  }

  static #parseEntries(keys: readonly string[]): Entry[] {
    if (!Array.isArray(keys) || keys.length === 0) {
      throw new KeyringError(KEYRING_ERR_EMPTY, 'a keyring needs at least one key');
    }
    const out: Entry[] = [];
    keys.forEach((k: string, i) => {
      const secret = decodeKey(k, `key #${i + 1} of ${keys.length}`);
      const id = keyIdOf(secret);
      const same = out.find((e) => e.id === id);
      if (same) {
        if (same.secret.equals(secret)) return;
        throw new KeyringError(
          KEYRING_ERR_ID_COLLISION,
          `key #${i + 1} of ${keys.length} has the same id ${id} as another key: generate a new one`,
        );
      }
      out.push({ id, secret });
    });
    return out;
  }

  /** Key ids, primary first. */
  list(): KeyInfo[] {
    return this.#entries.map((e, i) => ({ id: e.id, primary: i === 0 }));
  }

  /** Id of the key that signs. */
  get primaryId(): string {
    return this.#entries[0]!.id;
  }

  /** Number of keys held. */
  get size(): number {
    return this.#entries.length;
  }

  has(id: string): boolean {
    return this.#entries.some((e) => e.id === id);
  }

  /** Add a key (verifying only until `use`d); returns its id. Installing a held key is a no-op. */
  install(key: string): string {
    const secret = decodeKey(key, 'installed key');
    const id = keyIdOf(secret);
    const same = this.#entries.find((e) => e.id === id);
    if (same) {
      if (same.secret.equals(secret)) return id;
      throw new KeyringError(
        KEYRING_ERR_ID_COLLISION,
        `installed key has the same id ${id} as a held key: generate a new one`,
      );
    }
    this.#entries.push({ id, secret });
    this.#changed('install', id);
    return id;
  }

  /** Make a held key the primary (the one that signs). */
  use(id: string): void {
    const i = this.#indexOf(id);
    if (i === 0) return;
    const [entry] = this.#entries.splice(i, 1);
    this.#entries.unshift(entry!);
    this.#changed('use', id);
  }

  /** Drop a key. The primary cannot be removed (`use` another first). */
  remove(id: string): void {
    const i = this.#indexOf(id);
    if (i === 0) {
      throw new KeyringError(
        KEYRING_ERR_PRIMARY,
        `key ${id} is the primary key: make another key primary before removing it`,
      );
    }
    this.#entries.splice(i, 1);
    for (const k of [...this.#derived.keys()]) if (k.startsWith(`${id}|`)) this.#derived.delete(k);
    this.#changed('remove', id);
  }

  /**
   * Replace every key at once (a configuration reload, e.g. on SIGHUP); the first signs. Validated
   * first: on error nothing changes.
   */
  replace(keys: readonly string[]): void {
    const entries = Keyring.#parseEntries(keys);
    this.#entries = entries;
    this.#derived.clear();
    this.#changed('replace');
  }

  /**
   * The subkey of key `id` for `purpose` (HKDF-SHA-256, salt {@link DERIVE_SALT}, info = purpose),
   * as a KeyObject ready for HMAC; undefined when the key is not held. Cached.
   */
  derive(id: string, purpose: string): KeyObject | undefined {
    const cacheKey = `${id}|${purpose}`;
    const hit = this.#derived.get(cacheKey);
    if (hit) return hit;
    const entry = this.#entries.find((e) => e.id === id);
    if (!entry) return undefined;
    const sub = Buffer.from(hkdfSync('sha256', entry.secret, DERIVE_SALT, purpose, KEY_BYTES));
    const key = macKey(sub);
    this.#derived.set(cacheKey, key);
    return key;
  }

  /** The primary key's id and its subkey for `purpose`. */
  signing(purpose: string): { id: string; key: KeyObject } {
    const id = this.primaryId;
    return { id, key: this.derive(id, purpose)! };
  }

  #indexOf(id: string): number {
    const i = HEX_ID.test(id) ? this.#entries.findIndex((e) => e.id === id) : -1;
    if (i < 0) {
      throw new KeyringError(
        KEYRING_ERR_UNKNOWN_KEY,
        `no key with id ${JSON.stringify(id)} (held: ${this.#entries.map((e) => e.id).join(', ')})`,
      );
    }
    return i;
  }

  #changed(kind: KeyringChange['kind'], id?: string): void {
    const change: KeyringChange = {
      kind,
      primaryId: this.primaryId,
      ids: this.#entries.map((e) => e.id),
    };
    if (id !== undefined) change.id = id;
    this.emit('change', change);
  }
}
