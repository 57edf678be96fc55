/**
 * The cluster manager wired into real DSHT nodes (DshtClusterBinding) on the simulated network with
 * a geographic topology: the clusters form from the nodes' own RPC traffic and probes, the level
 * routing tables follow them, and gets are answered at the most local level that has the value.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { type DshtClusterBinding, keyFromName, peerKey } from '@coral/dsht/internal';
import { SimFleet, geoTopology, purityReport, type GeoTopology } from '../../../src/index.js';

const MINUTE = 60_000;

function sleep(fleet: SimFleet, ms: number): Promise<void> {
  return fleet.run(new Promise<void>((resolve) => fleet.clock.setTimeout(resolve, ms)));
}

describe('clustering inside a DSHT fleet on a geo topology', () => {
  let topo: GeoTopology;
  let bindings: DshtClusterBinding[];
  let fleet: SimFleet;
  const metroOf = (i: number) => topo.nodes[i]!.metro;
  const regionOf = (i: number) => topo.nodes[i]!.region;

  beforeAll(async () => {
    topo = geoTopology({
      seed: 1,
      regions: 3,
      metrosPerRegion: 2,
      nodes: 48,
      regionRttMs: [20, 50],
    });
    fleet = new SimFleet({
      nodes: topo.nodes.length,
      seed: 1,
      latencyMs: topo.latencyMs,
      ipOf: (i) => topo.nodes[i]!.ip,
      dsht: { levels: 3, clustering: {} },
    });
    bindings = fleet.nodes.map((node) => node.clustering!);
    await fleet.start();
    await sleep(fleet, 6 * MINUTE);
  });

  it('forms one cluster per metro at level 2 and per region at level 1, purity 1.0', () => {
    const assignment = new Map(
      topo.nodes.map((n, i) => [n.ip, [0, 1, 2].map((l) => bindings[i]!.manager.clusterOf(l))]),
    );
    expect(purityReport(2, assignment, topo.baseRttMs, 20)).toMatchObject({
      clusters: 6,
      purity: 1,
    });
    expect(purityReport(1, assignment, topo.baseRttMs, 60)).toMatchObject({
      clusters: 3,
      purity: 1,
    });
  });

  it('keeps only cluster members in the level routing tables', () => {
    let level2 = 0;
    let level1 = 0;
    fleet.nodes.forEach((node, i) => {
      for (const c of node.routes(2)) {
        level2++;
        expect(topo.node(c.ip)!.metro).toBe(metroOf(i));
      }
      for (const c of node.routes(1)) {
        level1++;
        expect(topo.node(c.ip)!.region).toBe(regionOf(i));
      }
    });
    expect(level2).toBeGreaterThan(fleet.nodes.length); // more than one contact per node
    expect(level1).toBeGreaterThan(level2);
    // The binding reports peers under their ip:port.
    expect(bindings[0]!.manager.members(2).every((k) => /^10\.1\.1\.\d+:4000$/.test(k))).toBe(true);
    expect(peerKey({ ip: '::1', port: 1 })).toBe('[::1]:1');
    // Probes and explorations happened, and the probes stayed within their budget.
    for (const b of bindings) {
      expect(b.explorations).toBeGreaterThan(0);
      expect(b.lookupsFailed).toBe(0);
      expect(b.probesSent).toBeLessThanOrEqual(((6 * MINUTE) / 5_000) * 2 + 10);
    }
  });

  it('answers a get at level 2 in the same metro, level 1 in the same region, level 0 elsewhere', async () => {
    const inMetro = (m: string) => topo.nodes.flatMap((n, i) => (n.metro === m ? [i] : []));
    const [publisher, sameMetro] = inMetro('r1m1');
    const [sameRegion] = inMetro('r1m2');
    const [farAway] = inMetro('r3m1');
    const key = keyFromName('url:http://example.com/cluster-test');
    const value = new TextEncoder().encode('held in r1m1');
    const put = await fleet.run(fleet.nodes[publisher!]!.put(key, value, 600));
    expect(put.stored.map((s) => s.level).sort()).toEqual([0, 1, 2]);
    for (const [i, level] of [
      [sameMetro!, 2],
      [sameRegion!, 1],
      [farAway!, 0],
    ] as const) {
      const got = await fleet.run(fleet.nodes[i]!.get(key));
      expect(got.values).toEqual([value]);
      expect(got.stats.level).toBe(level);
    }
  });
});
