/**
 * Round-trip write tokens (BEP 5's `token`, hyperdht/dht-rpc's round-trip token): every answer
 * carries `HMAC(secret, "ip:port")` for the requester's exact address; a request that carries it
 * back proves its sender receives datagrams at that address. STORE (and PING_REQ, LEAVE) are
 * served only with a valid token, and only such requests (or answers to this node's own requests)
 * count as a round trip: routing tables, membership and answer sizes depend on it.
 *
 * The secret rotates every `rotateMs` (lazily, from the clock); a token made with the current or
 * the previous secret is valid, so a token lives one to two periods. Secrets come from the OS
 * CSPRNG whatever random source the node was given.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { Clock } from '@coral/runtime';
import { sameBytes } from '../auth/same-bytes.js';
import { TOKEN_BYTES, TOKEN_CACHE_ENTRIES, TOKEN_ROTATE_MS } from '../constants.js';

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

/** The bytes of a latin1 string (a fresh, small, on-heap array). */
function bytesOf(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

export { PeerTokens } from './peer-tokens.js';
