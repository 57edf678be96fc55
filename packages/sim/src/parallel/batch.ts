/**
 * A window's datagrams from one worker to another, packed into one transferable ArrayBuffer:
 * per datagram `deliverAt` (f64), `sentAt` (f64), sender index (u32), receiver index (u32),
 * length (u32), then the bytes. Indices are node indices of the fleet (the same in every worker).
 */

const HEADER = 8 + 8 + 4 + 4 + 4;

/** One datagram in flight between workers. */
export interface Crossing {
  deliverAt: number;
  sentAt: number;
  from: number;
  to: number;
  data: Uint8Array;
}

export class BatchWriter {
  #buf: ArrayBuffer;
  #view: DataView;
  #bytes: Uint8Array;
  #len = 0;
  /** Datagrams written since the last `take()`. */
  count = 0;
  /** Smallest `deliverAt` written since the last `take()` (Infinity when none). */
  minDeliverAt = Infinity;

  constructor(initial = 64 * 1024) {
    this.#buf = new ArrayBuffer(initial);
    this.#view = new DataView(this.#buf);
    this.#bytes = new Uint8Array(this.#buf);
  }

  write(deliverAt: number, sentAt: number, from: number, to: number, data: Uint8Array): void {
    const need = this.#len + HEADER + data.length;
    if (need > this.#buf.byteLength) this.#grow(need);
    const v = this.#view;
    let o = this.#len;
    v.setFloat64(o, deliverAt, true);
    v.setFloat64(o + 8, sentAt, true);
    v.setUint32(o + 16, from, true);
    v.setUint32(o + 20, to, true);
    v.setUint32(o + 24, data.length, true);
    o += HEADER;
    this.#bytes.set(data, o);
    this.#len = o + data.length;
    this.count++;
    if (deliverAt < this.minDeliverAt) this.minDeliverAt = deliverAt;
  }

  /** The datagrams written so far, in a buffer of their own (to transfer); resets the writer. */
  take(): ArrayBuffer | undefined {
    if (this.count === 0) return undefined;
    const out = this.#buf.slice(0, this.#len);
    this.#len = 0;
    this.count = 0;
    this.minDeliverAt = Infinity;
    return out;
  }

  #grow(need: number): void {
    let size = this.#buf.byteLength * 2;
    while (size < need) size *= 2;
    const next = new ArrayBuffer(size);
    new Uint8Array(next).set(this.#bytes.subarray(0, this.#len));
    this.#buf = next;
    this.#view = new DataView(next);
    this.#bytes = new Uint8Array(next);
  }
}

/** Append the datagrams of `buf` to `out`, in the order they were written; each gets its own bytes. */
export function readBatch(buf: ArrayBuffer, out: Crossing[]): void {
  const v = new DataView(buf);
  const bytes = new Uint8Array(buf);
  let o = 0;
  while (o < buf.byteLength) {
    if (o + HEADER > buf.byteLength) throw new RangeError('truncated datagram batch');
    const len = v.getUint32(o + 24, true);
    const start = o + HEADER;
    if (start + len > buf.byteLength) throw new RangeError('truncated datagram batch');
    out.push({
      deliverAt: v.getFloat64(o, true),
      sentAt: v.getFloat64(o + 8, true),
      from: v.getUint32(o + 16, true),
      to: v.getUint32(o + 20, true),
      data: bytes.slice(start, start + len),
    });
    o = start + len;
  }
}

/**
 * The canonical injection order of a window's incoming datagrams: by `deliverAt`, then sender
 * index, then the sender's order (the sort is stable and each sender's datagrams come from one
 * batch, in the order it sent them) — whatever order the batches arrived in.
 */
export function canonicalOrder(crossings: Crossing[]): Crossing[] {
  return crossings.sort((a, b) => a.deliverAt - b.deliverAt || a.from - b.from);
}
