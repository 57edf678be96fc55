import { describe, expect, it } from 'vitest';
import {
  geoTopology,
  ERR_TOPOLOGY_OPTIONS,
  ERR_TOPOLOGY_UNKNOWN_IP,
  GEO_METRO_RTT_MS,
  GEO_REGION_RTT_MS,
  GEO_WORLD_RTT_MS,
  type GeoTopologyOptions,
} from '../../src/topology/index.js';

describe('geoTopology', () => {
  const topo = geoTopology({ seed: 1, regions: 4, metrosPerRegion: 3, nodes: 120 });

  it('places nodes evenly in metros within regions, one /24 per metro and one /16 per region', () => {
    expect(topo.nodes).toHaveLength(120);
    expect(topo.regions).toEqual(['r1', 'r2', 'r3', 'r4']);
    expect(topo.metros).toHaveLength(12);
    expect(new Set(topo.nodes.map((n) => n.ip)).size).toBe(120);
    for (const n of topo.nodes) {
      const [a, r, m, h] = n.ip.split('.').map(Number);
      expect(a).toBe(10);
      expect(n.region).toBe(`r${r}`);
      expect(n.metro).toBe(`r${r}m${m}`);
      expect(n.site).toBe(n.metro);
      expect(n.regionIndex).toBe(r! - 1);
      expect(n.metroIndex).toBe(m! - 1);
      expect(h).toBeGreaterThanOrEqual(1);
      expect(h).toBeLessThanOrEqual(254);
      expect(topo.node(n.ip)).toBe(n);
    }
    for (const metro of topo.metros) {
      expect(topo.nodes.filter((n) => n.metro === metro)).toHaveLength(10);
    }
  });

  it('keeps every base RTT in its band: metro < 10 ms, region 20–60 ms, world 80–300 ms', () => {
    let metroPairs = 0;
    let regionPairs = 0;
    let worldPairs = 0;
    for (const a of topo.nodes) {
      for (const b of topo.nodes) {
        const rtt = topo.baseRttMs(a.ip, b.ip);
        expect(rtt).toBe(topo.baseRttMs(b.ip, a.ip));
        if (a === b) {
          expect(rtt).toBe(0);
        } else if (a.metro === b.metro) {
          metroPairs++;
          expect(rtt).toBeGreaterThanOrEqual(GEO_METRO_RTT_MS[0]);
          expect(rtt).toBeLessThan(GEO_METRO_RTT_MS[1]);
        } else if (a.region === b.region) {
          regionPairs++;
          expect(rtt).toBeGreaterThanOrEqual(GEO_REGION_RTT_MS[0]);
          expect(rtt).toBeLessThan(GEO_REGION_RTT_MS[1]);
        } else {
          worldPairs++;
          expect(rtt).toBeGreaterThanOrEqual(GEO_WORLD_RTT_MS[0]);
          expect(rtt).toBeLessThan(GEO_WORLD_RTT_MS[1]);
        }
      }
    }
    expect(metroPairs).toBeGreaterThan(0);
    expect(regionPairs).toBeGreaterThan(0);
    expect(worldPairs).toBeGreaterThan(0);
  });

  it('spreads RTTs across the bands rather than piling them on one value', () => {
    const world = new Set<number>();
    const region = new Set<number>();
    for (const a of topo.nodes) {
      for (const b of topo.nodes) {
        if (a.region !== b.region) world.add(Math.round(topo.baseRttMs(a.ip, b.ip) / 10));
        else if (a.metro !== b.metro) region.add(Math.round(topo.baseRttMs(a.ip, b.ip) / 5));
      }
    }
    expect(world.size).toBeGreaterThanOrEqual(4);
    expect(region.size).toBeGreaterThanOrEqual(3);
  });

  it('honours custom bands', () => {
    const t = geoTopology({
      seed: 3,
      regions: 2,
      metrosPerRegion: 2,
      nodes: 16,
      metroRttMs: [2, 4],
      regionRttMs: [30, 40],
      worldRttMs: [100, 120],
    });
    for (const a of t.nodes) {
      for (const b of t.nodes) {
        if (a === b) continue;
        const rtt = t.baseRttMs(a.ip, b.ip);
        const [lo, hi] =
          a.metro === b.metro ? [2, 4] : a.region === b.region ? [30, 40] : [100, 120];
        expect(rtt).toBeGreaterThanOrEqual(lo);
        expect(rtt).toBeLessThan(hi);
      }
    }
  });

  it('adds jitter that only ever delays, within its bound, plus rare spikes', () => {
    const t = geoTopology({
      seed: 2,
      regions: 2,
      metrosPerRegion: 2,
      nodes: 8,
      jitter: 0.1,
      spikeProbability: 0,
    });
    const [a, b] = [t.nodes[0]!.ip, t.nodes[3]!.ip];
    const half = t.baseRttMs(a, b) / 2;
    const seen = new Set<number>();
    for (let i = 0; i < 500; i++) {
      const l = t.latencyMs(a, b);
      expect(l).toBeGreaterThanOrEqual(half);
      expect(l).toBeLessThanOrEqual(half * 1.1);
      seen.add(l);
      expect(t.sampleRttMs(a, b)).toBeGreaterThanOrEqual(2 * half);
    }
    expect(seen.size).toBeGreaterThan(100);

    const spiky = geoTopology({
      seed: 2,
      regions: 2,
      metrosPerRegion: 2,
      nodes: 8,
      jitter: 0,
      spikeProbability: 0.5,
      spikeMs: 40,
    });
    let spikes = 0;
    for (let i = 0; i < 200; i++) if (spiky.latencyMs(a, b) > half) spikes++;
    expect(spikes).toBeGreaterThan(50);
    expect(spikes).toBeLessThan(150);
  });

  it('replays from its seed and differs across seeds', () => {
    const o: GeoTopologyOptions = { seed: 9, regions: 3, metrosPerRegion: 2, nodes: 12 };
    const a = geoTopology(o);
    const b = geoTopology(o);
    const c = geoTopology({ ...o, seed: 10 });
    const rtts = (t: typeof a) => t.nodes.map((n) => t.baseRttMs(t.nodes[0]!.ip, n.ip));
    expect(rtts(a)).toEqual(rtts(b));
    expect(rtts(a)).not.toEqual(rtts(c));
    const lat = (t: typeof a) => t.nodes.map((n) => t.latencyMs(t.nodes[0]!.ip, n.ip));
    expect(lat(a)).toEqual(lat(b));
  });

  it('refuses an address it does not know with DSHT_ERR_TOPOLOGY_UNKNOWN_IP', () => {
    expect(() => topo.latencyMs('10.1.1.1', '192.0.2.1')).toThrow(
      expect.objectContaining({ code: ERR_TOPOLOGY_UNKNOWN_IP }),
    );
    expect(topo.node('192.0.2.1')).toBeUndefined();
  });

  it('rejects bad options with DSHT_ERR_TOPOLOGY_OPTIONS, listing every problem', () => {
    const ok: GeoTopologyOptions = { seed: 1, regions: 2, metrosPerRegion: 2, nodes: 8 };
    const bad: Partial<GeoTopologyOptions>[] = [
      { regions: 0 },
      { regions: 255 },
      { metrosPerRegion: 1.5 },
      { nodes: 0 },
      { nodes: 2 * 2 * 254 + 1 },
      { seed: -1 },
      { metroRttMs: [10, 5] },
      { regionRttMs: [20, 20.5] },
      { worldRttMs: [NaN, 300] },
      { accessMs: -1 },
      { jitter: -0.1 },
      { spikeProbability: 2 },
      { spikeMs: -5 },
    ];
    for (const b of bad) {
      expect(() => geoTopology({ ...ok, ...b })).toThrow(
        expect.objectContaining({ code: ERR_TOPOLOGY_OPTIONS }),
      );
    }
    try {
      geoTopology({ ...ok, regions: 0, jitter: -1 });
      expect.unreachable();
    } catch (err) {
      expect((err as { problems: string[] }).problems).toHaveLength(2);
    }
  });
});
