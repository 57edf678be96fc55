/**
 * Sybils over real UDP: one IP poses as 100 nodes (one socket per port), each completing real
 * round trips, answering the victim's pings, advertising the victim's own clusters and an HTTP
 * port, and putting a locality hint for itself under the victim's hint key of its /24. At most
 * `maxIdsPerIp` (1) of them is ever kept anywhere: routing tables at every level, the members, the
 * cluster module's view (sybil-fleet.ts sets the scene), and every answer of the DNS directory —
 * which never names one IP twice (@coral/node's test/adversary/sybil-directory.spec.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toHex } from '../../src/id/id.js';
import { MODES, type Mode } from './harness.js';
import { fromIp, SYBILS, sybilFleet, type SybilFleet } from './sybil-fleet.js';

describe.each(MODES)('100 identities from one IP (%s mode)', (mode: Mode) => {
  let scene: SybilFleet;
  const fromSybilIp = (list: Array<{ ip?: string; ipv4?: string }>) => fromIp(list, scene.sybilIp);

  beforeAll(async () => {
    scene = await sybilFleet(mode);
  });
  afterAll(async () => {
    await scene.close();
  });

  it('keeps at most one of them in the routing table of every level and among the members', () => {
    const { victim, honest } = scene;
    for (let level = 0; level < 3; level++) {
      expect(fromSybilIp(victim.routes(level)), `level ${level}`).toBeLessThanOrEqual(1);
    }
    expect(fromSybilIp(victim.members())).toBe(1);
    expect(victim.authState().counters.ipLimited).toBeGreaterThanOrEqual(SYBILS - 1);
    // The honest nodes are all there.
    for (const h of honest) expect(victim.member(toHex(h.id))).toBeDefined();
  });

  it('keeps at most one of them in the cluster module’s view', () => {
    const m = scene.victim.clustering!.manager;
    for (let level = 0; level < 3; level++) {
      const keys = m.members(level).filter((k) => k.startsWith(`${scene.sybilIp}:`));
      expect(keys.length, `level ${level}`).toBeLessThanOrEqual(1);
    }
  });
});
