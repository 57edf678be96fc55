import { describe, expect, it } from 'vitest';
import { ManualClock, SeededRandom } from '@coral/testkit';
import type { Transport } from '@coral/dsht';
import { SimNetwork, uniformRttLatency } from '../../src/network/sim-network.js';
import { SimClock } from '../../src/clock/sim-clock.js';
// The contract every Transport meets, shared with @coral/dsht's UDP transport tests.
import { transportContract } from '../../../dsht/test/transport/contract.js';

transportContract('SimNetwork', () => {
  const clock = new ManualClock();
  const net = new SimNetwork({ clock, random: new SeededRandom(1) });
  let n = 0;
  const made: Transport[] = [];
  return {
    make: () => {
      n++;
      const t = net.createTransport(`10.0.0.${n}`, 4000);
      made.push(t);
      return t;
    },
    settle: async (done) => {
      for (let i = 0; i < 100 && !done(); i++) await clock.advance(50);
    },
    cleanup: async () => {
      for (const t of made) await t.close();
    },
  };
});

describe('SimNetwork', () => {
  it('delays by the latency model, on the manual clock', async () => {
    const clock = new ManualClock();
    const net = new SimNetwork(
      { clock, random: new SeededRandom(1) },
      { latencyMs: (a, b) => (a < b ? 30 : 70) },
    );
    const a = net.createTransport('10.0.0.1', 1);
    const b = net.createTransport('10.0.0.2', 1);
    const times: number[] = [];
    b.onDatagram(() => times.push(clock.now()));
    a.onDatagram(() => times.push(clock.now()));
    await a.start();
    await b.start();
    a.send(new Uint8Array([1]), b.address);
    b.send(new Uint8Array([1]), a.address);
    await clock.advance(29);
    expect(times).toEqual([]);
    await clock.advance(100);
    expect(times).toEqual([30, 70]);
  });

  it('loses about lossRate of datagrams, deterministically from the seed', async () => {
    const run = async (): Promise<number> => {
      const clock = new ManualClock();
      const net = new SimNetwork({ clock, random: new SeededRandom(7) }, { lossRate: 0.2 });
      const a = net.createTransport('10.0.0.1', 1);
      const b = net.createTransport('10.0.0.2', 1);
      let got = 0;
      b.onDatagram(() => got++);
      await a.start();
      await b.start();
      for (let i = 0; i < 1000; i++) a.send(new Uint8Array([1]), b.address);
      await clock.advance(1000);
      expect(net.stats.lost + got).toBe(1000);
      return got;
    };
    const first = await run();
    expect(first).toBeGreaterThan(750);
    expect(first).toBeLessThan(850);
    expect(await run()).toBe(first);
  });

  it('partitions drop traffic between groups until healed', async () => {
    const clock = new ManualClock();
    const net = new SimNetwork({ clock, random: new SeededRandom(1) });
    const a = net.createTransport('10.0.0.1', 1);
    const b = net.createTransport('10.0.0.2', 1);
    let got = 0;
    b.onDatagram(() => got++);
    await a.start();
    await b.start();
    net.partition(['10.0.0.1'], ['10.0.0.2']);
    a.send(new Uint8Array([1]), b.address);
    await clock.advance(1000);
    expect(got).toBe(0);
    expect(net.stats.partitioned).toBe(1);
    net.heal();
    a.send(new Uint8Array([1]), b.address);
    await clock.advance(1000);
    expect(got).toBe(1);
  });

  it('default latency: stable RTT per pair within 20-200 ms', () => {
    const lat = uniformRttLatency(20, 200, 5);
    for (let i = 1; i < 50; i++) {
      const one = lat('10.0.0.1', `10.0.1.${i}`);
      expect(one * 2).toBeGreaterThanOrEqual(20);
      expect(one * 2).toBeLessThanOrEqual(200);
      expect(lat(`10.0.1.${i}`, '10.0.0.1')).toBe(one);
    }
    expect(() => {
      const clock = new ManualClock();
      const net = new SimNetwork({ clock, random: new SeededRandom(1) });
      net.attach(net.createTransport('10.0.0.1', 1));
      net.attach(net.createTransport('10.0.0.1', 1));
    }).toThrow(expect.objectContaining({ code: 'DSHT_ERR_TRANSPORT' }));
  });
});

describe('uniformRttLatency’s minimum (a parallel fleet’s window)', () => {
  it('is half the smallest RTT and bounds every pair of distinct IPs', () => {
    const lat = uniformRttLatency(20, 200, 3);
    expect(lat.minOneWayMs).toBe(10);
    let min = Infinity;
    for (let a = 1; a < 60; a++) {
      for (let b = a + 1; b < 60; b++) min = Math.min(min, lat(`10.0.0.${a}`, `10.0.1.${b}`));
    }
    expect(min).toBeGreaterThanOrEqual(10);
    expect(min).toBeLessThan(12);
  });

  it('sends a datagram for a node of another shard through the remote route, not the clock', async () => {
    const clock = new SimClock(0);
    const net = new SimNetwork({ clock, random: new SeededRandom(1) });
    const taken: Array<[string, number]> = [];
    net.remote = (data, _from, to, at) => {
      if (to.ip !== '10.0.0.9') return false;
      taken.push([to.ip, at]);
      return true;
    };
    const a = net.createTransport('10.0.0.1', 4000);
    const b = net.createTransport('10.0.0.2', 4000);
    const got: number[] = [];
    b.onDatagram(() => got.push(clock.now()));
    await a.start();
    await b.start();
    a.send(new Uint8Array([1]), { ip: '10.0.0.9', port: 4000 });
    a.send(new Uint8Array([2]), b.address);
    expect(taken).toEqual([['10.0.0.9', net.latencyMs('10.0.0.1', '10.0.0.9')]]);
    await clock.advance(1000);
    expect(got).toEqual([net.latencyMs('10.0.0.1', '10.0.0.2')]);
    expect(net.stats.sent).toBe(2);
  });
});
