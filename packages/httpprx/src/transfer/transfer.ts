/**
 * One upstream response shared by every client that asks for the same object meanwhile
 * (read-while-write through the disk, as Traffic Server's read-while-writer).
 *
 * The fetch task writes the body to a `BodyWriter` (the store's temp file) at the upstream's pace;
 * every reader reads from it at its own pace. Memory per transfer is bounded whatever the body
 * size and the number of readers: the most recent bytes stay in a small window (`WINDOW_BYTES`)
 * that readers near the front take from without touching the disk, older bytes are read back from
 * the file in `READ_CHUNK_BYTES` pieces, and the upstream is paused while more than
 * `WRITE_HIGH_WATER_BYTES` wait to be written. A reader holds at most one piece at a time (it waits
 * for its client's socket to drain before taking the next), so a slow client costs one piece.
 *
 * A transfer whose bytes must be verified before they count (a peer's copy, checked against its
 * SHA-256 at the end) holds its last byte back from readers until `finish()` has verified it; on a
 * mismatch `fail()` makes every reader abort its client's connection, so no client ever sees a
 * complete-looking wrong body.
 */
import type { ProxyError } from '../errors.js';
import type { StoredMeta } from '../store/types.js';
import type { HeaderRecord } from '../cache/policy.js';
import type { AgeFacts } from '../cache/policy.js';
import type { BodyWriter } from '../store/types.js';
import type { Fwd } from '../cache/decide.js';

/** Bytes kept in memory for readers at the front of a transfer. */
export const WINDOW_BYTES = 256 * 1024;
/** Bytes a reader takes from the file at a time. */
export const READ_CHUNK_BYTES = 64 * 1024;
/** The upstream is paused while this many bytes wait to be written. */
export const WRITE_HIGH_WATER_BYTES = 1024 * 1024;

export interface TransferHead {
  status: number;
  /** End-to-end headers as stored (hop-by-hop, Set-Cookie, Age removed; Date added if absent). */
  headers: HeaderRecord;
  /** Set-Cookie values, passed through in site mode only, never stored. */
  setCookie?: string[];
  facts: AgeFacts;
  fwd: Fwd | 'peer';
  fwdStatus: number;
  /** May clients other than the one that started the fetch use it (storable, not private)? */
  shareable: boolean;
  /** Will it be committed to the store once complete? */
  storing: boolean;
  vary: string[];
  varyValues: (string | null)[];
  /**
   * Content-Length the upstream declared, else undefined (for a HEAD response: the length of the
   * body a GET would get).
   */
  length: number | undefined;
  /** No body at all (HEAD, 204, 304). */
  noBody: boolean;
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
  | { kind: 'stream'; head: TransferHead }
  | { kind: 'entry'; meta: StoredMeta; fwd: Fwd; fwdStatus?: number; detail?: string }
  | { kind: 'error'; error: ProxyError };

/** A 1xx interim response passed on to the clients still waiting for the final one. */
export type InfoListener = (status: number, headers: Record<string, string | string[]>) => void;

export class Transfer {
  readonly key: string;
  readonly outcome: Promise<Outcome>;
  #resolve!: (o: Outcome) => void;
  #settled = false;
  #writer: BodyWriter | undefined;
  /** Recent chunks and the body offset of the first one. */
  readonly #window: Buffer[] = [];
  #windowStart = 0;
  #windowBytes = 0;
  #received = 0;
  #pending = 0;
  #holdBack = 0;
  #state: 'open' | 'done' | 'failed' = 'open';
  #error: Error | undefined;
  #wake: (() => void) | undefined;
  #woken: Promise<void> | undefined;
  #drained: (() => void) | undefined;
  #readers = 0;
  #bodySettled = false;
  #released = false;
  #infoListeners = new Set<InfoListener>();
  /** Clients that joined after the first (for Cache-Status `collapsed`). */
  joiners = 0;
  /** Set once the body is in the store: later joiners may say `stored`. */
  committed: StoredMeta | undefined;
  /** Set by the fetch task: stops the upstream transfer (nobody is left to receive it). */
  abandon: (() => void) | undefined;

