/**
 * Many strangers, each proving a real round trip from an address of its own (one socket per
 * 127.x address), against a node with a small member bound: its registry stays within the bound,
 * and the honest nodes in its routing table stay members and stay in the table — a flood of
 * verified newcomers cannot push a node's quiet routing-table contacts out. Open and keyed mode
 * (the keyed attackers are insiders: they hold the fleet key).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { toHex } from '../../src/id/id.js';
import type { Dsht } from '../../src/dsht.js';
import { barrier, MODES, Peer, startNode, Wire, type Mode } from './harness.js';

const STRANGERS = 120;
const MAX_MEMBERS = 40;
/** Small buckets, so that the routing table holds fewer contacts than the member bound. */
const K = 4;

const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});

describe.each(MODES)('a flood of verified strangers (%s mode)', (mode: Mode) => {
  const net = mode === 'open' ? 1 : 2;
  const ip = (a: number, h: number) => `127.17.${2 * a + net}.${h}`;

  it('keeps the registry within its bound and the routing table’s honest contacts in it', async () => {
    const rateLimits = { PING: { perSecond: 10_000, burst: 10_000 } };
    const victim = await startNode(ip(0, 1), mode, { maxMembers: MAX_MEMBERS, k: K, rateLimits });
    cleanup.push(() => victim.stop());
    const boot = [`${victim.contact.ip}:${victim.contact.port}`];
    const honest: Dsht[] = [];
    for (let i = 0; i < 4; i++) {
      const h = await startNode(ip(0, 10 + i), mode, {}, boot);
      cleanup.push(() => h.stop());
      honest.push(h);
    }
    for (const h of honest) expect(victim.table(0)!.has(h.id)).toBe(true);
    const canary = await Peer.bind(ip(0, 99), new Wire(mode));
    cleanup.push(() => canary.close());
    for (let i = 0; i < STRANGERS; i++) {
      const s = await Peer.bind(ip(1, 1 + i), new Wire(mode));
      cleanup.push(() => s.close());
      s.serve(() => ({ type: 'PONG' }));
      const token = await s.token(victim.contact);
      // A request that carries the token: a completed round trip, as an honest newcomer's.
      expect(await s.ask(victim.contact, s.request({ type: 'PING' }, { token }))).toBeDefined();
    }
    await barrier(victim, canary);
    const snap = victim.snapshot();
    expect(snap.members.known).toBeLessThanOrEqual(MAX_MEMBERS);
    // The bound was reached (strangers beyond the table's room were admitted, then dropped) and
    // the honest ones stayed.
    expect(snap.members.known).toBeGreaterThan(victim.table(0)!.size);
    expect(victim.authState().counters.ipLimited).toBe(0);
    for (const h of honest) {
      expect(victim.member(toHex(h.id)), h.contact.ip).toBeDefined();
      expect(victim.table(0)!.has(h.id), h.contact.ip).toBe(true);
    }
  });
});
