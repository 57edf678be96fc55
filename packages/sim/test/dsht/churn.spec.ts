/**
 * Churn on a clustered fleet (issue 3): 300 DSHT nodes with the clustering binding on a simulated
 * three-region geographic topology form their clusters, publish keys, then 20 % of the fleet
 * leaves abruptly. After the surviving publishers re-put, gets from survivors must still find
 * ≥ 99 % of the keys and the clusters must stay pure (≥ 0.95 at levels 1 and 2).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { SeededRandom, shuffle } from '@coral/testkit';
import { DEFAULT_LEVEL_THRESHOLDS_MS, type DshtClusterBinding, keyFromName } from '@coral/dsht';
import { SimFleet, geoTopology, purityReport, type GeoTopology } from '../../src/index.js';

const MINUTE = 60_000;
const NODES = 300;
const KEYS = 60;
const PUBLISHERS_PER_KEY = 3;

function sleep(fleet: SimFleet, ms: number): Promise<void> {
  return fleet.run(new Promise<void>((resolve) => fleet.clock.setTimeout(resolve, ms)));
}

async function batched<T, R>(
  fleet: SimFleet,
  items: T[],
  size: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += size) {
    out.push(...(await fleet.run(Promise.all(items.slice(i, i + size).map(fn)))));
  }
  return out;
}

describe('churn: 20% of a 300-node clustered fleet leaves abruptly', () => {
  let topo: GeoTopology;
  let bindings: DshtClusterBinding[];
  let fleet: SimFleet;
  let alive: number[];
  let publishers: number[][];
  const rng = new SeededRandom(2026);
  const key = (k: number) => keyFromName(`churn-${k}`);
  const holder = (i: number) => new TextEncoder().encode(`holder-${i}`);
  const purity = (level: 1 | 2) =>
    purityReport(
      level,
      new Map(
        alive.map((i) => [
          topo.nodes[i]!.ip,
          [0, 1, 2].map((l) => bindings[i]!.manager.clusterOf(l)),
        ]),
      ),
      topo.baseRttMs,
      DEFAULT_LEVEL_THRESHOLDS_MS[level]!,
    );

  beforeAll(async () => {
    topo = geoTopology({ seed: 3, regions: 3, metrosPerRegion: 3, nodes: NODES });
    fleet = new SimFleet({
      nodes: NODES,
      seed: 3,
      latencyMs: topo.latencyMs,
      ipOf: (i) => topo.nodes[i]!.ip,
      dsht: { levels: 3, clustering: {} },
    });
    bindings = fleet.nodes.map((node) => node.clustering!);
    await fleet.start();
    await sleep(fleet, 5 * MINUTE);
    alive = [...Array(NODES).keys()];

    // Every key has a few publishers spread over the fleet.
    publishers = Array.from({ length: KEYS }, () =>
      Array.from({ length: PUBLISHERS_PER_KEY }, () => rng.int(NODES)),
    );
    const puts = publishers.flatMap((ps, k) => ps.map((n) => ({ n, k })));
    await batched(fleet, puts, 100, ({ n, k }) =>
      fleet.nodes[n]!.put(key(k), holder(n), 3600).catch(() => undefined),
    );
  }, 280_000);

  it('clusters are pure before the churn', () => {
    expect(purity(1).purity).toBeGreaterThanOrEqual(0.95);
    expect(purity(2).purity).toBeGreaterThanOrEqual(0.95);
  });

  it('after 20% leave and the publishers re-put, ≥ 99% of gets succeed and purity stays ≥ 0.95', async () => {
    const gone = new Set(shuffle([...Array(NODES).keys()], rng).slice(0, NODES / 5));
    await fleet.run(Promise.all([...gone].map((i) => fleet.nodes[i]!.stop())));
    alive = [...Array(NODES).keys()].filter((i) => !gone.has(i));
    await sleep(fleet, 3 * MINUTE);

    // Surviving publishers refresh what they hold, as the proxies' re-announcements do.
    const reputs = publishers.flatMap((ps, k) =>
      ps.filter((n) => !gone.has(n)).map((n) => ({ n, k })),
    );
    await batched(fleet, reputs, 100, ({ n, k }) =>
      fleet.nodes[n]!.put(key(k), holder(n), 3600).catch(() => undefined),
    );
    // Keys that still have a live publisher: their content still exists somewhere in the fleet.
    const liveKeys = publishers.flatMap((ps, k) => (ps.some((n) => !gone.has(n)) ? [k] : []));
    expect(liveKeys.length).toBeGreaterThan(KEYS * 0.9);

    const probes = Array.from({ length: 600 }, () => ({
      n: alive[rng.int(alive.length)]!,
      k: liveKeys[rng.int(liveKeys.length)]!,
    }));
    const found = await batched(fleet, probes, 100, ({ n, k }) =>
      fleet.nodes[n]!.get(key(k)).then(
        (r) => r.values.length > 0,
        () => false,
      ),
    );
    const success = found.filter(Boolean).length / found.length;
    expect(success).toBeGreaterThanOrEqual(0.99);
    expect(purity(1).purity).toBeGreaterThanOrEqual(0.95);
    expect(purity(2).purity).toBeGreaterThanOrEqual(0.95);
  }, 280_000);
});
