/**
 * Failure detection under attack, over real UDP: a stranger cannot get a live member declared
 * dead or departed, and cannot make a node probe anything for it.
 *
 * - keyed mode: datagrams without the fleet key, or under a key of their own, are dropped before
 *   they are read — LEAVE, gossip and PING_REQ alike;
 * - open mode: a LEAVE counts only from the member itself (its address, with this node's write
 *   token), gossip only from verified members, and a third party's word that a member is dead is
 *   checked by a ping of the node's own (the member answers, and stays);
 * - PING_REQ names its target by id and is served only for a verified live member asking about
 *   another one: nothing reaches an address of the attacker's choosing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@coral/testkit';
import { FIRST_CONTACT_PAD_BYTES } from '../../src/constants.js';
import type { Dsht } from '../../src/dsht.js';
import { nodeIdFor, toHex } from '../../src/id/id.js';
import type { Request, WireMemberUpdate } from '../../src/wire/messages.js';
import { addrOf, barrier, MODES, Peer, startNode, Wire, type Mode } from './harness.js';

describe.each(MODES)('failure detection under attack (%s mode)', (mode: Mode) => {
  const net = mode === 'open' ? 21 : 22;
  const ip = (h: number) => `127.12.${net}.${h}`;
  let a: Dsht; // the node attacked
  let b: Dsht; // the member the attacker wants gone
  let c: Dsht; // another member
  let canary: Peer;
  let victim: Peer; // an address the attacker would like probed
  const sockets: Peer[] = [];
  const evicted: string[] = [];

  beforeAll(async () => {
    const opts = { swim: { probeIntervalMs: 200, probeTimeoutMs: 100 } };
    // The canary pings after every attack; its PINGs must not run out.
    a = await startNode(ip(1), mode, {
      ...opts,
      rateLimits: { PING: { perSecond: 10_000, burst: 10_000 } },
    });
    b = await startNode(ip(2), mode, opts, [addrOf(a)]);
    c = await startNode(ip(3), mode, opts, [addrOf(a), addrOf(b)]);
    await waitFor(() => a.member(toHex(b.id)) && a.member(toHex(c.id)) && b.member(toHex(c.id)), {
      what: 'a fleet of three',
      limitMs: 10_000,
    });
    a.on('member-dead', (m) => evicted.push(`dead ${m.id}`));
    a.on('member-left', (m) => evicted.push(`left ${m.id}`));
    canary = await Peer.bind(ip(99), new Wire(mode));
    victim = await Peer.bind(ip(200), new Wire(mode));
    sockets.push(canary, victim);
  });
  afterAll(async () => {
    for (const s of sockets) await s.close();
    for (const n of [a, b, c]) await n.stop();
  });

  const bHex = () => toHex(b.id);
  const stateOfB = () => a.failureDetection()!.members.find((m) => m.id === bHex())?.state;
  const update = (state: WireMemberUpdate['state']): WireMemberUpdate => ({
    id: b.id,
    state,
    incarnation: b.failureDetection()!.incarnation,
  });
  const attacks = (): Array<[string, Request]> => [
    ['gossip: b left', { type: 'PING', incarnation: 1, updates: [update('left')] }],
    ['gossip: b dead', { type: 'PING', incarnation: 1, updates: [update('dead')] }],
    ['gossip: b suspect', { type: 'PING', incarnation: 1, updates: [update('suspect')] }],
    [
      'PING_REQ for an address that is no member',
      {
        type: 'PING_REQ',
        target: nodeIdFor(victim.address.ip, victim.address.port),
        timeoutMs: 50,
      },
    ],
    ['PING_REQ for b', { type: 'PING_REQ', target: b.id, timeoutMs: 50 }],
    ['LEAVE', { type: 'LEAVE', incarnation: b.failureDetection()!.incarnation + 1 }],
  ];

  /** Send every attack from `attacker`, with the token it holds (if any), and let a process them. */
  async function attack(attacker: Peer, token?: Uint8Array, sender = attacker.contact) {
    for (const [, body] of attacks()) {
      const msg = attacker.request(body, { token, sender });
      await attacker.tell(a, msg, canary, token ? 0 : FIRST_CONTACT_PAD_BYTES.PING);
    }
    await barrier(a, canary);
  }

  /** b is still a live member of a, and nothing was probed on the attacker's behalf. */
  async function bStays(served: number) {
    // A suspicion (a third party's "dead") is cleared by a's own ping of b, not by waiting.
    await waitFor(() => stateOfB() === 'alive', { what: 'b alive at a', limitMs: 5_000 });
    expect(a.member(bHex())).toBeDefined();
    expect(evicted.filter((e) => e.endsWith(bHex()))).toEqual([]);
    expect(a.failureDetection()!.counters.indirectServed).toBe(served);
    expect(victim.received).toHaveLength(0);
  }

  it('a stranger without a round trip (keyed: without the key) changes nothing', async () => {
    const strangers =
      mode === 'keyed'
        ? [await Peer.bind(ip(50), new Wire('outsider')), await Peer.bind(ip(51), new Wire('open'))]
        : [await Peer.bind(ip(50), new Wire('open'))];
    sockets.push(...strangers);
    for (const s of strangers) {
      await attack(s); // no token
      await attack(s, new Uint8Array(8).fill(7)); // a made-up token
      // ... and in the name of b itself, from another socket (b's IP cannot be its source here).
      await attack(s, undefined, b.contact);
    }
    await bStays(0);
    if (mode === 'keyed') {
      const answered = strangers.flatMap((s) => s.received).filter((r) => r.msg !== undefined);
      expect(answered).toHaveLength(0);
    }
  });

  it("another socket on b's own IP, with a token of its own, cannot speak for b", async () => {
    // b's host, another port: the RPC layer matches IPs only; failure detection wants the address.
    const twin = await Peer.bind(b.contact.ip, new Wire(mode));
    sockets.push(twin);
    const asB = { ...b.contact };
    const pong = await twin.ask(a.contact, twin.request({ type: 'PING' }, { sender: asB }), {
      padTo: FIRST_CONTACT_PAD_BYTES.PING,
    });
    expect(pong?.msg.token).toBeDefined();
    await attack(twin, pong!.msg.token, asB);
    await bStays(0);
    expect(a.failureDetection()!.counters.leavesIgnored).toBeGreaterThan(0);
  });

  it.runIf(mode === 'open')(
    'a stranger that completed a round trip (a verified member in open mode) cannot evict b either',
    async () => {
      const member = await Peer.bind(ip(60), new Wire(mode));
      sockets.push(member);
      member.serve(() => ({ type: 'PONG' }));
      const token = await member.token(a.contact);
      const before = a.failureDetection()!.counters;
      await attack(member, token);
      await bStays(1); // its PING_REQ about b, a verified member: one ping of b, nothing else
      const after = a.failureDetection()!.counters;
      // Its LEAVE is about itself only; its "b left" was ignored, its "b dead" checked and refuted.
      expect(after.ignored).toBeGreaterThan(before.ignored);
      expect(after.indirectRefused).toBeGreaterThan(before.indirectRefused);
      expect(after.suspected).toBeGreaterThan(before.suspected);
    },
  );
});
