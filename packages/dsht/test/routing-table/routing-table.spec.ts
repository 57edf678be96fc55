import { describe, expect, it } from 'vitest';
import { ManualClock, SeededRandom } from '@coral/testkit';
import type { Contact } from '../../src/contact.js';
import { compareDistance, fromHex, toHex } from '../../src/id/id.js';
import { RoutingTable } from '../../src/routing-table/routing-table.js';

const SELF = fromHex('0'.repeat(40));
const c = (hex: string, port = 1): Contact => ({
  id: fromHex(hex.padEnd(40, '0')),
  ip: '10.0.0.1',
  port,
});

describe('RoutingTable', () => {
  it('places fixed ids in the bucket of their shared prefix length', () => {
    const clock = new ManualClock();
    const t = new RoutingTable({ clock }, { selfId: SELF, k: 2 });
    expect(t.add(c('80'))).toBe('added'); // bucket 0
    expect(t.add(c('c0'))).toBe('added'); // bucket 0
    expect(t.add(c('40'))).toBe('added'); // bucket 1
    expect(t.add(c('01'))).toBe('added'); // bucket 7
    expect(t.add(c('0001'))).toBe('added'); // bucket 15
    expect(t.add({ ...c('00'), id: SELF })).toBe('self');
    expect(t.shape()).toEqual({ 0: 2, 1: 1, 7: 1, 15: 1 });
    expect(t.size).toBe(5);
    expect(t.closest(fromHex('4'.padEnd(40, '1')), 3).map((x) => toHex(x.id).slice(0, 4))).toEqual([
      '4000',
      '0100',
      '0001',
    ]);
  });

  it('closest() agrees with a brute-force sort (random tables and targets)', () => {
    const rng = new SeededRandom(8);
    for (let round = 0; round < 30; round++) {
      const self = rng.bytes(new Uint8Array(20));
      const t = new RoutingTable({ clock: new ManualClock() }, { selfId: self, k: 4 });
      const all: Contact[] = [];
      for (let i = 0; i < 200; i++) {
        const id = rng.bytes(new Uint8Array(20));
        // Half the ids near self, so deep buckets fill too.
        if (i % 2 === 0) id.set(self.subarray(0, 1 + rng.int(3)));
        const contact = { id, ip: '10.0.0.1', port: i + 1 };
        if (t.add(contact) === 'added') all.push(contact);
      }
      for (let q = 0; q < 10; q++) {
        const target = rng.bytes(new Uint8Array(20));
        if (q % 3 === 0) target.set(self.subarray(0, 2));
        for (const n of [1, 3, 8, 40]) {
          const want = [...all].sort((a, b) => compareDistance(a.id, b.id, target)).slice(0, n);
          expect(t.closest(target, n).map((c) => toHex(c.id))).toEqual(
            want.map((c) => toHex(c.id)),
          );
        }
      }
    }
  });

  it('closest() and get() stay right while contacts move, leave and are replaced', () => {
    const rng = new SeededRandom(9);
    const self = rng.bytes(new Uint8Array(20));
    const t = new RoutingTable(
      { clock: new ManualClock() },
      { selfId: self, k: 3, maxFailures: 1 },
    );
    const known = new Map<string, Contact>();
    for (let step = 0; step < 2000; step++) {
      const ids = [...known.values()];
      const r = rng.int(10);
      if (r < 5 || ids.length === 0) {
        const id = rng.bytes(new Uint8Array(20));
        if (step % 2 === 0) id.set(self.subarray(0, 1 + rng.int(2)));
        const c = { id, ip: '10.0.0.1', port: step + 1 };
        t.add(c);
        known.set(toHex(id), c);
      } else if (r < 8) {
        t.add(ids[rng.int(ids.length)]!); // heard again: to the bucket's tail
      } else {
        const c = ids[rng.int(ids.length)]!;
        if (r === 8) t.remove(c.id);
        else t.recordFailure(c.id); // leaves at once (maxFailures 1); a replacement moves up
      }
    }
    const held = t.all().map((e) => e.contact);
    for (const c of held) expect(t.get(c.id)?.contact).toBe(c);
    for (const c of known.values()) if (!held.includes(c)) expect(t.get(c.id)).toBeUndefined();
    for (let q = 0; q < 20; q++) {
      const target = rng.bytes(new Uint8Array(20));
      if (q % 2 === 0) target.set(self.subarray(0, 2));
      for (const n of [1, 5, 30]) {
        const want = [...held].sort((a, b) => compareDistance(a.id, b.id, target)).slice(0, n);
        expect(t.closest(target, n).map((c) => toHex(c.id))).toEqual(want.map((c) => toHex(c.id)));
      }
    }
  });

  it('evicts the least recently seen contact only after its ping fails', async () => {
    const clock = new ManualClock();
    const pinged: string[] = [];
    let alive = true;
    const t = new RoutingTable(
      {
        clock,
        ping: async (x) => {
          pinged.push(toHex(x.id).slice(0, 2));
          return alive;
        },
      },
      { selfId: SELF, k: 2, pingStaleMs: 1000 },
    );
    t.add(c('80'));
    await clock.advance(10);
    t.add(c('90'));
    // Oldest was seen 10 ms ago: fresh, so no ping; newcomer waits as a replacement.
    expect(t.add(c('a0'))).toBe('pending');
    expect(pinged).toEqual([]);
    await clock.advance(2000);
    expect(t.add(c('b0'))).toBe('pending');
    expect(pinged).toEqual(['80']);
    await clock.advance(0);
    // The ping succeeded: 80 stays (now most recent), b0 stays out.
    expect(t.has(c('80').id)).toBe(true);
    expect(t.has(c('b0').id)).toBe(false);
    expect(t.all().map((e) => toHex(e.contact.id).slice(0, 2))).toEqual(['90', '80']);
    await clock.advance(2000);
    alive = false;
    t.add(c('b0'));
    await clock.advance(0);
    expect(pinged).toEqual(['80', '90']);
    // 90 failed its ping: evicted, the freshest replacement (b0) takes its place.
    expect(t.has(c('90').id)).toBe(false);
    expect(t.has(c('b0').id)).toBe(true);
    expect(t.shape()).toEqual({ 0: 2 });
  });

  it('drops contacts after repeated failures and promotes a replacement', () => {
    const clock = new ManualClock();
    const t = new RoutingTable({ clock }, { selfId: SELF, k: 1, maxFailures: 2 });
    t.add(c('80'));
    t.add(c('90'));
    t.recordFailure(c('80').id);
    expect(t.has(c('80').id)).toBe(true);
    t.recordFailure(c('80').id);
    expect(t.has(c('80').id)).toBe(false);
    expect(t.has(c('90').id)).toBe(true);
  });

  it('updates lastSeen and merged service info on traffic', async () => {
    const clock = new ManualClock(1000);
    const t = new RoutingTable({ clock }, { selfId: SELF });
    t.add(c('80'));
    await clock.advance(500);
    expect(t.add({ ...c('80'), httpPort: 8090 })).toBe('updated');
    expect(t.get(c('80').id)?.lastSeen).toBe(1500);
    expect(t.get(c('80').id)?.contact.httpPort).toBe(8090);
    t.add(c('80'));
    expect(t.get(c('80').id)?.contact.httpPort).toBe(8090);
  });

  it('names stale buckets for refresh', async () => {
    const clock = new ManualClock();
    const t = new RoutingTable({ clock }, { selfId: SELF, refreshMs: 60_000 });
    t.add(c('80'));
    t.add(c('01'));
    await clock.advance(30_000);
    t.add(c('40'));
    expect(t.staleBuckets()).toEqual([]);
    await clock.advance(30_000);
    expect(t.staleBuckets()).toEqual([0, 2, 3, 4, 5, 6, 7]);
    t.touchBucket(0);
    expect(t.staleBuckets()).not.toContain(0);
  });
});

