/**
 * A fleet whose clusters are fixed by address, for tests of the DSHT's level logic apart from
 * cluster formation: node i sits at 10.<region>.<metro>.<n> (regions and metros numbered from 1,
 * nodes dealt round-robin over the metros), one-way latency 3 ms within a metro, 20 within a region,
 * 75 across (RTT 6 / 40 / 150), and each node's policy puts its metro at level 2 and its region at
 * level 1.
 *
 * ```ts
 * const f = fixedClusters({ regions: 3, metros: 2, perMetro: 8 });
 * const fleet = new SimFleet({ nodes: f.nodes, ipOf: f.ipOf, latencyMs: f.latencyMs,
 *   dsht: { levels: 3 }, clusterFor: (i) => f.policyFor(f.ipOf(i)) });
 * ```
 */
import type { ClusterPolicy, Contact } from '@coral/dsht';

export interface FixedClustersOptions {
  regions: number;
  /** Metros per region. */
  metros: number;
  perMetro: number;
}

export interface FixedClusters {
  /** Number of nodes: regions × metros × perMetro. */
  nodes: number;
  ipOf: (i: number) => string;
  /** One-way latency in ms between two addresses of the layout. */
  latencyMs: (a: string, b: string) => number;
  /** The region ('2') and metro ('2.1') of an address. */
  parts: (ip: string) => [region: string, metro: string];
  policyFor: (ip: string) => ClusterPolicy;
}

export function fixedClusters(options: FixedClustersOptions): FixedClusters {
  const { regions, metros, perMetro } = options;
  const groups = regions * metros;
  const parts = (ip: string): [string, string] => {
    const [, r, m] = ip.split('.');
    return [r!, `${r}.${m}`];
  };
  const id = (s: string) => new TextEncoder().encode(s);
  return {
    nodes: groups * perMetro,
    ipOf: (i) => {
      const g = i % groups;
      return `10.${Math.floor(g / metros) + 1}.${(g % metros) + 1}.${Math.floor(i / groups) + 1}`;
    },
    latencyMs: (a, b) => {
      const [ra, ma] = parts(a);
      const [rb, mb] = parts(b);
      return ma === mb ? 3 : ra === rb ? 20 : 75;
    },
    parts,
    policyFor: (ip) => {
      const [region, metro] = parts(ip);
      return {
        adverts: () => [
          { level: 1, clusterId: id(`r${region}`), size: perMetro * metros, age: 60 },
          { level: 2, clusterId: id(`m${metro}`), size: perMetro, age: 60 },
        ],
        admits: (level: number, c: Contact) => {
          const [r, m] = parts(c.ip);
          return level === 1 ? r === region : level === 2 ? m === metro : true;
        },
      };
    },
  };
}
