import { describe, expect, it } from 'vitest';
import {
  matrixTopology,
  parseRttMatrix,
  ERR_TOPOLOGY_MATRIX,
  ERR_TOPOLOGY_OPTIONS,
  TopologyError,
} from '../../src/topology/index.js';

const good = {
  sites: ['nyc', 'lon', 'tok'],
  rttMs: [
    [2, 70, 180],
    [72, 3, 230],
    [180, 230, 1],
  ],
};

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(TopologyError);
    return [...(err as TopologyError).problems];
  }
  throw new Error('expected a TopologyError');
}

describe('matrixTopology', () => {
  it('loads a matrix, spreads nodes over sites and uses the symmetric mean RTT', () => {
    const t = matrixTopology(good, { seed: 1, nodes: 7, jitter: 0, spikeProbability: 0 });
    expect(t.nodes.map((n) => [n.ip, n.site])).toEqual([
      ['10.0.0.1', 'nyc'],
      ['10.0.1.1', 'lon'],
      ['10.0.2.1', 'tok'],
      ['10.0.0.2', 'nyc'],
      ['10.0.1.2', 'lon'],
      ['10.0.2.2', 'tok'],
      ['10.0.0.3', 'nyc'],
    ]);
    expect(t.baseRttMs('10.0.0.1', '10.0.1.1')).toBe(71);
    expect(t.baseRttMs('10.0.1.1', '10.0.0.1')).toBe(71);
    expect(t.baseRttMs('10.0.0.1', '10.0.0.2')).toBe(2);
    expect(t.baseRttMs('10.0.0.1', '10.0.0.1')).toBe(0);
    expect(t.sampleRttMs('10.0.1.1', '10.0.2.1')).toBe(230);
    expect(t.node('10.0.2.2')).toMatchObject({ site: 'tok', metro: 'tok', region: 'tok' });
  });

  it('accepts JSON text and an explicit site for every node', () => {
    const t = matrixTopology(JSON.stringify(good), { seed: 1, nodes: ['tok', 'tok', 'nyc'] });
    expect(t.nodes.map((n) => n.ip)).toEqual(['10.0.2.1', '10.0.2.2', '10.0.0.1']);
    expect(t.matrix.sites).toEqual(good.sites);
  });

  it('keeps measured values exact unless access delays are asked for', () => {
    const t = matrixTopology(good, { seed: 1, nodes: 6, accessMs: 0.5, jitter: 0 });
    const rtt = t.baseRttMs('10.0.0.1', '10.0.1.1');
    expect(rtt).toBeGreaterThanOrEqual(71);
    expect(rtt).toBeLessThan(72);
  });

  it('rejects text that is not JSON', () => {
    expect(() => parseRttMatrix('{"sites": [')).toThrow(
      expect.objectContaining({
        code: ERR_TOPOLOGY_MATRIX,
        message: expect.stringMatching(/not JSON/),
      }),
    );
  });

  it('rejects files of the wrong shape', () => {
    for (const bad of [
      null,
      42,
      [],
      'null',
      {},
      { sites: 'a', rttMs: [] },
      { sites: [], rttMs: {} },
    ]) {
      expect(() => parseRttMatrix(bad)).toThrow(
        expect.objectContaining({ code: ERR_TOPOLOGY_MATRIX }),
      );
    }
    expect(problemsOf(() => parseRttMatrix({ sites: [], rttMs: [] }))).toEqual([
      '"sites" is empty',
    ]);
  });

  it('reports every bad site name and matrix entry at once, with its position', () => {
    const problems = problemsOf(() =>
      parseRttMatrix({
        sites: ['a', 'a', '', 7],
        rttMs: [
          [0, 1, 2, 3],
          [1, 0, -4, 3],
          [2, 'x', 0],
          [3, 3, null, NaN],
          [0, 0, 0, 0],
        ],
      }),
    );
    expect(problems).toEqual([
      'sites[1] duplicates "a"',
      'sites[2] must be a non-empty string, got ""',
      'sites[3] must be a non-empty string, got 7',
      '"rttMs" has 5 rows but there are 4 sites',
      'rttMs[1][2] must be a number in [0, 60000], got -4',
      'rttMs[2] has 3 entries, expected 4',
      'rttMs[2][1] must be a number in [0, 60000], got "x"',
      'rttMs[3][2] must be a number in [0, 60000], got null',
      'rttMs[3][3] must be a number in [0, 60000], got NaN',
    ]);
  });

  it('rejects rows that are not arrays and absurd RTTs', () => {
    expect(problemsOf(() => parseRttMatrix({ sites: ['a', 'b'], rttMs: [[0, 1], 'row'] }))).toEqual(
      ['rttMs[1] must be an array'],
    );
    expect(problemsOf(() => parseRttMatrix({ sites: ['a'], rttMs: [[1e9]] }))).toEqual([
      'rttMs[0][0] must be a number in [0, 60000], got 1000000000',
    ]);
  });

  it('rejects bad node assignments with DSHT_ERR_TOPOLOGY_OPTIONS', () => {
    const cases: [Parameters<typeof matrixTopology>[1], RegExp][] = [
      [{ seed: 1, nodes: 0 }, /nodes must be an integer/],
      [{ seed: 1, nodes: 3 * 254 + 1 }, /nodes must be an integer/],
      [{ seed: 1, nodes: ['nyc', 'paris'] }, /nodes\[1\]: unknown site "paris"/],
      [{ seed: 1, nodes: [] }, /nodes is empty/],
      [{ seed: 1, nodes: Array<string>(255).fill('lon') }, /site "lon" has 255 nodes/],
      [{ seed: 1.5, nodes: 3 }, /seed must be an integer/],
      [{ seed: 1, nodes: 3, accessMs: -1 }, /accessMs/],
      [{ seed: 1, nodes: 3, jitter: -1 }, /jitter/],
    ];
    for (const [options, message] of cases) {
      expect(() => matrixTopology(good, options)).toThrow(
        expect.objectContaining({
          code: ERR_TOPOLOGY_OPTIONS,
          message: expect.stringMatching(message),
        }),
      );
    }
  });
});
