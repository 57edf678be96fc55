import { ManualClock, SeededRandom } from '@coral/testkit';
import { describe, expect, it } from 'vitest';
import {
  ClusterManager,
  CLUSTER_CONFIRM_TICKS,
  CLUSTER_MIN_DWELL_MS,
  CLUSTER_PEER_TTL_MS,
  CLUSTER_TICK_MS,
  type ClusterAd,
  type ClusterChange,
  type ClusterManagerOptions,
} from '../../src/cluster/index.js';
import { fromHex, toHex } from '../../src/cluster/cluster-manager.js';
import { ERR_BAD_LEVEL, ERR_BAD_RTT, ERR_CLUSTER_OPTIONS } from '../../src/cluster/errors.js';

const ZERO = '0000000000000000';

function setup(options: ClusterManagerOptions = {}) {
  const clock = new ManualClock();
  const m = new ClusterManager(
    { clock, random: new SeededRandom(1) },
    { selfId: 'me', ...options },
  );
  const changes: ClusterChange[] = [];
  m.on('change', (c) => changes.push(c));
  return { clock, m, changes };
}

/** `peer` advertises the given (level, cluster, size, ageSeconds) entries; level 0 is added. */
function advertise(m: ClusterManager, peer: string, entries: [number, string, number, number][]) {
  const ads: ClusterAd[] = [{ level: 0, clusterId: fromHex(ZERO), size: 1, age: 0 }];
  for (const [level, id, size, age] of entries) {
    ads.push({ level, clusterId: fromHex(id), size, age });
  }
  return m.onAdvertisement(peer, ads);
}

function samples(m: ClusterManager, peer: string, rttMs: number, count = 3) {
  for (let i = 0; i < count; i++) m.onRttSample(peer, rttMs);
}

function ticks(m: ClusterManager, n: number): ClusterChange[] {
  const out: ClusterChange[] = [];
  for (let i = 0; i < n; i++) out.push(...m.tick());
  return out;
}

const C1 = 'c1c1c1c1c1c1c1c1';
const C2 = 'c2c2c2c2c2c2c2c2';

describe('ClusterManager: a lone node', () => {
  it('founds its own cluster at every level and advertises it', async () => {
    const { clock, m } = setup();
    expect(m.levels).toBe(3);
    expect(m.clusterOf(0)).toBe(ZERO);
    expect(m.clusterOf(1)).toMatch(/^[0-9a-f]{16}$/);
    expect(m.clusterOf(2)).toMatch(/^[0-9a-f]{16}$/);
    expect(m.clusterOf(1)).not.toBe(m.clusterOf(2));
    await clock.advance(5_500);
    const ads = m.advertisement();
    expect(ads.map((a) => [a.level, toHex(a.clusterId), a.size, a.age])).toEqual([
      [0, ZERO, 1, 5],
      [1, m.clusterOf(1), 1, 5],
      [2, m.clusterOf(2), 1, 5],
    ]);
    expect(m.members(2)).toEqual([]);
    expect(ticks(m, 5)).toEqual([]);
  });

  it('draws different cluster ids from different random streams', () => {
    const clock = new ManualClock();
    const a = new ClusterManager({ clock, random: new SeededRandom(1) });
    const b = new ClusterManager({ clock, random: new SeededRandom(2) });
    expect(a.clusterOf(2)).not.toBe(b.clusterOf(2));
  });
});

