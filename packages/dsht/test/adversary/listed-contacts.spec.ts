/**
 * Lying answers over real UDP: a node the victim asks (a fleet member gone bad in keyed mode)
 * lists contacts whose id is not SHA-1 of their address — to steer lookups at a chosen host or
 * place made-up ids near a key — and many ids of one IP. The victim drops and counts them, never
 * sends a datagram to the mismatched addresses, and keeps at most one id of the IP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Contact } from '../../src/contact.js';
import type { Dsht } from '../../src/dsht.js';
import { keyFromName, nodeIdFor, toHex } from '../../src/id/id.js';
import type { Response } from '../../src/wire/messages.js';
import { MODES, Peer, startNode, Wire, type Mode } from './harness.js';

describe.each(MODES)('listed contacts (%s mode)', (mode: Mode) => {
  const net = mode === 'open' ? 1 : 2;
  const ip = (h: number) => `127.14.${net}.${h}`;
  let victim: Dsht;
  let liar: Peer;
  let target: Peer;
  const sybils: Peer[] = [];
  let listed: Contact[];

  beforeAll(async () => {
    victim = await startNode(ip(1), mode);
    liar = await Peer.bind(ip(66), new Wire(mode));
    target = await Peer.bind(ip(77), new Wire(mode)); // where mismatched contacts point
    for (let i = 0; i < 10; i++) {
      const s = await Peer.bind(ip(88), new Wire(mode));
      s.serve(() => ({ type: 'NODES', contacts: [] }));
      sybils.push(s);
    }
    listed = [
      // Made-up ids (placed wherever the liar wants in the id space) at the target's address.
      ...Array.from({ length: 8 }, (_, i) => ({
        id: keyFromName(`made-up ${i}`),
        ip: target.address.ip,
        port: target.address.port,
      })),
      // Honest-looking ids, all of one IP.
      ...sybils.map((s) => s.contact),
    ];
    liar.serve((req): Response => {
      switch (req.body.type) {
        case 'PING':
          return { type: 'PONG' };
        case 'GET':
          return { type: 'VALUES', values: [], contacts: listed };
        case 'STORE_PROBE':
          return { type: 'PROBE_RESULT', full: false, loaded: false, contacts: listed };
        default:
          return { type: 'NODES', contacts: listed };
      }
    });
    // The victim meets the liar (a round trip: the liar is a member now).
    await victim.ping(liar.address);
  });
  afterAll(async () => {
    for (const s of [liar, target, ...sybils]) await s.close();
    await victim.stop();
  });

  it('drops and counts mismatched and same-IP contacts in every kind of answer', async () => {
    await victim.findNode(keyFromName('made-up 3'));
    await victim.get(keyFromName('made-up 5'));
    await victim.put(keyFromName('made-up 6'), new Uint8Array([1]), 60).catch(() => undefined);
    const c = victim.authState().counters;
    expect(c.listedIdMismatch).toBeGreaterThanOrEqual(3 * 8);
    expect(c.listedIpLimited).toBeGreaterThanOrEqual(3 * (sybils.length - 1));
  });

  it('never contacts a mismatched address, and at most one id of the IP', () => {
    expect(target.received).toHaveLength(0);
    expect(sybils.filter((s) => s.received.length > 0).length).toBeLessThanOrEqual(1);
  });

  it('keeps none of the made-up ids and at most one id of the IP anywhere', () => {
    const made = new Set(listed.slice(0, 8).map((c) => toHex(c.id)));
    const all = [...victim.routes(0), ...victim.members()];
    expect(all.some((c) => made.has(typeof c.id === 'string' ? c.id : toHex(c.id)))).toBe(false);
    expect(victim.routes(0).filter((c) => c.ip === ip(88)).length).toBeLessThanOrEqual(1);
    expect(victim.members().filter((m) => m.ip === ip(88)).length).toBeLessThanOrEqual(1);
    expect(toHex(nodeIdFor(target.address.ip, target.address.port))).not.toBe(toHex(listed[0]!.id));
  });
});
