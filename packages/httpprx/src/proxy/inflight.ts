/**
 * One upstream fetch shared by every client that asks for the same object meanwhile
 * (read-while-writer): chunks are kept as they arrive and replayed to late joiners, then pushed to
 * every subscriber as they come, so a waiter gets the first bytes while the rest are still in
 * transit. The fetch task drives it with `head`, `push`, `finish` and `fail`.
 */
import type { ProxyError } from '../errors.js';
import type { StoredMeta } from '../store/types.js';
import type { HeaderRecord } from '../cache/policy.js';

export interface StreamHead {
  status: number;
  /** Client-facing end-to-end headers (without Age / Via / Cache-Status). */
  headers: HeaderRecord;
  /** Set-Cookie values, passed through in site mode only, never stored. */
  setCookie?: string[];
  /** Current age of the response (s), for the Age header. */
  age: number;
  /** Cache-Status `fwd` value and parameters describing how it was obtained. */
  fwd: string;
  fwdStatus: number;
  stored: boolean;
  /** May clients other than the one that started the fetch use it (cacheable, Vary-compatible)? */
  shareable: boolean;
  /** Vary field names of the response, with the values of the request that fetched it. */
  vary: string[];
  varyValues: string[];
  /** Node ID of the peer it came from, if any. */
  peer?: string;
  /**
   * For a peer copy: was it checked against an authenticated holder record (keyed mode)? An
   * unverified copy (open mode) is served to the clients that asked, never stored, announced or
   * handed to other peers.
   */
  peerVerified?: boolean;
  /** Holder records skipped because their node is not a verified member (Cache-Status detail). */
  notMembers?: number;
}

export type Outcome =
  | { kind: 'stream'; head: StreamHead }
  | { kind: 'entry'; meta: StoredMeta; fwd: string; fwdStatus?: number; detail?: string }
  | { kind: 'error'; error: ProxyError; passthrough?: undefined };

export interface Subscriber {
  data(chunk: Buffer): void;
  end(): void;
  error(err: Error): void;
}

export class InFlight {
  readonly key: string;
  readonly outcome: Promise<Outcome>;
  #resolve!: (o: Outcome) => void;
  #settled = false;
  readonly #chunks: Buffer[] = [];
  #received = 0;
  #state: 'open' | 'done' | 'failed' = 'open';
  #error: Error | undefined;
  readonly #subs = new Set<Subscriber>();
  /** Number of clients that joined after the first (for Cache-Status `collapsed`). */
  joiners = 0;
  /** Set by the fetch task: stops the upstream transfer (used when nobody is left to receive it). */
  abandon: (() => void) | undefined;

  constructor(key: string) {
    this.key = key;
    this.outcome = new Promise((r) => (this.#resolve = r));
  }

  get received(): number {
    return this.#received;
  }

  get settled(): boolean {
    return this.#settled;
  }

  get finished(): boolean {
    return this.#state !== 'open';
  }

  settle(o: Outcome): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#resolve(o);
  }

  push(chunk: Buffer): void {
    if (this.#state !== 'open') return;
    this.#chunks.push(chunk);
    this.#received += chunk.length;
    for (const s of this.#subs) s.data(chunk);
  }

  finish(): void {
    if (this.#state !== 'open') return;
    this.#state = 'done';
    for (const s of this.#subs) s.end();
    this.#subs.clear();
  }

  fail(err: Error): void {
    if (this.#state !== 'open') return;
    this.#state = 'failed';
    this.#error = err;
    for (const s of this.#subs) s.error(err);
    this.#subs.clear();
  }

  /** Replay what arrived so far, then follow. Returns an unsubscribe function. */
  subscribe(sub: Subscriber): () => void {
    for (const c of this.#chunks) sub.data(c);
    if (this.#state === 'done') {
      sub.end();
      return () => {};
    }
    if (this.#state === 'failed') {
      sub.error(this.#error!);
      return () => {};
    }
    this.#subs.add(sub);
    return () => this.#subs.delete(sub);
  }
}