describe('ClusterManager: joining', () => {
  it('joins an acceptable cluster after confirmTicks consecutive ticks, taking on its age', () => {
    const { m, changes } = setup();
    for (const p of ['a', 'b', 'c']) {
      advertise(m, p, [[2, C1, 3, 100]]);
      samples(m, p, 5);
    }
    const before = m.clusterOf(2);
    expect(ticks(m, CLUSTER_CONFIRM_TICKS - 1)).toEqual([]);
    expect(m.snapshot().levels[2]!.pending).toEqual({
      target: C1,
      ticks: CLUSTER_CONFIRM_TICKS - 1,
    });
    const made = m.tick();
    expect(made).toEqual([
      { level: 2, oldClusterId: before, newClusterId: C1, reason: 'better', founded: false },
    ]);
    expect(changes).toEqual(made);
    expect(m.clusterOf(2)).toBe(C1);
    expect(m.members(2).sort()).toEqual(['a', 'b', 'c']);
    expect(m.isMember('a', 2)).toBe(true);
    expect(m.peerCluster('a', 2)).toBe(C1);
    const ad = m.advertisement()[2]!;
    expect(ad.age).toBe(100);
    expect(ad.size).toBe(4); // direct count: three members and itself
  });

  it('does not join while one sampled member is over the threshold (joinFraction 1)', () => {
    const { m } = setup();
    for (const [p, rtt] of [
      ['a', 5],
      ['b', 5],
      ['c', 25],
    ] as const) {
      advertise(m, p, [
        [1, C2, 3, 0],
        [2, C1, 3, 0],
      ]);
      samples(m, p, rtt);
    }
    ticks(m, 10);
    expect(m.clusterOf(2)).not.toBe(C1); // 25 ms ≥ 20 ms
    expect(m.clusterOf(1)).toBe(C2); // but all are under 60 ms
  });

  it('joins with a robust fraction when joinFraction < 1', () => {
    const { m } = setup({ joinFraction: 0.6 });
    for (const [p, rtt] of [
      ['a', 5],
      ['b', 5],
      ['c', 25],
    ] as const) {
      advertise(m, p, [[2, C1, 3, 0]]);
      samples(m, p, rtt);
    }
    ticks(m, CLUSTER_CONFIRM_TICKS);
    expect(m.clusterOf(2)).toBe(C1);
  });

  it('needs estimates for min(minMembersSampled, known members) members, each with minPeerSamples samples', () => {
    const { m } = setup();
    for (const p of ['a', 'b', 'c']) advertise(m, p, [[2, C1, 3, 0]]);
    samples(m, 'a', 5);
    samples(m, 'b', 5);
    samples(m, 'c', 5, 2); // one sample short
    ticks(m, 10);
    expect(m.clusterOf(2)).not.toBe(C1);
    m.onRttSample('c', 5);
    ticks(m, CLUSTER_CONFIRM_TICKS);
    expect(m.clusterOf(2)).toBe(C1);

    // A cluster with a single known member needs a single estimate.
    const other = setup();
    advertise(other.m, 'z', [[2, C2, 1, 0]]);
    samples(other.m, 'z', 3);
    ticks(other.m, CLUSTER_CONFIRM_TICKS);
    expect(other.m.clusterOf(2)).toBe(C2);
  });

  it('prefers the clearly larger acceptable cluster, even if younger', () => {
    const { m } = setup();
    for (const p of ['a', 'b']) advertise(m, p, [[2, C1, 2, 500]]);
    for (const p of ['c', 'd', 'e']) advertise(m, p, [[2, C2, 5, 1]]);
    for (const p of ['a', 'b', 'c', 'd', 'e']) samples(m, p, 5);
    ticks(m, CLUSTER_CONFIRM_TICKS);
    expect(m.clusterOf(2)).toBe(C2);
  });

  it('treats sizes within sizeTieFraction as equal, so the older cluster wins', () => {
    const { m } = setup();
    for (const p of ['a', 'b']) advertise(m, p, [[2, C1, 10, 500]]);
    for (const p of ['c', 'd']) advertise(m, p, [[2, C2, 18, 1]]); // 18 vs 10: not twice as large
    for (const p of ['a', 'b', 'c', 'd']) samples(m, p, 5);
    ticks(m, CLUSTER_CONFIRM_TICKS);
    expect(m.clusterOf(2)).toBe(C1);
  });

  it('prefers the older cluster at equal size, then the lower id', () => {
    const older = setup();
    for (const p of ['a', 'b']) advertise(older.m, p, [[2, C2, 2, 100]]);
    for (const p of ['c', 'd']) advertise(older.m, p, [[2, C1, 2, 10]]);
    for (const p of ['a', 'b', 'c', 'd']) samples(older.m, p, 5);
    ticks(older.m, CLUSTER_CONFIRM_TICKS);
    expect(older.m.clusterOf(2)).toBe(C2);

    const tie = setup();
    for (const p of ['a', 'b']) advertise(tie.m, p, [[2, C2, 2, 50]]);
    for (const p of ['c', 'd']) advertise(tie.m, p, [[2, C1, 2, 51]]); // within ageTieMs
    for (const p of ['a', 'b', 'c', 'd']) samples(tie.m, p, 5);
    ticks(tie.m, CLUSTER_CONFIRM_TICKS);
    expect(tie.m.clusterOf(2)).toBe(C1);
  });

  it('estimates size as the largest direct count among itself and live members', () => {
    const { m } = setup();
    advertise(m, 'a', [[2, C1, 9, 0]]);
    advertise(m, 'b', [[2, C1, 2, 0]]);
    samples(m, 'a', 5);
    samples(m, 'b', 5);
    ticks(m, CLUSTER_CONFIRM_TICKS);
    expect(m.clusterOf(2)).toBe(C1);
    expect(m.sizeEstimate(2)).toBe(9);
    expect(m.advertisement()[2]!.size).toBe(3); // what it advertises is its own direct count
    m.onPeerGone('a');
    expect(m.sizeEstimate(2)).toBe(2); // b and itself; b's own count was 2
  });
});

