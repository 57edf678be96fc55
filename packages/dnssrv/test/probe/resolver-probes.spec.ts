import { describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { ResolverProbes } from '../../src/index.js';
import { ControlledProber } from '../server/support.js';

describe('ResolverProbes', () => {
  it('never waits, probes in the background, one probe per /24 in flight, caches with a TTL', async () => {
    const clock = new ManualClock();
    const prober = new ControlledProber();
    const probes = new ResolverProbes({ prober, clock }, { ttlMs: 1000, failureTtlMs: 100 });
    expect(probes.lookup('192.0.2.1')).toBeUndefined(); // answered at once: unknown
    expect(probes.lookup('192.0.2.77')).toBeUndefined(); // same /24: no second probe
    expect(prober.calls).toEqual(['192.0.2.1']);
    expect(probes.entries()).toEqual([
      { prefix: '192.0.2.0/24', target: '192.0.2.1', inFlight: true },
    ]);
    prober.settle(12.5);
    await clock.advance(0);
    expect(probes.lookup('192.0.2.200')).toBe(12.5);
    expect(prober.calls).toHaveLength(1);
    await clock.advance(1000);
    // Expired: re-probed, and the last RTT is still the answer while the probe runs.
    expect(probes.lookup('192.0.2.200')).toBe(12.5);
    expect(prober.calls).toEqual(['192.0.2.1', '192.0.2.200']);
    expect(probes.lookup('192.0.2.9')).toBe(12.5); // no second probe for the /24
    expect(prober.calls).toHaveLength(2);
    prober.settle(null); // unreachable, cached for the shorter failure TTL
    await clock.advance(0);
    expect(probes.lookup('192.0.2.1')).toBeNull();
    await clock.advance(100);
    probes.lookup('192.0.2.1');
    expect(prober.calls).toHaveLength(3);
    expect(probes.counters).toMatchObject({ started: 3, measured: 1, unreachable: 1 });
  });

  it('an expired RTT is used for one more TTL at most, while re-probes do not answer', async () => {
    const clock = new ManualClock();
    const prober = new ControlledProber();
    const probes = new ResolverProbes({ prober, clock }, { ttlMs: 1000 });
    probes.lookup('198.51.100.1');
    prober.settle(7);
    await clock.advance(0);
    await clock.advance(1500); // expired 500 ms ago: stale but usable, a re-probe starts
    expect(probes.lookup('198.51.100.1')).toBe(7);
    expect(probes.entries()[0]).toMatchObject({ rttMs: 7, inFlight: true });
    await clock.advance(499); // 1,999 ms after the measurement: still usable
    expect(probes.lookup('198.51.100.1')).toBe(7);
    await clock.advance(1); // two TTLs old: unknown, even though the probe is still out
    expect(probes.lookup('198.51.100.1')).toBeUndefined();
    expect(prober.calls).toHaveLength(2);
  });

  it('an expired RTT is not used when no re-probe can start (probing busy)', async () => {
    const clock = new ManualClock();
    const prober = new ControlledProber();
    const probes = new ResolverProbes({ prober, clock }, { ttlMs: 1000, maxInFlight: 1 });
    probes.lookup('198.51.100.1');
    prober.settle(7);
    await clock.advance(0);
    probes.lookup('203.0.113.1'); // takes the only probe slot, and keeps it
    await clock.advance(1500);
    expect(probes.lookup('198.51.100.1')).toBeUndefined(); // expired, and no re-probe running
    expect(probes.counters.skippedBusy).toBe(1);
  });

  it('bounds probes in flight overall and the number of prefixes kept', () => {
    const prober = new ControlledProber();
    const probes = new ResolverProbes(
      { prober, clock: new ManualClock() },
      { maxInFlight: 2, maxEntries: 3 },
    );
    for (let i = 0; i < 5; i++) probes.lookup(`198.51.${i}.1`);
    expect(prober.calls).toHaveLength(2);
    expect(probes.counters.skippedBusy).toBe(3);
    for (let i = 0; i < 10; i++) probes.record(`203.0.${i}.0/24`, `203.0.${i}.1`, 1);
    expect(probes.entries().length).toBeLessThanOrEqual(3);
  });

  it('a prober that throws or rejects counts as unreachable; disabled probing starts nothing', async () => {
    const clock = new ManualClock();
    const probes = new ResolverProbes(
      { clock, prober: { probe: () => Promise.reject(new Error('boom')) } },
      {},
    );
    probes.lookup('192.0.2.1');
    await clock.advance(0);
    expect(probes.lookup('192.0.2.1')).toBeNull();
    const prober = new ControlledProber();
    const off = new ResolverProbes({ prober, clock }, { enabled: false });
    expect(off.lookup('192.0.2.1')).toBeUndefined();
    expect(prober.calls).toHaveLength(0);
  });

  it('probes start at most maxPerSecond overall, whatever prefixes ask; never to non-unicast addresses', async () => {
    const clock = new ManualClock();
    const prober = new ControlledProber();
    const probes = new ResolverProbes({ prober, clock }, { maxPerSecond: 5, maxInFlight: 1000 });
    for (let i = 0; i < 100; i++) probes.lookup(`198.51.${i}.1`); // 100 rotating /24s
    expect(prober.calls).toHaveLength(5);
    expect(probes.entries()).toHaveLength(5); // a skipped lookup creates no row
    await clock.advance(1000);
    for (let i = 100; i < 200; i++) probes.lookup(`10.${i}.0.1`);
    expect(prober.calls).toHaveLength(10);
    expect(probes.counters).toMatchObject({ started: 10, skippedRate: 190 });
    for (const ip of ['0.0.0.0', '224.0.0.1', '255.255.255.255', '::', 'ff02::1']) {
      expect(probes.lookup(ip)).toBeUndefined();
    }
    expect(probes.counters.skippedTarget).toBe(5);
    expect(prober.calls).toHaveLength(10);
  });
});
