/**
 * The write tokens peers handed to this node, kept to prove its round trips to them (see
 * tokens.ts). Only answers to this node's own requests bring one, so strangers cannot make it
 * grow; it is bounded anyway (`maxEntries`, default PEER_TOKEN_ENTRIES): beyond that the peer
 * whose token came first is forgotten — its next request goes out padded and brings a fresh one.
 *
 * One slot per peer in typed arrays (the map holds the slot number): the token's bytes, when it
 * came, whether a request carried it. An object per peer with a string and a time cost the heap
 * about 90 bytes, and renewing its place in an insertion-ordered map on every answer left the
 * map's table two to four times its entries.
 */
import type { Clock } from '@coral/runtime';
import { MAX_TOKEN_BYTES, PEER_TOKEN_ENTRIES, TOKEN_ROTATE_MS } from '../constants.js';
import { resized } from '../typed-arrays.js';

/** Slots the arrays start with (they grow by doubling up to the bound). */
const INITIAL_SLOTS = 16;

export interface PeerTokensOptions {
  /** A token older than this is not relied on. Default TOKEN_ROTATE_MS. */
  maxAgeMs?: number;
  /** Peers kept. Default PEER_TOKEN_ENTRIES. */
  maxEntries?: number;
}

export class PeerTokens {
  #clock: Clock;
  #maxAgeMs: number;
  #max: number;
  /** address → slot, in the order the peers' first tokens came. */
  #slots = new Map<string, number>();
  /** Per slot: MAX_TOKEN_BYTES bytes of token. */
  #bytes = new Uint8Array(INITIAL_SLOTS * MAX_TOKEN_BYTES);
  /** Per slot: the token's length (1..MAX_TOKEN_BYTES). */
  #len = new Uint8Array(INITIAL_SLOTS);
  /** Per slot: 1 when a request carried the token since it came. */
  #used = new Uint8Array(INITIAL_SLOTS);
  /** Per slot: clock time the token came. */
  #at = new Float64Array(INITIAL_SLOTS);
  #next = 0;
  #free: number[] = [];

  constructor(components: { clock: Clock }, options: PeerTokensOptions = {}) {
    this.#clock = components.clock;
    this.#maxAgeMs = options.maxAgeMs ?? TOKEN_ROTATE_MS;
    this.#max = Math.max(1, options.maxEntries ?? PEER_TOKEN_ENTRIES);
  }

  get size(): number {
    return this.#slots.size;
  }

  /** Keep `token` (1..MAX_TOKEN_BYTES bytes; others are ignored) as the one to use with `address`. */
  set(address: string, token: Uint8Array): void {
    if (token.length === 0 || token.length > MAX_TOKEN_BYTES) return;
    let s = this.#slots.get(address);
    if (s === undefined) {
      if (this.#slots.size >= this.#max) this.#forget(this.#slots.keys().next().value as string);
      s = this.#slot();
      this.#slots.set(address, s);
    }
    // Most answers bring the token held already: compared, not copied again.
    const at = s * MAX_TOKEN_BYTES;
    if (this.#len[s] !== token.length || !equalAt(token, this.#bytes, at)) {
      this.#bytes.set(token, at);
      this.#len[s] = token.length;
    }
    this.#at[s] = this.#clock.now();
    this.#used[s] = 0;
  }

  /** Has a request carried the token held for `address` (since it was received)? */
  used(address: string): boolean {
    const s = this.#slots.get(address);
    return s !== undefined && this.#used[s] === 1;
  }

  /** The peer's token when one is held and young enough to still be valid there (a copy). */
  get(address: string): Uint8Array | undefined {
    const s = this.#fresh(address);
    return s === undefined ? undefined : this.#copy(s);
  }

  /** Is a token held for `address` that is young enough to still be valid there? */
  has(address: string): boolean {
    return this.#fresh(address) !== undefined;
  }

  /** The token for a request about to be sent (marks it used; a copy). */
  take(address: string): Uint8Array | undefined {
    const s = this.#fresh(address);
    if (s === undefined) return undefined;
    this.#used[s] = 1;
    return this.#copy(s);
  }

  #copy(s: number): Uint8Array {
    const at = s * MAX_TOKEN_BYTES;
    return this.#bytes.slice(at, at + this.#len[s]!);
  }

  /** The slot of a token young enough to rely on; an older one is forgotten. */
  #fresh(address: string): number | undefined {
    const s = this.#slots.get(address);
    if (s === undefined) return undefined;
    if (this.#clock.now() - this.#at[s]! >= this.#maxAgeMs) {
      this.#forget(address);
      return undefined;
    }
    return s;
  }

  #forget(address: string): void {
    const s = this.#slots.get(address);
    if (s === undefined) return;
    this.#slots.delete(address);
    this.#free.push(s);
  }

  #slot(): number {
    const reused = this.#free.pop();
    if (reused !== undefined) return reused;
    const s = this.#next++;
    if (s >= this.#len.length) {
      const n = Math.min(2 * this.#len.length, Math.max(this.#max, s + 1));
      this.#bytes = resized(this.#bytes, n * MAX_TOKEN_BYTES);
      this.#len = resized(this.#len, n);
      this.#used = resized(this.#used, n);
      this.#at = resized(this.#at, n);
    }
    return s;
  }
}

/** Does `b[at .. at + a.length)` equal `a`? */
function equalAt(a: Uint8Array, b: Uint8Array, at: number): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[at + i]) return false;
  return true;
}