describe('ClusterManager: staying and leaving', () => {
  /** A manager that has joined C1 (members a, b, c at 5 ms) at level 2. */
  function joined(options: ClusterManagerOptions = {}) {
    const s = setup(options);
    for (const p of ['a', 'b', 'c']) {
      advertise(s.m, p, [[2, C1, 4, 10]]);
      samples(s.m, p, 5);
    }
    ticks(s.m, CLUSTER_CONFIRM_TICKS);
    expect(s.m.clusterOf(2)).toBe(C1);
    s.changes.length = 0;
    return s;
  }

  it('does not leave for a larger cluster before the minimum dwell time', async () => {
    const { clock, m, changes } = joined();
    for (const p of ['d', 'e', 'f', 'g', 'h']) {
      advertise(m, p, [[2, C2, 10, 10]]); // more than twice as large
      samples(m, p, 5);
    }
    ticks(m, 5);
    expect(m.clusterOf(2)).toBe(C1);
    await clock.advance(CLUSTER_MIN_DWELL_MS);
    for (const p of ['a', 'b', 'c']) advertise(m, p, [[2, C1, 4, 10]]);
    for (const p of ['d', 'e', 'f', 'g', 'h']) advertise(m, p, [[2, C2, 10, 10]]);
    m.tick();
    expect(m.clusterOf(2)).toBe(C2);
    expect(changes).toEqual([
      { level: 2, oldClusterId: C1, newClusterId: C2, reason: 'better', founded: false },
    ]);
  });

  it('stays inside the hysteresis band and leaves above threshold × (1 + leaveMargin)', async () => {
    const { clock, m, changes } = joined();
    await clock.advance(CLUSTER_MIN_DWELL_MS);
    // 23 ms: above the 20 ms join threshold but under the 25 ms leave threshold.
    for (const p of ['a', 'b', 'c']) samples(m, p, 23, 7);
    ticks(m, 10);
    expect(m.clusterOf(2)).toBe(C1);
    // 40 ms to two of three members: more than leaveFraction (half) over 25 ms.
    samples(m, 'a', 40, 7);
    samples(m, 'b', 40, 7);
    expect(ticks(m, CLUSTER_CONFIRM_TICKS - 1)).toEqual([]);
    m.tick();
    expect(m.clusterOf(2)).not.toBe(C1);
    expect(changes).toEqual([
      { level: 2, oldClusterId: C1, newClusterId: m.clusterOf(2), reason: 'misfit', founded: true },
    ]);
    expect(m.sizeEstimate(2)).toBe(1);
    expect(m.advertisement()[2]!.age).toBe(0);
  });

  it('a misfit moves to another acceptable cluster rather than founding one', async () => {
    const { clock, m, changes } = joined();
    await clock.advance(CLUSTER_MIN_DWELL_MS);
    for (const p of ['a', 'b', 'c']) {
      advertise(m, p, [[2, C1, 4, 10]]);
      samples(m, p, 40, 7);
    }
    advertise(m, 'x', [[2, C2, 1, 0]]);
    samples(m, 'x', 8);
    ticks(m, CLUSTER_CONFIRM_TICKS);
    expect(changes).toEqual([
      { level: 2, oldClusterId: C1, newClusterId: C2, reason: 'misfit', founded: false },
    ]);
  });

  it('forgets members that go away or fall silent for peerTtlMs', async () => {
    const { clock, m } = joined();
    m.onPeerGone('a');
    expect(m.members(2).sort()).toEqual(['b', 'c']);
    expect(m.rtt.median('a')).toBeUndefined();
    await clock.advance(CLUSTER_PEER_TTL_MS / 2);
    advertise(m, 'b', [[2, C1, 3, 10]]);
    await clock.advance(CLUSTER_PEER_TTL_MS / 2 + 1);
    m.tick();
    expect(m.members(2)).toEqual(['b']);
    expect(m.members(0)).toEqual(['b']);
    expect(m.isMember('c', 2)).toBe(false);
    expect(m.snapshot().peers).toBe(1);
  });
});

