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
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '@coral/testkit';
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
  /** address → token under the current secret. */
  #cache = new Map<string, Uint8Array>();

  constructor(components: { clock: Clock }, options: WriteTokensOptions = {}) {
    this.#clock = components.clock;
    this.rotateMs = options.rotateMs ?? TOKEN_ROTATE_MS;
  }

  /** The token for `address` ("ip:port", IPv6 bracketed). */
  issue(address: string): Uint8Array {
    const cur = this.#roll();
    let t = this.#cache.get(address);
    if (!t) {
      t = this.#make(cur, address);
      if (this.#cache.size >= TOKEN_CACHE_ENTRIES) this.#cache.clear();
      this.#cache.set(address, t);
    }
    return t;
  }

  /** Was `token` issued to `address` under the current or the previous secret? */
  check(address: string, token: Uint8Array): boolean {
    if (token.length !== TOKEN_BYTES) return false;
    const cur = this.issue(address);
    if (timingSafeEqual(cur, token)) return true;
    const prev = this.#prev;
    return prev !== undefined && timingSafeEqual(this.#make(prev, address), token);
  }

  #make(s: Secret, address: string): Uint8Array {
    const d = createHmac('sha256', s.key).update(address).digest();
    return new Uint8Array(d.buffer, d.byteOffset, TOKEN_BYTES);
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

/** The tokens peers handed to this node, kept to prove its round trips to them. */
export class PeerTokens {
  #clock: Clock;
  #maxAgeMs: number;
  #tokens = new Map<string, { token: Uint8Array; at: number; used: boolean }>();

  /** `maxAgeMs`: a token older than this is not relied on (default TOKEN_ROTATE_MS). */
  constructor(components: { clock: Clock }, options: { maxAgeMs?: number } = {}) {
    this.#clock = components.clock;
    this.#maxAgeMs = options.maxAgeMs ?? TOKEN_ROTATE_MS;
  }

  get size(): number {
    return this.#tokens.size;
  }

  set(address: string, token: Uint8Array): void {
    this.#tokens.delete(address);
    if (this.#tokens.size >= PEER_TOKEN_ENTRIES) {
      this.#tokens.delete(this.#tokens.keys().next().value as string);
    }
    this.#tokens.set(address, { token, at: this.#clock.now(), used: false });
  }

  /** Has a request carried the token held for `address` (since it was received)? */
  used(address: string): boolean {
    return this.#tokens.get(address)?.used ?? false;
  }

  /** The peer's token when one is held and young enough to still be valid there. */
  get(address: string): Uint8Array | undefined {
    const e = this.#tokens.get(address);
    if (!e) return undefined;
    if (this.#clock.now() - e.at >= this.#maxAgeMs) {
      this.#tokens.delete(address);
      return undefined;
    }
    return e.token;
  }

  /** The token for a request about to be sent (marks it used). */
  take(address: string): Uint8Array | undefined {
    const t = this.get(address);
    if (t) this.#tokens.get(address)!.used = true;
    return t;
  }
}
