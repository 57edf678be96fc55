/**
 * The parallel fleet (issue 15): a 120-node fleet on 2 shards — worker threads, as the benchmark
 * runs it — joins, puts and gets with every operation succeeding; the same seed and shard count
 * give the same figures twice, and the same as the shards run one after the other in this thread
 * (so thread timing plays no part); every datagram that crossed between shards arrived at exactly
 * its send time plus its latency, never after the receiver's clock had passed that time.
 *
 * The worker threads run the `tsc -b` output (packages/sim/dist), as the multi-process tests do.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { keyFromName } from '@coral/dsht';
import { defaultIp } from '../../src/fleet/fleet.js';
import { uniformRttLatency } from '../../src/network/sim-network.js';
import { ParallelFleet, type ParallelFleetOptions } from '../../src/parallel/parallel-fleet.js';
import type { FleetOp } from '../../src/parallel/ops.js';

const NODES = 120;
const SEED = 7;
const KEYS = ['5a'.repeat(32)];
const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const dec = (b: Uint8Array): string => new TextDecoder().decode(b);

/** Join, 60 puts and 60 gets by other nodes; every figure a run yields. */
async function workload(options: Partial<ParallelFleetOptions>) {
  const fleet = new ParallelFleet({ nodes: NODES, seed: SEED, keys: KEYS, workers: 2, ...options });
  try {
    await fleet.start();
    const joinedAt = fleet.now();
    const puts: FleetOp[] = Array.from({ length: 60 }, (_, i) => ({
      kind: 'put',
      node: (i * 7) % NODES,
      key: keyFromName(`k-${i}`),
      value: enc(`v-${i}`),
      ttl: 3600,
    }));
    const putResults = await fleet.run(puts);
    const gets: FleetOp[] = puts.map((p, i) => ({
      kind: 'get',
      node: (p.node + 1 + i) % NODES,
      key: keyFromName(`k-${i}`),
    }));
    const getResults = await fleet.run(gets);
    const found = getResults.map((r, i) => r.values?.some((v) => dec(v) === `v-${i}`) ?? false);
    return {
      fleet,
      figures: {
        joinedAt,
        now: fleet.now(),
        windows: fleet.windows,
        puts: putResults.map((r) => r.ok),
        found,
        stats: getResults.map((r) => r.stats),
        tables: await fleet.tableSizes(0),
        network: await fleet.stats(),
        trust: await fleet.trust(),
        holders: await fleet.holders(keyFromName('k-3')),
        root: await fleet.closest(keyFromName('k-3')),
      },
    };
  } catch (err) {
    await fleet.close();
    throw err;
  }
}

describe('ParallelFleet (2 shards)', () => {
  const open: ParallelFleet[] = [];
  afterAll(async () => {
    await Promise.all(open.map((f) => f.close()));
  });

  it('joins, puts and gets with every operation succeeding, on worker threads', async () => {
    const { fleet, figures } = await workload({ trace: true });
    open.push(fleet);
    expect(figures.puts.every(Boolean)).toBe(true);
    expect(figures.found.filter(Boolean).length).toBe(60);
    expect(Math.min(...figures.tables)).toBeGreaterThan(10);
    expect(figures.network.sent).toBeGreaterThan(1000);
    expect(figures.network.unreachable).toBe(0);
    expect(figures.holders).toBeGreaterThan(0);
    // Between runs every shard stands at the fleet's time, none past it.
    for (const t of await fleet.shardTimes()) expect(t).toBeLessThanOrEqual(fleet.now());
  });

  it('delivers every datagram that crossed shards at exactly send time + latency', async () => {
    const fleet = open[0]!;
    const latency = uniformRttLatency(20, 200, SEED);
    const traces = await fleet.trace();
    expect(traces).toHaveLength(2);
    for (const [shard, entries] of traces.entries()) {
      expect(entries.length).toBeGreaterThan(500);
      for (const e of entries) {
        // Received by this shard, sent by the other.
        expect(e.to % 2).toBe(shard);
        expect(e.from % 2).toBe(1 - shard);
        expect(e.deliverAt).toBe(e.sentAt + latency(defaultIp(e.from), defaultIp(e.to)));
        expect(e.at).toBe(e.deliverAt);
        expect(e.deliverAt - e.sentAt).toBeGreaterThanOrEqual(fleet.windowMs);
      }
    }
  });

  it('gives the same figures twice, and the same without threads', async () => {
    const first = open[0]!;
    const again = await workload({});
    open.push(again.fleet);
    const inline = await workload({ threads: false });
    open.push(inline.fleet);
    const reference = await workload({ threads: false });
    open.push(reference.fleet);
    expect(again.figures).toEqual(reference.figures);
    expect(inline.figures).toEqual(reference.figures);
    expect(first.now()).toBe(reference.figures.now);
  });

  it('refuses a node it does not have and a shard count of zero', async () => {
    await expect(
      open[1]!.run([{ kind: 'get', node: NODES, key: keyFromName('x') }]),
    ).rejects.toThrow(/no node/);
    expect(() => new ParallelFleet({ nodes: 4, seed: 1, workers: 0 })).toThrow(/bad workers/);
  });
});

describe('a process that uses a parallel fleet', () => {
  it('exits with code 0 after close() — waiting for the unref’d workers keeps it alive', async () => {
    const { spawnSync } = await import('node:child_process');
    const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const path = await import('node:path');
    const dist = new URL('../../dist/index.js', import.meta.url).href;
    const script = `
      import { ParallelFleet } from ${JSON.stringify(dist)};
      const fleet = new ParallelFleet({ nodes: 12, seed: 3, workers: 2 });
      await fleet.start();
      await fleet.close();
      console.log('closed');
    `;
    const dir = mkdtempSync(path.join(tmpdir(), 'coral-sim-exit-'));
    const file = path.join(dir, 'run.mjs');
    writeFileSync(file, script);
    const r = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 60_000 });
    rmSync(dir, { recursive: true, force: true });
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('closed');
    // 13 = a top-level await that never settled (close() awaiting an unref'd worker's exit).
    expect(r.status).toBe(0);
  });
});