describe('ClusterManager: inputs from the network', () => {
  it('drops malformed advertisement entries, counts them and keeps the good ones', () => {
    const { m } = setup();
    const good = { level: 2, clusterId: fromHex(C1), size: 3, age: 1 };
    const bad: unknown[] = [
      null,
      'x',
      { ...good, level: -1 },
      { ...good, level: 1.5 },
      { ...good, clusterId: C1 },
      { ...good, clusterId: new Uint8Array(0) },
      { ...good, clusterId: new Uint8Array(33) },
      { ...good, size: 0 },
      { ...good, size: 2.5 },
      { ...good, size: 2 ** 40 },
      { ...good, age: NaN },
      { ...good, age: -1 },
      { ...good, age: 1e12 },
    ];
    expect(m.onAdvertisement('p', [...bad, good] as ClusterAd[])).toBe(1);
    expect(m.snapshot().rejectedAds).toBe(bad.length);
    expect(m.peerCluster('p', 2)).toBe(C1);
    expect(m.onAdvertisement('p', 'nonsense' as unknown as ClusterAd[])).toBe(0);
    expect(m.snapshot().rejectedAds).toBe(bad.length + 1);
  });

  it('ignores levels it does not run and its own id', () => {
    const { m } = setup();
    expect(m.onAdvertisement('p', [{ level: 7, clusterId: fromHex(C1), size: 1, age: 0 }])).toBe(0);
    expect(m.snapshot().rejectedAds).toBe(0);
    expect(advertise(m, 'me', [[2, C1, 3, 0]])).toBe(0);
    m.onRttSample('me', 1);
    expect(m.members(0)).toEqual(['p']);
  });

  it('throws DSHT_ERR_BAD_RTT on a bad RTT sample and DSHT_ERR_BAD_LEVEL on a bad level', () => {
    const { m } = setup();
    expect(() => m.onRttSample('p', -3)).toThrow(expect.objectContaining({ code: ERR_BAD_RTT }));
    for (const level of [-1, 3, 1.5]) {
      expect(() => m.clusterOf(level)).toThrow(expect.objectContaining({ code: ERR_BAD_LEVEL }));
      expect(() => m.members(level)).toThrow(expect.objectContaining({ code: ERR_BAD_LEVEL }));
    }
  });

  it('suggests unsampled members first, then members whose estimate went stale', async () => {
    const { clock, m } = setup({ reprobeMs: 60_000 });
    for (const p of ['a', 'b', 'c', 'd']) advertise(m, p, [[2, C1, 4, 0]]);
    samples(m, 'a', 5);
    samples(m, 'b', 5);
    // Needs min(3, 4) = 3 sampled members: one of c, d is urgent.
    const first = m.probeTargets(10);
    expect(first).toHaveLength(1);
    expect(['c', 'd']).toContain(first[0]);
    samples(m, 'c', 5);
    expect(m.probeTargets(10)).toEqual([]);
    await clock.advance(60_000);
    for (const p of ['a', 'b', 'c', 'd']) advertise(m, p, [[2, C1, 4, 0]]);
    expect(m.probeTargets(10).sort()).toEqual(['a', 'b', 'c']);
    expect(m.probeTargets(2)).toHaveLength(2);
  });

  it('spends no probes on smaller clusters or on clusters a single far sample rules out', () => {
    const { m } = setup();
    // Join C1 (three members at 5 ms).
    for (const p of ['a', 'b', 'c']) {
      advertise(m, p, [[2, C1, 3, 100]]);
      samples(m, p, 5);
    }
    ticks(m, CLUSTER_CONFIRM_TICKS);
    expect(m.clusterOf(2)).toBe(C1);
    // C2 is bigger, but one sample to one of its members took 80 ms (over 25 ms).
    for (const p of ['d', 'e', 'f', 'g', 'h', 'i', 'j', 'k']) advertise(m, p, [[2, C2, 9, 100]]);
    m.onRttSample('d', 80);
    // C3 is smaller than C1: never worth joining while C1 fits.
    advertise(m, 'z', [[2, 'c3c3c3c3c3c3c3c3', 1, 0]]);
    expect(m.probeTargets(10)).toEqual([]);
    // Without the far sample C2 would be measured.
    m.onPeerGone('d');
    const targets = m.probeTargets(10);
    expect(targets).toHaveLength(3);
    for (const t of targets) expect(['e', 'f', 'g', 'h', 'i', 'j', 'k']).toContain(t);
  });
});

