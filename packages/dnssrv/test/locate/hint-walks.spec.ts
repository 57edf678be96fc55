import { describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import type { HintResult, NodeDirectory } from '../../src/index.js';
import { HintWalks } from '../../src/locate/hint-walks.js';
import { parseIp } from '../../src/net/ip.js';
import { fleet, node } from '../helpers.js';

/** A directory whose hint walks the test finishes by hand. */
function walkingDirectory() {
  const calls: { ip: string; count: number; signal?: AbortSignal; done(r: HintResult): void }[] =
    [];
  const dir: NodeDirectory = Object.assign(fleet(), {
    hinted(t: { ip: string }, count: number, opts?: { signal?: AbortSignal }) {
      return new Promise<HintResult>((done) =>
        calls.push({ ip: t.ip, count, done, ...(opts?.signal ? { signal: opts.signal } : {}) }),
      );
    },
  });
  return { dir, calls };
}

const look = (w: HintWalks, ip: string, count = 6) => w.lookup({ ip }, parseIp(ip)!, count);
const HINT: HintResult = { nodes: [node(4)], prefix: 24 };

describe('HintWalks', () => {
  it('one walk per /24, cached with a TTL (shorter for "no hint"), stale while re-walked', async () => {
    const clock = new ManualClock();
    const { dir, calls } = walkingDirectory();
    const w = new HintWalks({ directory: dir, clock }, { ttlMs: 1000, negativeTtlMs: 100 });
    const first = look(w, '192.0.2.1');
    const second = look(w, '192.0.2.200'); // same /24: joins the walk
    expect(first.kind).toBe('walk');
    expect(second.kind).toBe('walk');
    expect(calls).toHaveLength(1);
    calls[0]!.done(HINT);
    await clock.advance(0);
    expect(look(w, '192.0.2.9')).toMatchObject({ kind: 'cached', result: HINT, stale: false });
    // Asking for more nodes than the walk asked for needs a new walk, unless it found fewer anyway.
    expect(look(w, '192.0.2.9', 60)).toMatchObject({ kind: 'cached' }); // asked 6, found 1
    await clock.advance(1000);
    // Expired: re-walked, and the old result stands in meanwhile.
    expect(look(w, '192.0.2.9')).toMatchObject({ kind: 'walk' });
    expect(look(w, '192.0.2.9')).toMatchObject({ kind: 'cached', stale: true });
    calls[1]!.done({ nodes: [1, 2, 3, 4, 5, 6].map((i) => node(i)), prefix: 24 });
    await clock.advance(0);
    expect(look(w, '192.0.2.9', 6)).toMatchObject({ kind: 'cached', stale: false });
    expect(look(w, '192.0.2.9', 7)).toMatchObject({ kind: 'walk' }); // asked 6, found 6: maybe more
    calls[2]!.done({ nodes: [], prefix: null });
    await clock.advance(0);
    expect(look(w, '192.0.2.9')).toMatchObject({ kind: 'cached', stale: false });
    await clock.advance(100); // "no hint" lives 100 ms
    expect(look(w, '192.0.2.9').kind).toBe('walk');
    expect(calls).toHaveLength(4);
    expect(w.counters).toMatchObject({ walks: 4, joined: 1, cacheHits: 4, stale: 1 });
  });

  it('walks start at most walksPerSecond and maxInFlight at once; the rest are skipped', async () => {
    const clock = new ManualClock();
    const { dir, calls } = walkingDirectory();
    const w = new HintWalks({ directory: dir, clock }, { walksPerSecond: 2, maxInFlight: 3 });
    const kinds = Array.from({ length: 10 }, (_, i) => look(w, `198.51.${i}.1`).kind);
    expect(kinds.filter((k) => k === 'walk')).toHaveLength(2);
    expect(look(w, '198.51.50.1')).toMatchObject({ kind: 'skipped', reason: 'rate' });
    await clock.advance(500);
    expect(look(w, '198.51.51.1').kind).toBe('walk'); // one token back
    await clock.advance(1000); // tokens back, but 3 walks running (none has timed out yet)
    expect(look(w, '198.51.52.1')).toMatchObject({ kind: 'skipped', reason: 'busy' });
    expect(calls).toHaveLength(3);
    for (const c of calls) c.done(HINT);
    await clock.advance(0);
    expect(w.inFlight).toBe(0);
    expect(w.counters).toMatchObject({ walks: 3, skippedRate: 9, skippedBusy: 1 });
  });

  it('a walk that hangs is aborted after walkTimeoutMs; close() aborts the rest', async () => {
    const clock = new ManualClock();
    const { dir, calls } = walkingDirectory();
    const w = new HintWalks({ directory: dir, clock }, { walkTimeoutMs: 2000 });
    const hung = look(w, '203.0.113.1');
    if (hung.kind !== 'walk') throw new Error('expected a walk');
    await clock.advance(2000);
    expect(await hung.walk).toEqual({ nodes: [], prefix: null });
    expect(calls[0]!.signal?.aborted).toBe(true);
    expect(w.counters.timedOut).toBe(1);
    expect(look(w, '203.0.113.1')).toMatchObject({ kind: 'cached' }); // cached as "no hint"
    const other = look(w, '203.0.114.1');
    w.close();
    expect(calls[1]!.signal?.aborted).toBe(true);
    if (other.kind === 'walk') expect(await other.walk).toEqual({ nodes: [], prefix: null });
    expect(look(w, '203.0.115.1')).toMatchObject({ kind: 'skipped', reason: 'closed' });
  });

  it('the cache is bounded; forget() drops a prefix so the next miss walks again', async () => {
    const clock = new ManualClock();
    const dir = fleet().add(node(4), { hints: ['192.0.2.0/24'] });
    const w = new HintWalks({ directory: dir, clock }, { maxEntries: 5, walksPerSecond: 1000 });
    for (let i = 0; i < 20; i++) look(w, `10.1.${i}.1`);
    await clock.advance(0);
    expect(w.entries).toBeLessThanOrEqual(5);
    const walk = look(w, '192.0.2.7');
    if (walk.kind !== 'walk') throw new Error('expected a walk');
    expect((await walk.walk).nodes).toEqual([node(4)]);
    expect(look(w, '192.0.2.7').kind).toBe('cached');
    w.forget('192.0.2.0/24');
    expect(look(w, '192.0.2.7').kind).toBe('walk');
  });
});
