/**
 * Hierarchical get and put across three levels, with a fixed cluster policy (metro = level 2,
 * region = level 1, by address 10.<region>.<metro>.<n>: `fixedClusters`) so the test isolates the
 * DSHT's level logic from cluster formation (tested in cluster/). The DNS directory over the same
 * layout is tested in @coral/node (test/adapters/node-directory.spec.ts).
 */
import { describe, expect, it } from 'vitest';
import { keyFromName, toHex, type ClusterPolicy, type LookupEvent } from '@coral/dsht';
import { SimFleet, fixedClusters } from '../../src/index.js';

// Metro = level 2, region = level 1, by address 10.<region>.<metro>.<n>.
const layout = fixedClusters({ regions: 3, metros: 2, perMetro: 8 });
const { ipOf, latencyMs: latency, parts } = layout;
const staticPolicy = (ip: string): ClusterPolicy => layout.policyFor(ip);

describe('hierarchical get and put', () => {
  it('finds a key at level 2 in its metro and at level 0 across regions, each level continuing from the previous', async () => {
    const fleet = new SimFleet({
      nodes: layout.nodes,
      seed: 2,
      ipOf,
      latencyMs: latency,
      dsht: { levels: 3, shortcutTtlMs: 0, pathCacheMinHops: 0 },
      clusterFor: (i) => staticPolicy(ipOf(i)),
    });
    await fleet.start();
    // Level tables hold only cluster members.
    for (const node of fleet.nodes) {
      const [r, m] = parts(node.contact.ip);
      expect(node.routes(2).every((c) => parts(c.ip)[1] === m)).toBe(true);
      expect(node.routes(1).every((c) => parts(c.ip)[0] === r)).toBe(true);
      expect(node.routes(2).length).toBeGreaterThan(0);
    }
    // The snapshot shows the clusters per level (from the policy's adverts) and RTT estimates.
    const snap = fleet.nodes[6]!.snapshot(); // 10.1.1.2, a node that joined (and so sent requests)
    expect(snap.clusters).toEqual([
      { level: 1, clusterId: Buffer.from('r1').toString('hex'), size: 16, age: 60 },
      { level: 2, clusterId: Buffer.from('m1.1').toString('hex'), size: 8, age: 60 },
    ]);
    expect(snap.levels.map((l) => l.level)).toEqual([0, 1, 2]);
    expect(snap.rtt.length).toBeGreaterThan(0);
    expect(JSON.parse(JSON.stringify(snap))).toEqual(snap);
    const inMetro = (m: string) => fleet.nodes.filter((n) => parts(n.contact.ip)[1] === m);
    const [publisher, sameMetro] = inMetro('1.1');
    const [sameRegion] = inMetro('1.2');
    const [far] = inMetro('3.1');
    const key = keyFromName('url:http://example.com/hier');
    const value = new TextEncoder().encode('in metro 1.1');
    const put = await fleet.run(publisher!.put(key, value, 600));
    expect(put.stored.map((s) => s.level)).toEqual([2, 1, 0]);
    // Stored at level 2 inside the metro, at level 1 inside the region.
    expect(parts(put.stored[0]!.contact.ip)[1]).toBe('1.1');
    expect(parts(put.stored[1]!.contact.ip)[0]).toBe('1');

    const near = await fleet.run(sameMetro!.get(key));
    expect(near.values).toEqual([value]);
    expect(near.stats.level).toBe(2);
    const mid = await fleet.run(sameRegion!.get(key));
    expect(mid.stats.level).toBe(1);

    // From another region: levels 2 and 1 miss, level 0 answers; each level's walk starts at the
    // closest node the previous level reached.
    const events: LookupEvent<{ values: unknown[] }>[] = [];
    await fleet.run(
      (async () => {
        for await (const e of far!.getEvents(key)) events.push(e);
      })(),
    );
    const finished = events.filter((e) => e.type === 'FINISHED');
    expect(finished.map((e) => e.level)).toEqual([2, 1, 0]);
    expect(finished[2]!.type === 'FINISHED' && finished[2]!.stoppedAt).toBeTruthy();
    for (const level of [1, 0]) {
      const prev = finished.find((e) => e.level === level + 1)!;
      const firstQuery = events.find((e) => e.type === 'SEND_QUERY' && e.level === level)!;
      expect(prev.type === 'FINISHED' && prev.visited.length).toBeGreaterThan(0);
      const reached = prev.type === 'FINISHED' ? prev.visited[0]!.contact : undefined;
      expect(firstQuery.type === 'SEND_QUERY' && toHex(firstQuery.to.id)).toBe(toHex(reached!.id));
    }
    const got = await fleet.run(far!.get(key));
    expect(got.stats.level).toBe(0);
    expect(got.values).toEqual([value]);
  });

  it('skips a cluster level where the key is already loaded', async () => {
    const fleet = new SimFleet({
      nodes: layout.nodes,
      seed: 3,
      ipOf,
      latencyMs: latency,
      dsht: { levels: 3, store: { loadedStores: 2, fullValues: 2 } },
      clusterFor: (i) => staticPolicy(ipOf(i)),
    });
    await fleet.start();
    const metro = fleet.nodes.filter((n) => parts(n.contact.ip)[1] === '2.1');
    const key = keyFromName('hot-in-metro');
    const results = [];
    for (const [i, n] of metro.entries()) {
      results.push(await fleet.run(n.put(key, new TextEncoder().encode(`v${i}`), 600)));
    }
    expect(results.some((r) => r.skippedLevels.includes(2))).toBe(true);
    expect(
      results.every((r) => r.stored.some((s) => s.level === 0) || r.skippedLevels.length === 0),
    ).toBe(true);
  });
});
