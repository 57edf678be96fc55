import { describe, expect, it } from 'vitest';
import { rendezvousRank } from '../../src/compose/node.js';

describe('rendezvousRank', () => {
  it('orders the same live set the same way on every node, one rank per node', () => {
    const live = ['aa', 'bb', 'cc', 'dd', 'ee'].map((c) => ({ id: c.repeat(20) }));
    for (let k = 0; k < 20; k++) {
      const key = new Uint8Array(20).fill(k);
      const ranks = live.map((n) => rendezvousRank(n.id, key, live)).sort();
      expect(ranks).toEqual([0, 1, 2, 3, 4]);
    }
  });

  it('spreads first place over the nodes across keys, and ignores a node missing from the set', () => {
    const live = ['aa', 'bb', 'cc'].map((c) => ({ id: c.repeat(20) }));
    const firsts = new Set<string>();
    for (let k = 0; k < 60; k++) {
      const key = new Uint8Array(20).fill(k);
      firsts.add(live.find((n) => rendezvousRank(n.id, key, live) === 0)!.id);
    }
    expect(firsts.size).toBe(3);
    expect(rendezvousRank('ff'.repeat(20), new Uint8Array(20), [])).toBe(0);
  });
});
