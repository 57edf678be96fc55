/**
 * One IP posing as 100 nodes over real UDP (one socket per port), each completing real round trips
 * with a victim node, answering its pings, advertising the victim's own clusters and an HTTP port,
 * and putting a locality hint for itself under the victim's hint key of its /24; three honest
 * nodes beside them. The victim forms its clusters (three levels) and has pinged every sybil.
 * dsht's sybil.spec checks the victim's tables, members and cluster view; @coral/node's checks its
 * DNS directory over the same scene.
 */
import { Dsht } from '../../src/dsht.js';
import { encodeNodeRecord, networkHintKeys } from '../../src/directory/hints.js';
import type { Response } from '../../src/wire/messages.js';
import { barrier, keyringFor, Peer, startNode, Wire, type Mode } from './harness.js';

export const SYBILS = 100;

export interface SybilFleet {
  /** An address of this scene's /16 (127.15.1.x open, 127.15.2.x keyed). */
  ip: (h: number) => string;
  /** The IP every sybil shares. */
  sybilIp: string;
  victim: Dsht;
  honest: Dsht[];
  close(): Promise<void>;
}

export async function sybilFleet(mode: Mode): Promise<SybilFleet> {
  const net = mode === 'open' ? 1 : 2;
  const ip = (h: number) => `127.15.${net}.${h}`;
  const sybilIp = ip(88);
  const victim = await Dsht.open(
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
  await victim.start();
  const canary = await Peer.bind(ip(99), new Wire(mode));
  const honest: Dsht[] = [];
  for (let i = 0; i < 3; i++) {
    const boot = [`${victim.contact.ip}:${victim.contact.port}`];
    honest.push(
      await startNode(ip(10 + i), mode, { service: { httpPort: 8090, region: 'eu' } }, boot),
    );
  }
  const adverts = victim.contact.clusters;
  const hint = networkHintKeys(sybilIp)[0]!.key;
  const sybils: Peer[] = [];
  for (let i = 0; i < SYBILS; i++) {
    const s = await Peer.bind(sybilIp, new Wire(mode));
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
  return {
    ip,
    sybilIp,
    victim,
    honest,
    async close() {
      for (const s of [canary, ...sybils]) await s.close();
      for (const n of [...honest, victim]) await n.stop();
    },
  };
}

/** How many of `list` are at the sybils' IP. */
export function fromIp(list: Array<{ ip?: string; ipv4?: string }>, ip: string): number {
  return list.filter((c) => (c.ip ?? c.ipv4) === ip).length;
}
