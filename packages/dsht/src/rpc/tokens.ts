/**
 * Round-trip write tokens (BEP 5's `token`, hyperdht/dht-rpc's round-trip token): every answer
 * carries `HMAC(secret, "ip:port")` for the requester's exact address; a request that carries it
 * back proves its sender receives datagrams at that address. STORE and STORE_PROBE are served only
 * with a valid token, and only such requests (or answers to this node's own requests) count as a
 * round trip: routing tables, membership and answer sizes depend on it.
 *
 * The secret rotates every `rotateMs` (lazily, from the clock); a token made with the current or
 * the previous secret is valid, so a token lives one to two periods. Secrets come from the OS
 * CSPRNG whatever random source the node was given.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { Clock } from '@coral/testkit';
import { sameBytes } from '../auth/same-bytes.js';
import {
  PEER_TOKEN_ENTRIES,
  TOKEN_BYTES,
  TOKEN_CACHE_ENTRIES,
  TOKEN_ROTATE_MS,
} from '../constants.js';

interface Secret {
  epoch: number;
  key: Buffer;
}

export interface WriteTokensOptions {
  /** Default TOKEN_ROTATE_MS (5 min). */
  rotateMs?: number;
}

/** Issues and checks the tokens this node hands out. */
export class WriteTokens {
  readonly rotateMs: number;
  #clock: Clock;
  #cur: Secret | undefined;
  #prev: Secret | undefined;
  /** address → token under the current secret (its bytes as a latin1 string: compact). */
  #cache = new Map<string, string>();

  constructor(components: { clock: Clock }, options: WriteTokensOptions = {}) {
    this.#clock = components.clock;
    this.rotateMs = options.rotateMs ?? TOKEN_ROTATE_MS;
  }

  /** The token for `address` ("ip:port", IPv6 bracketed). */
  issue(address: string): Uint8Array {
    return bytesOf(this.#current(address));
  }

  /** Was `token` issued to `address` under the current or the previous secret? */
  check(address: string, token: Uint8Array): boolean {
    if (token.length !== TOKEN_BYTES) return false;
    if (sameBytes(this.#current(address), token)) return true;
    const prev = this.#prev;
    return prev !== undefined && sameBytes(this.#make(prev, address), token);
  }

  /** The current token for `address`, as a latin1 string. */
  #current(address: string): string {
    const cur = this.#roll();
    let t = this.#cache.get(address);
    if (t === undefined) {
      t = this.#make(cur, address);
      if (this.#cache.size >= TOKEN_CACHE_ENTRIES) this.#cache.clear();
      this.#cache.set(address, t);
    }
    return t;
  }

  #make(s: Secret, address: string): string {
    return createHmac('sha256', s.key).update(address).digest('binary').slice(0, TOKEN_BYTES);
  }

  #roll(): Secret {
    const epoch = Math.floor(this.#clock.now() / this.rotateMs);
    const cur = this.#cur;
    if (cur && cur.epoch === epoch) return cur;
    this.#prev = cur && cur.epoch === epoch - 1 ? cur : undefined;
    const next = { epoch, key: randomBytes(32) };
    this.#cur = next;
    this.#cache.clear();
    return next;
  }
}

/** Bytes kept as a latin1 string (one character per byte): a small flat string, not a typed array. */
function latin1(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.length).toString('latin1');
}

/** The bytes of a latin1 string (a fresh, small, on-heap array). */
function bytesOf(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** The tokens peers handed to this node, kept to prove its round trips to them. */
export class PeerTokens {
  #clock: Clock;
  #maxAgeMs: number;
  /** address → the token (latin1 string of its bytes), when it came, whether a request carried it. */
  #tokens = new Map<string, { token: string; at: number; used: boolean }>();

  /** `maxAgeMs`: a token older than this is not relied on (default TOKEN_ROTATE_MS). */
  constructor(components: { clock: Clock }, options: { maxAgeMs?: number } = {}) {
    this.#clock = components.clock;
    this.#maxAgeMs = options.maxAgeMs ?? TOKEN_ROTATE_MS;
  }

  get size(): number {
    return this.#tokens.size;
  }

  set(address: string, token: Uint8Array): void {
    const old = this.#tokens.get(address);
    if (old !== undefined) {
      // Most answers bring the token held already: the record is renewed, not made again.
      this.#tokens.delete(address);
      if (!sameBytes(old.token, token)) old.token = latin1(token);
      old.at = this.#clock.now();
      old.used = false;
      this.#tokens.set(address, old);
      return;
    }
    if (this.#tokens.size >= PEER_TOKEN_ENTRIES) {
      this.#tokens.delete(this.#tokens.keys().next().value as string);
    }
    this.#tokens.set(address, { token: latin1(token), at: this.#clock.now(), used: false });
  }

  /** Has a request carried the token held for `address` (since it was received)? */
  used(address: string): boolean {
    return this.#tokens.get(address)?.used ?? false;
  }

  /** The peer's token when one is held and young enough to still be valid there. */
  get(address: string): Uint8Array | undefined {
    const e = this.#fresh(address);
    return e ? bytesOf(e.token) : undefined;
  }

  /** Is a token held for `address` that is young enough to still be valid there? */
  has(address: string): boolean {
    return this.#fresh(address) !== undefined;
  }

  /** The token for a request about to be sent (marks it used). */
  take(address: string): Uint8Array | undefined {
    const e = this.#fresh(address);
    if (!e) return undefined;
    e.used = true;
    return bytesOf(e.token);
  }

  #fresh(address: string): { token: string; at: number; used: boolean } | undefined {
    const e = this.#tokens.get(address);
    if (!e) return undefined;
    if (this.#clock.now() - e.at >= this.#maxAgeMs) {
      this.#tokens.delete(address);
      return undefined;
    }
    return e;
  }
}
