/**
 * Round-trip write tokens over real UDP: a STORE without a token the node handed to that exact
 * source address creates no state — no value, no rate bucket, no member, no table entry — and is
 * answered only with a token, never larger than the request. A STORE_PROBE (a read) is answered
 * without one, within the request's size, and writes nothing either. Open and keyed mode (the
 * keyed attacker is an insider: it holds the fleet key).
 */
import { ManualClock } from '@coral/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { FIRST_CONTACT_PAD_BYTES } from '../../src/constants.js';
import { Dsht } from '../../src/dsht.js';
import { keyFromName, toHex } from '../../src/id/id.js';
import { UdpTransport } from '../../src/transport/udp.js';
import { StoreStatus, WireErrorCode } from '../../src/wire/messages.js';
import {
  barrier,
  keyringFor,
  MODES,
  onlyKeyNotices,
  Peer,
  startNode,
  stateOf,
  Wire,
  type Mode,
} from './harness.js';

const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});

/** A node at `nodeIp` and a peer at each of `peerIps` (closed after the file), the node reached. */
async function setup(mode: Mode, nodeIp: string, peerIps: string[]) {
  const node = await startNode(nodeIp, mode);
  cleanup.push(() => node.stop());
  const peers: Peer[] = [];
  for (const a of peerIps) {
    const p = await Peer.bind(a, new Wire(mode));
    cleanup.push(() => p.close());
    peers.push(p);
  }
  await barrier(node, peers[peers.length - 1]!);
  return { node, peers };
}

/** No value, byte, member or table entry more than `before`. */
function expectNothingWritten(
  before: ReturnType<typeof stateOf>,
  after: ReturnType<typeof stateOf>,
): void {
  expect(after.values).toBe(before.values);
  expect(after.bytes).toBe(before.bytes);
  expect(after.members).toBe(before.members);
  expect(after.contacts).toBe(before.contacts);
}