describe('RoutingTable: identities per IP', () => {
  it('keeps at most maxIdsPerIp contacts per IP, replacements included', () => {
    const clock = new ManualClock();
    const t = new RoutingTable({ clock }, { selfId: SELF, k: 2, maxIdsPerIp: 1 });
    const at = (hex: string, ip: string): Contact => ({ ...c(hex), ip });
    expect(t.add(at('80', '10.0.0.1'))).toBe('added');
    expect(t.add(at('40', '10.0.0.1'))).toBe('refused');
    expect(t.add(at('c0', '10.0.0.2'))).toBe('added');
    expect(t.add(at('a0', '10.0.0.3'))).toBe('pending'); // bucket 0 full: a replacement
    expect(t.add(at('01', '10.0.0.3'))).toBe('refused'); // the replacement holds 10.0.0.3
    expect(t.add(at('80', '10.0.0.1'))).toBe('updated');
    // Removing the replacement frees its IP.
    expect(t.remove(at('a0', '10.0.0.3').id)).toBe(true);
    expect(t.add(at('01', '10.0.0.3'))).toBe('added');
    // IPv6 counts per /64.
    expect(t.add(at('02', '2001:db8::1'))).toBe('added');
    expect(t.add(at('03', '2001:db8::2'))).toBe('refused');
    expect(
      t
        .all()
        .map((e) => e.contact.ip)
        .sort(),
    ).toEqual(['10.0.0.1', '10.0.0.2', '10.0.0.3', '2001:db8::1']);
  });
});
