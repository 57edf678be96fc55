import { describe, expect, it } from 'vitest';
import { BatchWriter, canonicalOrder, readBatch, type Crossing } from '../../src/parallel/batch.js';

const bytes = (n: number, fill: number): Uint8Array => new Uint8Array(n).fill(fill);

describe('datagram batches between shards', () => {
  it('round-trips datagrams in order, growing past the initial buffer, each with bytes of its own', () => {
    const w = new BatchWriter(64);
    w.write(30.5, 10.25, 3, 8, bytes(100, 1));
    w.write(12, 2, 5, 8, bytes(0, 0));
    w.write(40, 20, 3, 9, bytes(1500, 7));
    expect(w.count).toBe(3);
    expect(w.minDeliverAt).toBe(12);
    const buf = w.take()!;
    expect(w.count).toBe(0);
    expect(w.minDeliverAt).toBe(Infinity);
    expect(w.take()).toBeUndefined();
    const out: Crossing[] = [];
    readBatch(buf, out);
    expect(out.map((c) => [c.deliverAt, c.sentAt, c.from, c.to, c.data.length])).toEqual([
      [30.5, 10.25, 3, 8, 100],
      [12, 2, 5, 8, 0],
      [40, 20, 3, 9, 1500],
    ]);
    expect(out[2]!.data.every((b) => b === 7)).toBe(true);
    expect(out[0]!.data.buffer).not.toBe(buf);
  });

  it('rejects a truncated batch', () => {
    const w = new BatchWriter();
    w.write(1, 0, 0, 1, bytes(10, 1));
    const buf = w.take()!;
    expect(() => readBatch(buf.slice(0, buf.byteLength - 1), [])).toThrow(RangeError);
    expect(() => readBatch(buf.slice(0, 5), [])).toThrow(RangeError);
  });

  it('orders by delivery time, then sender, then the sender’s order — whatever order batches came in', () => {
    const c = (deliverAt: number, from: number, tag: number): Crossing => ({
      deliverAt,
      sentAt: 0,
      from,
      to: 0,
      data: new Uint8Array([tag]),
    });
    const fromA = [c(20, 4, 1), c(10, 4, 2), c(20, 4, 3)];
    const fromB = [c(20, 1, 4), c(10, 9, 5)];
    const tags = (x: Crossing[]) => canonicalOrder(x).map((e) => e.data[0]);
    expect(tags([...fromA, ...fromB])).toEqual([2, 5, 4, 1, 3]);
    expect(tags([...fromB, ...fromA])).toEqual([2, 5, 4, 1, 3]);
  });
});
