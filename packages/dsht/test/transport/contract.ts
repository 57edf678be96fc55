/**
 * The transport contract, run against every implementation (UDP and the simulated network):
 * datagrams arrive intact with the sender's address, in both directions, between several
 * endpoints; a closed endpoint neither sends nor receives; start() fixes the address.
 */
import { describe, expect, it } from 'vitest';
import type { Address } from '../../src/contact.js';
import type { Transport } from '../../src/transport/transport.js';

export interface TransportHarness {
  /** A fresh, not yet started transport at a distinct address. */
  make(): Transport;
  /** Let time pass / IO happen until `done()` is true (bounded; returns either way). */
  settle(done: () => boolean): Promise<void>;
  cleanup(): Promise<void>;
}

export function transportContract(name: string, harness: () => TransportHarness): void {
  describe(`Transport contract: ${name}`, () => {
    it('delivers datagrams intact, with the source address, both ways', async () => {
      const h = harness();
      const a = h.make();
      const b = h.make();
      const atA: Array<[string, Address]> = [];
      const atB: Array<[string, Address]> = [];
      a.onDatagram((d, from) => atA.push([Buffer.from(d).toString('hex'), from]));
      b.onDatagram((d, from) => atB.push([Buffer.from(d).toString('hex'), from]));
      await a.start();
      await b.start();
      expect(a.address.port).toBeGreaterThan(0);
      const payload = new Uint8Array(1200).map((_, i) => i & 0xff);
      a.send(payload, b.address);
      b.send(new Uint8Array([1, 2, 3]), a.address);
      await h.settle(() => atA.length === 1 && atB.length === 1);
      expect(atB[0]?.[0]).toBe(Buffer.from(payload).toString('hex'));
      expect(atB[0]?.[1]).toEqual(a.address);
      expect(atA[0]).toEqual(['010203', b.address]);
      await h.cleanup();
    });

    it('fans in from several senders', async () => {
      const h = harness();
      const hub = h.make();
      const got = new Set<string>();
      hub.onDatagram((d, from) => got.add(`${from.ip}:${from.port}:${d[0]}`));
      await hub.start();
      const spokes = [h.make(), h.make(), h.make()];
      for (const s of spokes) await s.start();
      spokes.forEach((s, i) => {
        s.send(new Uint8Array([i]), hub.address);
        s.send(new Uint8Array([i + 10]), hub.address);
      });
      await h.settle(() => got.size === 6);
      expect(got.size).toBe(6);
      await h.cleanup();
    });

    it('a closed endpoint neither sends nor receives', async () => {
      const h = harness();
      const a = h.make();
      const b = h.make();
      let atB = 0;
      let atA = 0;
      a.onDatagram(() => atA++);
      b.onDatagram(() => atB++);
      await a.start();
      await b.start();
      await b.close();
      a.send(new Uint8Array([1]), b.address);
      b.send(new Uint8Array([2]), a.address);
      // Nothing can arrive; a control datagram a→a proves time passed.
      let control = false;
      const c = h.make();
      c.onDatagram(() => (control = true));
      await c.start();
      a.send(new Uint8Array([3]), c.address);
      await h.settle(() => control);
      expect(control).toBe(true);
      expect(atB).toBe(0);
      expect(atA).toBe(0);
      await h.cleanup();
    });
  });
}