  constructor(key: string) {
    this.key = key;
    this.outcome = new Promise((r) => (this.#resolve = r));
  }

  get settled(): boolean {
    return this.#settled;
  }

  get received(): number {
    return this.#received;
  }

  get finished(): boolean {
    return this.#state !== 'open';
  }

  get failed(): Error | undefined {
    return this.#error;
  }

  /** Bytes readers may take now. */
  get readable(): number {
    return Math.max(0, this.#received - this.#holdBack);
  }

  /** Bytes waiting to be written. */
  get pending(): number {
    return this.#pending;
  }

  settle(o: Outcome): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#resolve(o);
  }

  // -------------------------------------------------------------------------------------------
  // Interim responses

  onInfo(listener: InfoListener): () => void {
    this.#infoListeners.add(listener);
    return () => this.#infoListeners.delete(listener);
  }

  info(status: number, headers: Record<string, string | string[]>): void {
    if (this.#settled) return;
    for (const l of this.#infoListeners) l(status, headers);
  }

  // -------------------------------------------------------------------------------------------
  // The writing side (the fetch task)

  /** Where the body goes; `verify`: hold the last byte back until `finish()`. */
  attach(writer: BodyWriter, opts: { verify?: boolean } = {}): void {
    this.#writer = writer;
    this.#holdBack = opts.verify ? 1 : 0;
  }

  /** Append a chunk. Resolves when the upstream may send more (the writer is not behind). */
  push(chunk: Buffer): Promise<void> | undefined {
    const w = this.#writer;
    if (this.#state !== 'open' || !w) return undefined;
    this.#window.push(chunk);
    this.#windowBytes += chunk.length;
    this.#received += chunk.length;
    this.#pending += chunk.length;
    void w.write(chunk).then(() => {
      this.#pending -= chunk.length;
      this.#trim();
      if (this.#pending <= WRITE_HIGH_WATER_BYTES / 2 && this.#drained) {
        const d = this.#drained;
        this.#drained = undefined;
        d();
      }
    });
    this.#notify();
    if (this.#pending <= WRITE_HIGH_WATER_BYTES) return undefined;
    return new Promise<void>((r) => (this.#drained = r));
  }

  /** The body is complete (and verified, for a transfer attached with `verify`). */
  finish(): void {
    if (this.#state !== 'open') return;
    this.#state = 'done';
    this.#holdBack = 0;
    this.#notify();
  }

  /** The body is cut short or wrong: every reader aborts its client. */
  fail(err: Error): void {
    if (this.#state !== 'open') return;
    this.#state = 'failed';
    this.#error = err;
    this.#notify();
    const d = this.#drained;
    this.#drained = undefined;
    d?.();
  }

  /** Everything the fetch task does with the body is over (committed or not): free it once unread. */
  bodySettled(): void {
    this.#bodySettled = true;
    this.#maybeRelease();
  }

  /** Bytes written to the file (for tests). */
  get written(): number {
    return this.#writer?.written ?? 0;
  }

  /** Bytes of body held in memory by this transfer (for tests and bounds). */
  get memoryBytes(): number {
    return this.#windowBytes;
  }

  // -------------------------------------------------------------------------------------------
  // The reading side

  /** A reader comes (count it before awaiting anything, so the body is not released under it). */
  addReader(): void {
    this.#readers++;
  }

  removeReader(): void {
    this.#readers--;
    if (this.#readers <= 0 && this.#state === 'open' && this.abandon) this.abandon();
    this.#maybeRelease();
  }

  get readers(): number {
    return this.#readers;
  }

  /**
   * Up to `max` bytes at `position` (< `readable`): from the window when they are still there,
   * else from the file (into the buffer `into` gives, when given: see `BodyWriter.read`).
   */
  read(position: number, max: number, into?: () => Buffer): Buffer | Promise<Buffer> {
    const end = Math.min(position + max, this.readable);
    if (position >= this.#windowStart && this.#window.length > 0) {
      let off = this.#windowStart;
      for (const c of this.#window) {
        if (position < off + c.length) {
          return c.subarray(position - off, Math.min(c.length, end - off));
        }
        off += c.length;
      }
    }
    const w = this.#writer;
    if (!w) return Promise.reject(new Error('no body'));
    return w.read(position, Math.min(end, w.written) - position, into?.());
  }

  /** Resolves at the next change: more bytes, the end, a failure. */
  changed(): Promise<void> {
    this.#woken ??= new Promise<void>((r) => (this.#wake = r));
    return this.#woken;
  }

  #notify(): void {
    const w = this.#wake;
    this.#wake = undefined;
    this.#woken = undefined;
    w?.();
  }

  /** Drop window chunks beyond the budget once they are in the file. */
  #trim(): void {
    const written = this.#writer?.written ?? 0;
    while (this.#windowBytes > WINDOW_BYTES && this.#window.length > 1) {
      const first = this.#window[0]!;
      if (this.#windowStart + first.length > written) break;
      this.#window.shift();
      this.#windowStart += first.length;
      this.#windowBytes -= first.length;
    }
  }

  #maybeRelease(): void {
    if (this.#released || !this.#bodySettled || this.#readers > 0) return;
    this.#released = true;
    this.#window.length = 0;
    this.#windowBytes = 0;
    void this.#writer?.release();
  }
}
