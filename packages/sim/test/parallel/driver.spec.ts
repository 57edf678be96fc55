/**
 * The two FleetDrivers the simulation benchmark uses: the in-process SimFleet behind the driver
 * interface (`--workers 1`) and the parallel fleet's delayed operations and clock moves, run with
 * the shards in this thread (the worker-thread path is parallel-fleet.spec.ts's).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { keyFromName } from '@coral/dsht';
import { LocalFleetDriver, type FleetDriver } from '../../src/parallel/driver.js';
import { ParallelFleet } from '../../src/parallel/parallel-fleet.js';
import { SIM_EPOCH } from '../../src/parallel/shard.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const KEYS = ['3c'.repeat(32)];

async function exercise(fleet: FleetDriver) {
  await fleet.start();
  const key = keyFromName('driver-key');
  const start = fleet.now();
  const puts = await fleet.run(
    [3, 9, 17].map((node, i) => ({
      kind: 'put' as const,
      node,
      key,
      value: enc(`holder-${node}`),
      ttl: 600,
      delayMs: 5_000 * (i + 1),
    })),
  );
  const afterPuts = fleet.now();
  await fleet.advanceTo(start + 60_000);
  const gets = await fleet.run([{ kind: 'get', node: 30, key }]);
  const root = await fleet.closest(key);
  return {
    puts: puts.map((r) => r.ok),
    delayed: afterPuts - start,
    advanced: fleet.now() >= start + 60_000,
    values: (gets[0]!.values ?? []).map((v) => new TextDecoder().decode(v)).sort(),
    holders: await fleet.holders(key),
    rootStored: (await fleet.slotCounters(root, `0:${Buffer.from(key).toString('hex')}`)).accepted,
    tables: (await fleet.tableSizes(0)).length,
    sent: (await fleet.stats()).sent,
    trust: (await fleet.trust()).sealed > 0,
  };
}

describe('FleetDriver', () => {
  const fleets: FleetDriver[] = [];
  afterAll(async () => {
    await Promise.all(fleets.map((f) => f.close()));
  });

  for (const [name, make] of [
    ['LocalFleetDriver (SimFleet)', () => new LocalFleetDriver({ nodes: 40, seed: 3, keys: KEYS })],
    [
      'ParallelFleet, 3 shards in this thread',
      () => new ParallelFleet({ nodes: 40, seed: 3, keys: KEYS, workers: 3, threads: false }),
    ],
  ] as const) {
    it(`${name}: delayed puts, a clock move, a get, the figures`, async () => {
      const fleet = make();
      fleets.push(fleet);
      expect(fleet.now()).toBe(SIM_EPOCH);
      const f = await exercise(fleet);
      expect(f.puts).toEqual([true, true, true]);
      // The last put started 15 s in and took at least one round trip.
      expect(f.delayed).toBeGreaterThan(15_000);
      expect(f.advanced).toBe(true);
      expect(f.values).toEqual(['holder-17', 'holder-3', 'holder-9']);
      expect(f.holders).toBeGreaterThanOrEqual(1);
      expect(f.rootStored).toBeGreaterThanOrEqual(1);
      expect(f.tables).toBe(40);
      expect(f.sent).toBeGreaterThan(100);
      expect(f.trust).toBe(true);
    });
  }

  it('moves the parallel fleet to exactly the time asked, no shard past it', async () => {
    const fleet = new ParallelFleet({ nodes: 12, seed: 3, workers: 2, threads: false });
    fleets.push(fleet);
    await fleet.start();
    const target = fleet.now() + 12_345.678;
    await fleet.advanceTo(target);
    expect(fleet.now()).toBe(target);
    for (const t of await fleet.shardTimes()) expect(t).toBeLessThanOrEqual(target);
    await fleet.advanceTo(target - 1);
    expect(fleet.now()).toBe(target);
  });
});
