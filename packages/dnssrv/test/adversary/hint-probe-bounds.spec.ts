/**
 * Adversary: making the node work on a miss. Each query from a new resolver (or with a new ECS
 * subnet) asks the directory for hints — in a real node a DSHT walk — and starts a TCP probe of
 * the resolver. Rotating names must cost nothing new (hints and probes are per /24), and rotating
 * source prefixes or ECS subnets must not start walks or probes beyond their global bounds. All
 * over real UDP from the attacker's own addresses; the server's clock is manual, so token buckets
 * refill only when the test advances it. Every query is still answered.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { HintResult, NodeDirectory } from '../../src/index.js';
import { encodeQuery, fleet, node, waitFor } from '../helpers.js';
import { start, type Started } from '../server/support.js';
import { udpAttacker, udpAttackers, type UdpAttacker } from './attacker.js';

let s: Started | undefined;
afterEach(async () => {
  await s?.server.close();
  s = undefined;
});

/** A fleet whose hint lookups are counted (and, with `hang`, never finish unless aborted). */
function countingFleet(hang = false) {
  const dir = fleet()
    .add(node(2))
    .add(node(3), { hints: ['127.66.0.0/16'] });
  const walks: { ip: string; signal?: AbortSignal }[] = [];
  const inner = dir.hinted.bind(dir);
  const hinted: NodeDirectory['hinted'] = (t, c, opts) => {
    walks.push({ ip: t.ip, ...(opts?.signal ? { signal: opts.signal } : {}) });
    return hang ? new Promise<HintResult>(() => {}) : inner(t, c);
  };
  dir.hinted = hinted;
  return { dir, walks };
}

const answered = (list: UdpAttacker[]) => list.reduce((n, a) => n + a.got.length, 0);

describe('adversary: hint walks and probes under rotation', () => {
  it('rotating names from one resolver: one hint walk and one probe for its /24', async () => {
    const { dir, walks } = countingFleet();
    s = await start({}, dir);
    const a = await udpAttacker('127.66.4.2');
    for (let i = 0; i < 300; i++) {
      a.send(encodeQuery({ name: `n${i}.rotate${i}.example.nyud.net`, id: i }), s.port);
    }
    await waitFor(() => a.got.length === 300);
    expect(walks).toHaveLength(1);
    expect(s.prober.calls).toEqual(['127.66.4.2']);
    expect(s.server.stats().hints).toMatchObject({ walks: 1 });
  });

  it('rotating source /24s and ECS subnets: walks and probes stay within their global bounds', async () => {
    const { dir, walks } = countingFleet();
    s = await start({}, dir); // defaults: 10 walks/s, 20 probes/s
    const round = async (second: number) => {
      const list = await udpAttackers(
        Array.from({ length: 100 }, (_, i) => `127.${70 + second}.${i}.2`),
      );
      list.forEach((a, i) => a.send(encodeQuery({ name: `x${i}.example.com.nyud.net` }), s!.port));
      await waitFor(() => answered(list) === 100);
    };
    await round(0);
    expect(walks).toHaveLength(10); // the burst, of 100 new /24s
    expect(s.prober.calls).toHaveLength(20);
    s.prober.settle(null); // the probes end (else the 32-in-flight bound would be the one to bite)
    await s.clock.advance(1000);
    await round(1);
    expect(walks).toHaveLength(20);
    expect(s.prober.calls).toHaveLength(40);

    // One source rotating its ECS subnet over 100 /24s: the same walk bound, no new probe.
    await s.clock.advance(1000);
    const e = await udpAttacker('127.72.0.2');
    for (let i = 0; i < 100; i++) {
      const ecs = { sourcePrefix: 24, address: [203, 0, i] };
      e.send(encodeQuery({ name: `e${i}.example.com.nyud.net`, id: i, edns: { ecs } }), s.port);
    }
    await waitFor(() => e.got.length === 100);
    expect(walks).toHaveLength(30); // 10 more: ECS subnets and the resolver's own /24 share them
    expect(s.prober.calls).toHaveLength(41);
    const stats = s.server.stats();
    expect(stats.hints.skippedRate).toBeGreaterThan(0);
    expect(stats.probes.skippedRate).toBeGreaterThan(0);
  });

  it('walks that never finish: at most 8 at once, each aborted after its timeout', async () => {
    const { dir, walks } = countingFleet(true);
    s = await start({ hints: { walksPerSecond: 1000 } }, dir);
    const list = await udpAttackers(Array.from({ length: 50 }, (_, i) => `127.73.${i}.2`));
    list.forEach((a, i) => a.send(encodeQuery({ name: `h${i}.example.com.nyud.net` }), s!.port));
    await waitFor(() => s!.server.stats().queries.udp === 50);
    await waitFor(() => answered(list) === 42); // no walk for them: answered at once (random)
    expect(walks).toHaveLength(8);
    expect(s.server.stats().hints).toMatchObject({ inFlight: 8, skippedBusy: 42 });
    await s.clock.advance(250); // the 8 answers waited hintTimeoutMs, no longer
    await waitFor(() => answered(list) === 50);
    expect(s.server.stats().hints.inFlight).toBe(8); // still walking, in the background
    await s.clock.advance(2000);
    expect(walks.every((w) => w.signal?.aborted)).toBe(true);
    expect(s.server.stats().hints).toMatchObject({ inFlight: 0, timedOut: 8 });
  });
});
