/**
 * Issue 10, attack 2 at the node level: 100 identities from one IP. Each is its own UDP socket on
 * one 127.x address (its own port, so its own id), completes real round trips with a running node,
 * answers its pings and claims an HTTP port. In keyed mode they hold the fleet key (insiders: the
 * per-IP limit must hold against members gone bad too). The node keeps at most `maxIdsPerIp` (1)
 * of them among its verified members, and its DNS server never names that IP more than once in an
 * answer, nor any address twice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CoralNode } from '../../src/compose/node.js';
import { resolveThrough } from '../../src/fleet/index.js';
import { randomSubnet, tmpDir } from '../helpers.js';
import { Attacker, FLEET_KEY, startPair, type Mode } from './attacker.js';

const SYBILS = 100;

describe.each(['keyed', 'open'] as Mode[])('100 identities from one IP (%s mode)', (mode) => {
  const subnet = randomSubnet();
  const ip = (h: number) => `127.0.${subnet}.${h}`;
  const SYBIL_IP = ip(88);
  const nodes: CoralNode[] = [];
  const sybils: Attacker[] = [];

  beforeAll(async () => {
    nodes.push(...(await startPair([ip(51), ip(52)], tmpDir(`sybil-${mode}`), mode)));
    for (let i = 0; i < SYBILS; i++) {
      const s = await new Attacker(SYBIL_IP, mode === 'keyed' ? [FLEET_KEY] : undefined).bind();
      s.profile = { httpPort: 8090 };
      sybils.push(s);
    }
  }, 30_000);

  afterAll(async () => {
    for (const s of sybils) s.close();
    for (const n of nodes.reverse()) await n.stop();
  });

  it('keeps at most maxIdsPerIp of them, and DNS never names that IP twice in an answer', async () => {
    const victim = nodes[0]!;
    const to = { ip: victim.dsht.contact.ip, port: victim.dsht.contact.port };
    const verified = await Promise.all(sybils.map((s) => s.roundTrip(to)));
    // The node pings every one of them (as it does contacts it hears of): they answer.
    await Promise.all(
      sybils.map((s) =>
        victim.view
          .ping({ ip: SYBIL_IP, port: s.port }, AbortSignal.timeout(5_000), 0)
          .catch(() => 0),
      ),
    );
    expect(verified.filter(Boolean).length).toBeGreaterThan(0);
    const fromSybilIp = () => victim.dsht.members().filter((m) => m.ip === SYBIL_IP);
    // One of them is a member (the test is not vacuous), never more.
    expect(fromSybilIp()).toHaveLength(victim.config.dsht.maxIdsPerIp);
    expect(victim.config.dsht.maxIdsPerIp).toBe(1);

    const names = Array.from({ length: 12 }, (_, i) => `www.site${i}.example.nyud.net`);
    let sybilAnswers = 0;
    for (const name of names) {
      const answer = await resolveThrough({ ip: ip(51), port: 5353 }, name, { tries: 1 });
      expect(answer.length, name).toBeGreaterThan(0);
      expect(new Set(answer).size, `${name}: ${answer.join(', ')}`).toBe(answer.length);
      const n = answer.filter((a) => a === SYBIL_IP).length;
      expect(n, `${name}: ${answer.join(', ')}`).toBeLessThanOrEqual(1);
      sybilAnswers += n;
      // Halfway, the sybils all try to get in again.
      if (name === names[names.length / 2]) {
        await Promise.all(sybils.map((s) => s.roundTrip(to)));
        expect(fromSybilIp().length).toBeLessThanOrEqual(1);
      }
    }
    // The admin view agrees (what operators and the dashboard see).
    const members = JSON.parse(
      (
        await victim.admin.handle({
          method: 'GET',
          url: '/v1/fleet/auth',
          headers: {},
          remoteAddress: '127.0.0.1',
        })
      ).body,
    ).members as { ip: string }[];
    expect(members.filter((m) => m.ip === SYBIL_IP).length).toBeLessThanOrEqual(1);
    expect(sybilAnswers).toBeLessThanOrEqual(names.length);
  }, 60_000);
});
