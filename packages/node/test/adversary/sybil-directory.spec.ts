/**
 * Sybils against the DNS directory, over real UDP: one IP poses as 100 nodes, each a verified
 * round trip with the victim, each advertising an HTTP port and the victim's clusters, each hinted
 * under the victim's /24 key (the scene of @coral/dsht's adversary/sybil.spec.ts, whose tables,
 * members and cluster view keep at most one of them). No answer of the `DshtDirectory` over the
 * victim names more than one of them, nor any IP twice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeInfo } from '@coral/dnssrv';
import { MODES, type Mode } from '../../../dsht/test/adversary/harness.js';
import { fromIp, sybilFleet, type SybilFleet } from '../../../dsht/test/adversary/sybil-fleet.js';
import { DshtDirectory } from '../../src/adapters/node-directory.js';

describe.each(MODES)('100 identities from one IP and the DNS directory (%s mode)', (mode: Mode) => {
  let scene: SybilFleet;
  let directory: DshtDirectory;

  beforeAll(async () => {
    scene = await sybilFleet(mode);
    directory = new DshtDirectory({ dsht: scene.victim });
  });
  afterAll(async () => {
    await scene.close();
  });

  const fromSybilIp = (list: Array<{ ip?: string; ipv4?: string }>) => fromIp(list, scene.sybilIp);
  const distinctIps = (list: NodeInfo[]) =>
    new Set(list.map((n) => n.ipv4 ?? n.ipv6)).size === list.length;

  it('names at most one of them in any directory answer, and no IP twice', async () => {
    const { ip, victim } = scene;
    const hinted = await directory.hinted({ ip: ip(200) }, 50);
    expect(hinted.prefix).toBe(24);
    const answers: NodeInfo[][] = [
      hinted.nodes,
      await directory.near({ ip: ip(200) }, 50),
      await directory.near({ ip: '192.0.2.1' }, 50),
      directory.random(50),
      directory.inRegion('eu', 50),
      directory.cluster(0, 50),
      directory.cluster(1, 50),
      directory.cluster(2, 50),
    ];
    for (const a of answers) {
      expect(fromSybilIp(a)).toBeLessThanOrEqual(1);
      expect(distinctIps(a)).toBe(true);
    }
    expect(fromSybilIp(directory.random(50))).toBe(1);
    // Still at most one after the hinted ones were all pinged.
    expect(fromSybilIp(victim.members())).toBe(1);
  });
});
