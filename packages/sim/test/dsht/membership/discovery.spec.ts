/**
 * Member discovery (maintenance.ts `discover`): in a fleet smaller than the bound every node comes
 * to know every other as a verified member, so all of them choose a URL's designated fetcher from
 * the same membership. Simulated network and clock; SWIM keeps the members it met live.
 */
import { describe, expect, it } from 'vitest';
import { SimFleet } from '../../../src/index.js';
import { MEMBER_DISCOVERY_MS } from '@coral/dsht/internal';

/** Run the fleet for `ms` of clock time. */
function sleep(fleet: SimFleet, ms: number): Promise<void> {
  return fleet.run(new Promise<void>((resolve) => fleet.clock.setTimeout(resolve, ms)));
}

async function formed(nodes: number, seed: number, discovery: boolean) {
  const fleet = new SimFleet({
    nodes,
    seed,
    latencyMs: () => 2,
    dsht: { swim: {}, ...(discovery ? { discovery: {} } : {}), service: { httpPort: 8090 } },
  });
  await fleet.start();
  await sleep(fleet, 12 * MEMBER_DISCOVERY_MS);
  const views = fleet.nodes.map((n) => n.members().length);
  await fleet.stop();
  return views;
}

describe('member discovery', () => {
  it.each([1, 2, 3])(
    'in a 40-node fleet every node knows the 39 others within a minute (seed %i)',
    async (seed) => {
      expect(new Set(await formed(40, seed, true))).toEqual(new Set([39]));
    },
  );

  it('without it, nodes of the same fleet know different parts of it', async () => {
    const views = await formed(40, 1, false);
    expect(Math.min(...views)).toBeLessThan(39);
  });
});
