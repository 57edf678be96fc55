/**
 * A 200-node simulated fleet (uniform 20-200 ms RTT, seed 1). Every node puts its own key.
 *
 * Every-key-by-every-node is 39,800 gets; to keep the suite fast this runs (a) every pair for a
 * sample of keys — each sampled key is got by all 199 other nodes — and (b) a random sample of other
 * keys from every node, so every key is got by several nodes and every node gets several keys.
 * The full 1,000-node, every-node-gets run is `npm run bench:dsht`.
 */
import { describe, expect, it } from 'vitest';
import { SeededRandom, shuffle } from '@coral/testkit';
import { keyFromName } from '@coral/dsht';
import { SimFleet } from '../../src/fleet/fleet.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

async function putAll(fleet: SimFleet, prefix: string): Promise<Uint8Array[]> {
  const keys = fleet.nodes.map((_, i) => keyFromName(`${prefix}-${i}`));
  await fleet.run(
    Promise.all(fleet.nodes.map((n, i) => n.put(keys[i]!, enc(`${prefix}-${i}`), 3600))),
  );
  return keys;
}

async function getPairs(fleet: SimFleet, pairs: Array<[number, number]>, prefix: string) {
  let ok = 0;
  const failures: string[] = [];
  const results = await fleet.run(
    Promise.all(
      pairs.map(async ([getter, owner]) => {
        const r = await fleet.nodes[getter]!.get(keyFromName(`${prefix}-${owner}`)).catch(
          () => undefined,
        );
        return {
          getter,
          owner,
          found:
            r?.values.some((v) => new TextDecoder().decode(v) === `${prefix}-${owner}`) ?? false,
        };
      }),
    ),
  );
  for (const r of results) {
    if (r.found) ok++;
    else failures.push(`${r.getter}->${r.owner}`);
  }
  return { ok, total: pairs.length, failures };
}

describe('200-node simulated fleet', () => {
  it('every key put by any node is found from other nodes: all pairs for sampled keys at 0% loss, and ≥ 99% at 5% loss', async () => {
    const N = 200;
    const fleet = new SimFleet({ nodes: N, seed: 1 });
    await fleet.start();
    const rng = new SeededRandom(1);

    // 0% loss.
    await putAll(fleet, 'k');
    const pairs: Array<[number, number]> = [];
    const owners = shuffle([...Array(N).keys()], rng).slice(0, 5);
    for (const owner of owners) for (let g = 0; g < N; g++) if (g !== owner) pairs.push([g, owner]);
    for (let g = 0; g < N; g++) {
      // The next node's key (so every key is asked for), plus four at random.
      const next = (g + 1) % N;
      const others = shuffle(
        [...Array(N).keys()].filter((o) => o !== g && o !== next),
        rng,
      ).slice(0, 4);
      for (const o of [next, ...others]) pairs.push([g, o]);
    }
    // Every key gets asked for by someone.
    expect(new Set(pairs.map((p) => p[1])).size).toBe(N);
    const clean = await getPairs(fleet, pairs, 'k');
    expect(clean.failures).toEqual([]);
    expect(clean.ok).toBe(clean.total);

    // 5% loss: fresh keys put and got under loss.
    fleet.setLoss(0.05);
    await putAll(fleet, 'l');
    const lossy: Array<[number, number]> = [];
    for (let g = 0; g < N; g++) {
      const others = shuffle(
        [...Array(N).keys()].filter((o) => o !== g),
        rng,
      ).slice(0, 6);
      for (const o of others) lossy.push([g, o]);
    }
    const withLoss = await getPairs(fleet, lossy, 'l');
    expect(withLoss.ok / withLoss.total).toBeGreaterThanOrEqual(0.99);
    expect(fleet.network.stats.lost).toBeGreaterThan(0);
  }, 180_000);
});
