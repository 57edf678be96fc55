/**
 * What a worker answers from: the snapshot of a real `DshtDirectory` (over a simulated fleet),
 * through the protocol's check and a structured clone, answers the DNS server's synchronous calls
 * as the directory itself does.
 */
import { describe, expect, it } from 'vitest';
import { ReplicaNodeDirectory, snapshotDirectory } from '@coral/dnssrv';
import { SimFleet } from '@coral/sim';
import { DshtDirectory } from '../../src/adapters/node-directory.js';
import { decodeToWorker } from '../../src/workers/protocol.js';

const ipOf = (i: number): string => (i < 10 ? `10.1.1.${i + 1}` : `10.2.1.${i - 9}`);
const ids = (list: { id: string }[]) => list.map((n) => n.id).sort();

describe('a replica of a DshtDirectory', () => {
  it('passes the protocol check and answers as the directory does', async () => {
    const fleet = new SimFleet({
      nodes: 20,
      seed: 4,
      ipOf,
      dsht: { hints: true, service: { httpPort: 8090, dnsPort: 53, region: 'r1' } },
    });
    await fleet.start();
    const dir = new DshtDirectory({ dsht: fleet.nodes[3]! });
    const m = decodeToWorker(
      structuredClone({ type: 'directory', seq: 1, snapshot: snapshotDirectory(dir) }),
    );
    if (m.type !== 'directory') throw new Error('not a directory message');
    const replica = new ReplicaNodeDirectory(
      { hinted: (t, c, o) => fleet.run(dir.hinted(t, c, o)) },
      m.snapshot,
    );
    expect(replica.self()).toEqual(dir.self());
    expect(replica.levelThresholdsMs).toEqual(dir.levelThresholdsMs);
    const members = dir.random(100);
    expect(members.length).toBeGreaterThan(10);
    expect(ids(replica.random(100))).toEqual(ids(members));
    for (const level of [1, 2]) {
      expect(ids(replica.cluster(level, 100))).toEqual(ids(dir.cluster(level, 100)));
      expect(replica.cluster(level, 100)[0]).toEqual(dir.cluster(level, 100)[0]);
    }
    expect(ids(replica.inRegion('r1', 100))).toEqual(ids(dir.inRegion('r1', 100)));
    for (const n of [...members, dir.self()]) {
      expect(replica.isLive(n.id)).toBe(true);
      expect(replica.get(n.id)).toEqual(dir.get(n.id));
    }
    expect(replica.isLive('00'.repeat(20))).toBe(false);
    const hinted = await replica.hinted({ ip: '10.1.1.77' }, 5);
    expect(hinted.prefix).toBe(24);
  });
});
