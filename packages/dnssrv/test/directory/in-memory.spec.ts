import { describe, expect, it } from 'vitest';
import { fleet, node } from '../helpers.js';

describe('InMemoryNodeDirectory', () => {
  it('liveness, clusters (self first), regions, random', () => {
    const dir = fleet()
      .add(node(2), { clusters: [1, 2] })
      .add(node(3, { region: 'east' }), { clusters: [1] })
      .add(node(4, { region: 'east' }), { live: false });
    expect(dir.self().id).toBe(node(1).id);
    expect(dir.cluster(2, 5).map((n) => n.id)).toEqual([node(1).id, node(2).id]);
    expect(
      dir
        .cluster(1, 5)
        .map((n) => n.id)
        .slice(0, 1),
    ).toEqual([node(1).id]);
    expect(dir.cluster(1, 5)).toHaveLength(3);
    expect(dir.inRegion('east', 5).map((n) => n.id)).toEqual([node(3).id]);
    expect(dir.random(10)).toHaveLength(3);
    expect(dir.isLive(node(4).id)).toBe(false);
    expect(dir.get(node(4).id)).toBeUndefined();
    dir.setLive(node(4).id, true);
    expect(dir.inRegion('east', 5)).toHaveLength(2);
    expect(dir.levelThresholdsMs).toEqual([Infinity, 60, 20]);
  });

  it('hints: /24 before /16, only live nodes; bad prefixes are config errors', async () => {
    const dir = fleet()
      .add(node(2), { hints: ['203.0.113.0/24'] })
      .add(node(3), { hints: ['203.0.0.0/16'] });
    expect(await dir.hinted({ ip: '203.0.113.9' }, 4)).toEqual({ nodes: [node(2)], prefix: 24 });
    expect(await dir.hinted({ ip: '203.0.7.9' }, 4)).toEqual({ nodes: [node(3)], prefix: 16 });
    dir.setLive(node(2).id, false);
    expect((await dir.hinted({ ip: '203.0.113.9' }, 4)).prefix).toBe(16);
    expect(await dir.hinted({ ip: '192.0.2.1' }, 4)).toEqual({ nodes: [], prefix: null });
    expect(await dir.hinted({ ip: '2001:db8::1' }, 4)).toEqual({ nodes: [], prefix: null });
    expect(() => dir.hint('203.0.113.0/25', node(2).id)).toThrow(
      expect.objectContaining({ code: 'DNS_ERR_CONFIG' }),
    );
    const near = await dir.near({ ip: '203.0.7.9' }, 2);
    expect(near[0]).toEqual(node(3));
    expect(near).toHaveLength(2);
  });
});