describe('ClusterManager: lifecycle and options', () => {
  it('ticks by itself on the injected clock between start() and stop()', async () => {
    const { clock, m } = setup();
    for (const p of ['a', 'b', 'c']) {
      advertise(m, p, [[2, C1, 3, 0]]);
      samples(m, p, 5);
    }
    m.start();
    m.start(); // idempotent
    await clock.advance(CLUSTER_TICK_MS * CLUSTER_CONFIRM_TICKS);
    expect(m.clusterOf(2)).toBe(C1);
    m.stop();
    expect(clock.pending).toBe(0);
  });

  it('runs with other thresholds and level counts', () => {
    const { m } = setup({ thresholdsMs: [Infinity, 100] });
    expect(m.levels).toBe(2);
    expect(m.advertisement()).toHaveLength(2);
    expect(m.snapshot().levels.map((l) => l.thresholdMs)).toEqual([Infinity, 100]);
  });

  it('rejects bad options with DSHT_ERR_CLUSTER_OPTIONS, listing every problem', () => {
    const clock = new ManualClock();
    const random = new SeededRandom(1);
    const bad: ClusterManagerOptions[] = [
      { thresholdsMs: [60, 20] },
      { thresholdsMs: [Infinity, 20, 60] },
      { thresholdsMs: [Infinity, -5] },
      { leaveMargin: -0.1 },
      { joinFraction: 0 },
      { leaveFraction: 1 },
      { minMembersSampled: 0 },
      { minPeerSamples: 0 },
      { confirmTicks: 0 },
      { minDwellMs: -1 },
      { peerTtlMs: 0 },
      { maxPeers: 0 },
      { clusterIdBytes: 2 },
      { sizeTieFraction: 1 },
      { tickMs: 0 },
      { reprobeMs: 0 },
    ];
    for (const o of bad) {
      expect(() => new ClusterManager({ clock, random }, o)).toThrow(
        expect.objectContaining({ code: ERR_CLUSTER_OPTIONS }),
      );
    }
    expect(() => new ClusterManager({ clock, random }, { confirmTicks: 0, tickMs: 0 })).toThrow(
      /confirmTicks.*tickMs/,
    );
  });

  it('reports its state in a snapshot', () => {
    const { m } = setup();
    advertise(m, 'a', [[2, C1, 1, 0]]);
    samples(m, 'a', 5);
    ticks(m, CLUSTER_CONFIRM_TICKS);
    const snap = m.snapshot();
    expect(snap.peers).toBe(1);
    expect(snap.rttPeers).toBe(1);
    expect(snap.changes).toBe(1);
    expect(snap.levels[2]).toMatchObject({
      level: 2,
      thresholdMs: 20,
      clusterId: C1,
      size: 2,
      members: 1,
    });
    expect(snap.levels[0]).toMatchObject({ level: 0, clusterId: ZERO, size: 2, members: 1 });
  });
});