describe.each(MODES)('write tokens (%s mode)', (mode: Mode) => {
  const net = mode === 'open' ? 1 : 2;
  const ip = (h: number) => `127.11.${net}.${h}`;

  it('a STORE without a valid token creates no state and gets only a token', async () => {
    const { node, peers } = await setup(mode, ip(1), [ip(66), ip(67), ip(99)]);
    const [attacker, other, canary] = peers as [Peer, Peer, Peer];
    const before = stateOf(node);
    const key = keyFromName('url:http://victim.example/');
    const store = {
      type: 'STORE',
      level: 0,
      key,
      value: new TextEncoder().encode('x'),
      ttl: 600,
    } as const;

    // No token at all, padded so an answer may come.
    const r = await attacker.ask(node.contact, attacker.request(store), { padTo: 400 });
    expect(r?.msg.body).toMatchObject({ type: 'ERROR', code: WireErrorCode.TOKEN_REQUIRED });
    expect(r!.size).toBeLessThanOrEqual(r!.sent);
    expect(r!.msg.token).toBeDefined();
    // A token handed to another address (the attacker's second socket) is no good here.
    const elsewhere = await other.token(node.contact);
    const forged = await attacker.ask(node.contact, attacker.request(store, { token: elsewhere }), {
      padTo: 400,
    });
    expect(forged?.msg.body).toMatchObject({ code: WireErrorCode.TOKEN_REQUIRED });
    // A made-up token neither.
    const guess = await attacker.ask(
      node.contact,
      attacker.request(store, { token: new Uint8Array(8).fill(7) }),
      { padTo: 400 },
    );
    expect(guess?.msg.body).toMatchObject({ code: WireErrorCode.TOKEN_REQUIRED });
    await barrier(node, canary);

    const after = stateOf(node);
    // The second socket's PING made a rate bucket for its own address, nothing else did.
    expectNothingWritten(before, after);
    expect(node.rpc.limiter.tracks(attacker.address.ip)).toBe(false);
    expect(node.member(toHex(attacker.contact.id))).toBeUndefined();
    expect(node.authState().counters.tokenRefused).toBe(3);

    // With the token handed to its own address, the same STORE is accepted — under its own name.
    const token = await attacker.token(node.contact);
    const ok = await attacker.ask(node.contact, attacker.request(store, { token }));
    expect(ok?.msg.body).toEqual({ type: 'STORE_RESULT', status: StoreStatus.ACCEPTED });
    const held = node.store.get(0, key);
    expect(held.map((v) => toHex(v.publisher))).toEqual([toHex(attacker.contact.id)]);
    expect(node.store.usage(attacker.address.ip).values).toBe(1);
    // A request carrying its token proves the round trip: the attacker is now a member.
    expect(node.member(toHex(attacker.contact.id))).toBeDefined();
  });

  it('a STORE_PROBE without a token is answered as a read: no larger than the request, nothing written', async () => {
    const { node, peers } = await setup(mode, ip(3), [ip(69), ip(70), ip(98)]);
    const [attacker, holder, canary] = peers as [Peer, Peer, Peer];
    // A member the answer can list, and a value under the probed key.
    const key = keyFromName('url:http://probed.example/');
    const token = await holder.token(node.contact);
    const put = { type: 'STORE', level: 0, key, value: new Uint8Array(8), ttl: 600 } as const;
    const stored = await holder.ask(node.contact, holder.request(put, { token }));
    expect(stored?.msg.body).toEqual({ type: 'STORE_RESULT', status: StoreStatus.ACCEPTED });
    const before = stateOf(node);

    const probe = { type: 'STORE_PROBE', level: 0, key, ttl: 600 } as const;
    // Unpadded: the answer is trimmed to the request's size (or not sent), never amplified.
    const small = await attacker.tell(node, attacker.request(probe), canary);
    if (small) expect(small.size).toBeLessThanOrEqual(small.sent);
    // Padded as a first contact is: the whole answer, with a token for the next request.
    const r = await attacker.ask(node.contact, attacker.request(probe), {
      padTo: FIRST_CONTACT_PAD_BYTES.STORE_PROBE,
    });
    expect(r?.msg.body).toMatchObject({ type: 'PROBE_RESULT', full: false, loaded: false });
    expect(r!.size).toBeLessThanOrEqual(r!.sent);
    expect(r!.msg.token).toBeDefined();
    if (r?.msg.body.type !== 'PROBE_RESULT') throw new Error('no probe result');
    expect(r.msg.body.contacts.map((c) => toHex(c.id))).toContain(toHex(holder.contact.id));
    await barrier(node, canary);

    expectNothingWritten(before, stateOf(node));
    expect(node.member(toHex(attacker.contact.id))).toBeUndefined();
    expect(node.authState().counters.tokenRefused).toBe(0);
    expect(node.store.get(0, key).map((v) => toHex(v.publisher))).toEqual([
      toHex(holder.contact.id),
    ]);
  });

  it('a token expires after two rotation periods', async () => {
    const clock = new ManualClock(Date.now());
    const node = new Dsht(
      {
        transport: new UdpTransport({}, { host: ip(2), port: 0 }),
        clock,
        keyring: keyringFor(mode),
      },
      { tokenRotateMs: 60_000, timers: false },
    );
    await node.start();
    const attacker = await Peer.bind(ip(68), new Wire(mode, clock));
    cleanup.push(
      () => node.stop(),
      () => attacker.close(),
    );
    const token = await attacker.token(node.contact);
    const store = {
      type: 'STORE',
      level: 0,
      key: keyFromName('k'),
      value: new Uint8Array(4),
      ttl: 60,
    } as const;
    const fresh = await attacker.ask(node.contact, attacker.request(store, { token }));
    expect(fresh?.msg.body.type).toBe('STORE_RESULT');
    await clock.advance(60_000); // the previous secret still verifies
    const older = await attacker.ask(node.contact, attacker.request(store, { token }));
    expect(older?.msg.body.type).toBe('STORE_RESULT');
    await clock.advance(60_000);
    const expired = await attacker.ask(node.contact, attacker.request(store, { token }), {
      padTo: FIRST_CONTACT_PAD_BYTES.STORE,
    });
    expect(expired?.msg.body).toMatchObject({ code: WireErrorCode.TOKEN_REQUIRED });
  });
});

describe('write tokens (keyed mode, outsider)', () => {
  it('a stranger without the fleet key gets no answer and leaves no state', async () => {
    const node = await startNode('127.11.3.1', 'keyed');
    const outsider = await Peer.bind('127.11.3.66', new Wire('outsider'));
    const canary = await Peer.bind('127.11.3.99', new Wire('keyed'));
    cleanup.push(
      () => node.stop(),
      () => outsider.close(),
      () => canary.close(),
    );
    await barrier(node, canary);
    const before = stateOf(node);
    const key = keyFromName('k');
    for (const body of [
      { type: 'PING' } as const,
      { type: 'STORE', level: 0, key, value: new Uint8Array(8), ttl: 60 } as const,
    ])
      await outsider.send(outsider.wire.frame(outsider.request(body), 1200), node.contact);
    await barrier(node, canary);
    expect(onlyKeyNotices(outsider)).toBe(2);
    expect(stateOf(node)).toEqual(before);
    expect(node.authState().counters.unknownKey).toBe(2);
  });
});
