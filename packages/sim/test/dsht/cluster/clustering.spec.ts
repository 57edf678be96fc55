/**
 * The clustering algorithm end to end, without the DSHT core: managers exchange advertisements in
 * a gossip loop over simulated topologies (see sim.ts), on a manual clock and seeded randomness.
 */
import { describe, expect, it } from 'vitest';
import { ClusterSim, type LoggedChange } from './sim.js';
import { geoTopology, matrixTopology, purityReport } from '../../../src/index.js';

const MINUTE = 60_000;

/** Changes per (node, level) among `changes`. */
function changesPerNodeLevel(changes: readonly LoggedChange[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const c of changes) {
    const key = `${c.node}@${c.level}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

describe('epidemic clustering on a three-region topology', () => {
  for (const seed of [1, 2, 3]) {
    it(`forms one cluster per metro (level 2) and per region (level 1) within 5 minutes, purity 1.0 (seed ${seed})`, async () => {
      // Region band capped at 50 ms so every same-region pair stays under 60 ms with jitter.
      const topo = geoTopology({
        seed,
        regions: 3,
        metrosPerRegion: 2,
        nodes: 24,
        regionRttMs: [20, 50],
      });
      const sim = new ClusterSim(topo, { seed });
      const metro = (ip: string) => topo.node(ip)!.metro;
      const region = (ip: string) => topo.node(ip)!.region;
      const took = await sim.run(5 * MINUTE, () => sim.matches(2, metro) && sim.matches(1, region));
      expect(took).toBeLessThan(5 * MINUTE);
      const assignment = sim.assignment();
      const l2 = purityReport(2, assignment, topo.baseRttMs, 20);
      const l1 = purityReport(1, assignment, topo.baseRttMs, 60);
      expect(l2).toMatchObject({ clusters: 6, largest: 4, pairs: 36, purity: 1 });
      expect(l1).toMatchObject({ clusters: 3, largest: 8, pairs: 84, purity: 1 });
      // The clusters then hold still, and once the news has spread every node knows its
      // clusters' sizes.
      const before = sim.changes.length;
      await sim.run(10 * MINUTE);
      expect(sim.changes.length).toBe(before);
      for (const m of sim.managers.values()) {
        expect(m.sizeEstimate(2)).toBe(4);
        expect(m.sizeEstimate(1)).toBe(8);
      }
    });
  }

  it('keeps purity 1.0 at both levels on the default geo bands with more nodes', async () => {
    const topo = geoTopology({ seed: 11, regions: 3, metrosPerRegion: 3, nodes: 72 });
    const sim = new ClusterSim(topo, { seed: 11 });
    const metro = (ip: string) => topo.node(ip)!.metro;
    const took = await sim.run(10 * MINUTE, () => sim.matches(2, metro));
    expect(took).toBeLessThan(10 * MINUTE);
    await sim.run(5 * MINUTE);
    const assignment = sim.assignment();
    expect(purityReport(2, assignment, topo.baseRttMs, 20)).toMatchObject({
      clusters: 9,
      purity: 1,
    });
    const l1 = purityReport(1, assignment, topo.baseRttMs, 60);
    expect(l1.purity).toBe(1);
    // Never a cluster across regions; at most a region split where jitter pushes a pair over 60 ms.
    expect(l1.clusters).toBeGreaterThanOrEqual(3);
    expect(l1.clusters).toBeLessThanOrEqual(9);
  });
});

describe('merging, leaving, and stability', () => {
  it('merges two level-2 clusters into one when they come within range', async () => {
    const topo = matrixTopology(
      {
        sites: ['A', 'B'],
        rttMs: [
          [4, 35],
          [35, 4],
        ],
      },
      { seed: 1, nodes: 8 },
    );
    const sim = new ClusterSim(topo, { seed: 1 });
    const site = (ip: string) => topo.node(ip)!.site;
    await sim.run(5 * MINUTE, () => sim.matches(2, site) && sim.matches(1, () => 'all'));
    expect(sim.matches(2, site)).toBe(true); // A and B apart at level 2 ...
    expect(sim.matches(1, () => 'all')).toBe(true); // ... together at level 1
    const oldIds = new Set(sim.ips.map((ip) => sim.manager(ip).clusterOf(2)));
    expect(oldIds.size).toBe(2);

    // The A–B links get faster: 35 ms → 8 ms.
    sim.distort = (a, b, rtt) => (site(a) !== site(b) ? (rtt * 8) / 35 : rtt);
    const from = sim.changes.length;
    const took = await sim.run(5 * MINUTE, () => sim.matches(2, () => 'all'));
    expect(took).toBeLessThan(5 * MINUTE);
    const merged = sim.manager(sim.ips[0]!).clusterOf(2);
    expect(oldIds.has(merged)).toBe(true); // one side joined the other; nobody founded a third
    const moves = sim.changes.slice(from);
    expect(moves).toHaveLength(4);
    for (const c of moves) expect(c).toMatchObject({ level: 2, reason: 'better', founded: false });
    expect(
      purityReport(2, sim.assignment(), (a, b) => sim.distort(a, b, topo.baseRttMs(a, b)), 20),
    ).toMatchObject({ clusters: 1, purity: 1 });
  });

  it('a node moved far away leaves its level-2 (and level-1) cluster; the rest stay', async () => {
    const topo = geoTopology({
      seed: 1,
      regions: 3,
      metrosPerRegion: 2,
      nodes: 24,
      regionRttMs: [20, 50],
    });
    const sim = new ClusterSim(topo, { seed: 1 });
    const metro = (ip: string) => topo.node(ip)!.metro;
    const region = (ip: string) => topo.node(ip)!.region;
    await sim.run(5 * MINUTE, () => sim.matches(2, metro) && sim.matches(1, region));
    expect(sim.matches(2, metro)).toBe(true);

    const x = topo.nodes[0]!.ip;
    const mates = sim.ips.filter((ip) => ip !== x && metro(ip) === metro(x));
    expect(mates).toHaveLength(3);
    const old2 = sim.manager(x).clusterOf(2);
    const old1 = sim.manager(x).clusterOf(1);
    const from = sim.changes.length;
    sim.distort = (a, b, rtt) => (a === x || b === x ? rtt + 150 : rtt);
    const took = await sim.run(
      5 * MINUTE,
      () => sim.manager(x).clusterOf(2) !== old2 && sim.manager(x).clusterOf(1) !== old1,
    );
    expect(took).toBeLessThan(5 * MINUTE);
    const mine = sim.changes.slice(from).filter((c) => c.node === x);
    expect(mine.map((c) => [c.level, c.reason, c.founded]).sort()).toEqual([
      [1, 'misfit', true],
      [2, 'misfit', true],
    ]);
    for (const ip of mates) expect(sim.manager(ip).clusterOf(2)).toBe(old2);
    expect(sim.changes.slice(from).filter((c) => c.node !== x && c.level === 2)).toEqual([]);
    // Its old clusters stop counting it once they hear its new advertisement.
    await sim.run(2 * MINUTE);
    for (const ip of mates) expect(sim.manager(ip).members(2)).not.toContain(x);
  });

  /** Two sites whose RTT (19 ms base, heavy jitter and spikes) straddles the 20 ms level-2 threshold. */
  function borderline(manager = {}) {
    const topo = matrixTopology(
      {
        sites: ['A', 'B'],
        rttMs: [
          [4, 19],
          [19, 4],
        ],
      },
      { seed: 7, nodes: 8, jitter: 0.3, spikeProbability: 0.05, spikeMs: 30 },
    );
    return new ClusterSim(topo, { seed: 7, manager });
  }

  it('membership does not flap under jitter around the threshold', async () => {
    const sim = borderline();
    await sim.run(10 * MINUTE);
    const from = sim.changes.length;
    await sim.run(30 * MINUTE);
    const window = sim.changes.slice(from);
    for (const n of changesPerNodeLevel(window).values()) expect(n).toBeLessThanOrEqual(1);
    expect(window.length).toBeLessThanOrEqual(1);
  });

  it('(control) without hysteresis the same topology flaps', async () => {
    const sim = borderline({
      leaveMargin: 0,
      confirmTicks: 1,
      minDwellMs: 0,
      minPeerSamples: 1,
      minMembersSampled: 1,
      rtt: { window: 1 },
    });
    await sim.run(10 * MINUTE);
    const from = sim.changes.length;
    await sim.run(30 * MINUTE);
    const counts = [...changesPerNodeLevel(sim.changes.slice(from)).values()];
    expect(Math.max(...counts)).toBeGreaterThanOrEqual(3);
  });
});
