import { describe, expect, it } from 'vitest';
import { clusterPurity, purityReport } from '../../src/topology/index.js';

// Four nodes on a line: a–b 5 ms, b–c 15 ms, c–d 5 ms (RTT = distance).
const pos: Record<string, number> = { a: 0, b: 5, c: 20, d: 25 };
const rtt = (x: string, y: string) => Math.abs(pos[x]! - pos[y]!);

describe('cluster purity', () => {
  it('is the fraction of same-cluster pairs under the threshold', () => {
    const assignment = new Map([
      ['a', ['g', 'L', 'P']],
      ['b', ['g', 'L', 'P']],
      ['c', ['g', 'L', 'Q']],
      ['d', ['g', 'L', 'Q']],
    ]);
    // Level 2: {a,b} and {c,d}, both pairs 5 ms < 10 ms.
    expect(purityReport(2, assignment, rtt, 10)).toEqual({
      level: 2,
      thresholdMs: 10,
      clusters: 2,
      largest: 2,
      pairs: 2,
      purePairs: 2,
      purity: 1,
    });
    // Level 1: one cluster of 4 → 6 pairs; under 16 ms: a–b, b–c, c–d (5, 15, 5) → 3/6.
    expect(clusterPurity(1, assignment, rtt, 16)).toBe(0.5);
    // The threshold is strict: a pair exactly at it is not under it.
    expect(clusterPurity(1, assignment, rtt, 15)).toBe(2 / 6);
  });

  it('is 1 with no pairs (singletons), which the report makes visible', () => {
    const assignment = new Map([
      ['a', ['g', 'x']],
      ['c', ['g', 'y']],
    ]);
    expect(purityReport(1, assignment, rtt, 1)).toMatchObject({ clusters: 2, pairs: 0, purity: 1 });
  });

  it('throws a RangeError when a node has no cluster at the level', () => {
    expect(() => clusterPurity(3, new Map([['a', ['g']]]), rtt, 10)).toThrow(RangeError);
  });
});
