import { describe, expect, it } from 'vitest';
import {
  ReplicaNodeDirectory,
  sameSnapshot,
  snapshotDirectory,
} from '../../src/directory/replica.js';
import { fleet, node } from '../helpers.js';

const ids = (list: { id: string }[]) => list.map((n) => n.id).sort();

describe('ReplicaNodeDirectory', () => {
  const source = () =>
    fleet()
      .add(node(2), { clusters: [1, 2] })
      .add(node(3, { region: 'east' }), { clusters: [1] })
      .add(node(4, { region: 'east' }), { live: false });

  it('answers what the source answers, from a snapshot that survives a structured clone', () => {
    const dir = source();
    const snap = structuredClone(snapshotDirectory(dir));
    const replica = new ReplicaNodeDirectory({ hinted: (t, c) => dir.hinted(t, c) }, snap);
    expect(replica.self()).toEqual(dir.self());
    expect(replica.levelThresholdsMs).toEqual([Infinity, 60, 20]);
    for (const level of [1, 2])
      expect(ids(replica.cluster(level, 9))).toEqual(ids(dir.cluster(level, 9)));
    expect(replica.cluster(2, 5)[0]!.id).toBe(node(1).id); // self first, as the source
    expect(replica.cluster(1, 1)).toHaveLength(1);
    expect(ids(replica.random(10))).toEqual(ids(dir.random(10)));
    expect(replica.random(2)).toHaveLength(2);
    expect(ids(replica.inRegion('east', 5))).toEqual(ids(dir.inRegion('east', 5)));
    for (const i of [1, 2, 3, 4, 9]) {
      expect(replica.isLive(node(i).id)).toBe(dir.isLive(node(i).id));
      expect(replica.get(node(i).id)).toEqual(dir.get(node(i).id));
    }
  });

  it('asks the source for hints and follows updates', async () => {
    const dir = source().add(node(5), { hints: ['203.0.113.0/24'] });
    const asked: string[] = [];
    const replica = new ReplicaNodeDirectory(
      {
        hinted: (t, c) => {
          asked.push(t.ip);
          return dir.hinted(t, c);
        },
      },
      snapshotDirectory(dir),
    );
    expect(await replica.hinted({ ip: '203.0.113.9' }, 4)).toEqual({
      nodes: [node(5)],
      prefix: 24,
    });
    expect(asked).toEqual(['203.0.113.9']);
    expect((await replica.near({ ip: '203.0.113.9' }, 2))[0]).toEqual(node(5));

    const before = snapshotDirectory(dir);
    dir.setLive(node(2).id, false);
    const after = snapshotDirectory(dir);
    expect(sameSnapshot(before, after)).toBe(false);
    expect(replica.isLive(node(2).id)).toBe(true);
    replica.update(after);
    expect(replica.isLive(node(2).id)).toBe(false);
    expect(ids(replica.cluster(2, 5))).toEqual([node(1).id]);
  });

  it('calls two snapshots the same when only the order of their lists differs', () => {
    const dir = source();
    const a = snapshotDirectory(dir);
    const b = {
      ...a,
      members: [...a.members].reverse(),
      clusters: a.clusters.map((c) => [...c].reverse()),
    };
    expect(sameSnapshot(a, b)).toBe(true);
    expect(sameSnapshot(undefined, b)).toBe(false);
    expect(sameSnapshot(a, { ...a, self: { ...a.self, httpPort: 1 } })).toBe(false);
  });
});
