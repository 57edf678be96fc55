/**
 * Sybils over real UDP: one IP poses as 100 nodes (one socket per port), each completing real
 * round trips, answering the victim's pings, advertising the victim's own clusters and an HTTP
 * port, and putting a locality hint for itself under the victim's hint key of its /24. At most
 * `maxIdsPerIp` (1) of them is ever kept anywhere: routing tables at every level, the members, the
 * cluster module's view, and every answer of the DNS directory — which never names one IP twice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DshtClusterBinding } from '../../src/cluster/dsht-binding.js';
import { encodeNodeRecord, networkHintKeys } from '../../src/directory/hints.js';
import { DshtDirectory, type DirectoryNode } from '../../src/directory/node-directory.js';
import { Dsht } from '../../src/dsht.js';
import { toHex } from '../../src/id/id.js';
import type { Response } from '../../src/wire/messages.js';
import { barrier, keyringFor, MODES, Peer, Wire, type Mode } from './harness.js';

const SYBILS = 100;

describe.each(MODES)('100 identities from one IP (%s mode)', (mode: Mode) => {
  const net = mode === 'open' ? 1 : 2;
  const ip = (h: number) => `127.15.${net}.${h}`;
  const SYBIL_IP = ip(88);
  let victim: Dsht;
  let binding: DshtClusterBinding;
  let directory: DshtDirectory;
  let canary: Peer;
  const sybils: Peer[] = [];
  const honest: Dsht[] = [];

  beforeAll(async () => {
    victim = await Dsht.open(
      {
        bind: { host: ip(1), port: 0 },
        levels: 3,
        clustering: {},
        service: { httpPort: 8090, region: 'eu' },
        // Generous limits: this test is about identities, not rates (rate-limits.spec covers those).
        rateLimits: {
          PING: { perSecond: 10_000, burst: 10_000 },
          STORE: { perSecond: 10_000, burst: 10_000 },
        },
      },
      { keyring: keyringFor(mode) },
    );
    binding = victim.clustering!;
    await victim.start();
    directory = new DshtDirectory({ dsht: victim });
    canary = await Peer.bind(ip(99), new Wire(mode));
    for (let i = 0; i < 3; i++) {
      const h = await Dsht.open(
        { bind: { host: ip(10 + i), port: 0 }, service: { httpPort: 8090, region: 'eu' } },
        { keyring: keyringFor(mode) },
      );
      await h.start({ bootstrap: [`${victim.contact.ip}:${victim.contact.port}`] });
      honest.push(h);
    }
    const adverts = victim.contact.clusters;
    const hint = networkHintKeys(SYBIL_IP)[0]!.key;
    for (let i = 0; i < SYBILS; i++) {
      const s = await Peer.bind(SYBIL_IP, new Wire(mode));
      s.profile = { httpPort: 8090, region: 'eu', clusters: adverts };
      s.serve((req): Response =>
        req.body.type === 'PING' ? { type: 'PONG' } : { type: 'NODES', contacts: [] },
      );
      sybils.push(s);
      const token = await s.token(victim.contact);
      // A request carrying the token: a completed round trip, as an honest newcomer's would be.
      await s.ask(victim.contact, s.request({ type: 'PING' }, { token }));
      await s.ask(
        victim.contact,
        s.request(
          { type: 'STORE', level: 0, key: hint, value: encodeNodeRecord(s.contact), ttl: 600 },
          { token },
        ),
      );
    }
    // The victim pings every one of them (as its directory does with hinted nodes): they answer.
    await Promise.all(sybils.map((s) => victim.ping(s.address, { retries: 0 }).catch(() => 0)));
    await barrier(victim, canary);
  });
  afterAll(async () => {
    for (const s of [canary, ...sybils]) await s.close();
    for (const n of [...honest, victim]) await n.stop();
  });

  const fromSybilIp = (list: Array<{ ip?: string; ipv4?: string }>) =>
    list.filter((c) => (c.ip ?? c.ipv4) === SYBIL_IP).length;
  const distinctIps = (list: DirectoryNode[]) =>
    new Set(list.map((n) => n.ipv4 ?? n.ipv6)).size === list.length;

  it('keeps at most one of them in the routing table of every level and among the members', () => {
    for (let level = 0; level < 3; level++) {
      expect(fromSybilIp(victim.routes(level)), `level ${level}`).toBeLessThanOrEqual(1);
    }
    expect(fromSybilIp(victim.members())).toBe(1);
    expect(victim.authState().counters.ipLimited).toBeGreaterThanOrEqual(SYBILS - 1);
    // The honest nodes are all there.
    for (const h of honest) expect(victim.member(toHex(h.id))).toBeDefined();
  });

  it('keeps at most one of them in the cluster module’s view', () => {
    const m = binding.manager;
    for (let level = 0; level < 3; level++) {
      const keys = m.members(level).filter((k) => k.startsWith(`${SYBIL_IP}:`));
      expect(keys.length, `level ${level}`).toBeLessThanOrEqual(1);
    }
  });

  it('names at most one of them in any directory answer, and no IP twice', async () => {
    const hinted = await directory.hinted({ ip: ip(200) }, 50);
    expect(hinted.prefix).toBe(24);
    const answers: DirectoryNode[][] = [
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
