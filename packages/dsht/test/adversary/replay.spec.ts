/**
 * Keyed mode over real UDP: replayed, unauthenticated, unknown-key, tampered and stale datagrams
 * are dropped before the message is read, counted by reason, answered with nothing (an unknown key
 * id: with a 13-byte key notice alone), and change nothing. The captured datagrams are real: a fleet member's signed requests, replayed byte for
 * byte from the member's own socket and from the attacker's.
 */
import { ManualClock } from '@coral/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Dsht } from '../../src/dsht.js';
import { keyFromName } from '../../src/id/id.js';
import { encode } from '../../src/wire/codec.js';
import { StoreStatus } from '../../src/wire/messages.js';
import { barrier, Peer, startNode, stateOf, Wire } from './harness.js';

const ip = (h: number) => `127.17.1.${h}`;

describe('replayed and unauthenticated datagrams (keyed mode)', () => {
  let node: Dsht;
  let member: Peer;
  let attacker: Peer;
  let canary: Peer;

  beforeAll(async () => {
    node = await startNode(ip(1), 'keyed');
    member = await Peer.bind(ip(10), new Wire('keyed'));
    attacker = await Peer.bind(ip(66), new Wire('keyed'));
    canary = await Peer.bind(ip(99), new Wire('keyed'));
    await barrier(node, canary);
  });
  afterAll(async () => {
    for (const p of [member, attacker, canary]) await p.close();
    await node.stop();
  });

  it('a replayed request is dropped, from the member’s socket or any other, and changes nothing', async () => {
    const key = keyFromName('url:http://replay.example/');
    const token = await member.token(node.contact);
    const store = (text: string) =>
      member.wire.frame(
        member.request(
          { type: 'STORE', level: 0, key, value: new TextEncoder().encode(text), ttl: 600 },
          { token },
        ),
      );
    // The member stores v1, then replaces it with v2. Both datagrams are "captured".
    const v1 = store('v1');
    const v2 = store('v2');
    for (const d of [v1, v2]) {
      const before = member.received.length;
      await member.send(d, node.contact);
      await barrier(node, canary);
      expect(member.received.length).toBe(before + 1);
      expect(member.received.at(-1)?.msg?.body).toEqual({
        type: 'STORE_RESULT',
        status: StoreStatus.ACCEPTED,
      });
    }
    const state = stateOf(node);
    const replayed = node.authState().counters.replayed;
    const heard = member.received.length;
    // Replaying v1 would bring the old value back: from the member's socket, then the attacker's.
    await member.send(v1, node.contact);
    await attacker.send(v1, node.contact);
    await attacker.send(v2, node.contact);
    await barrier(node, canary);
    expect(node.authState().counters.replayed - replayed).toBe(3);
    expect(member.received.length).toBe(heard);
    expect(attacker.received).toHaveLength(0);
    expect(stateOf(node)).toEqual(state);
    expect(node.localGet(key).map((v) => new TextDecoder().decode(v))).toEqual(['v2']);
  });

  it('unauthenticated, unknown-key, tampered and stale datagrams: dropped, counted, unanswered', async () => {
    const before = node.authState().counters;
    const state = stateOf(node);
    const ping = () => attacker.request({ type: 'PING' });
    const send = (d: Uint8Array) => attacker.send(d, node.contact);
    // Not keyed datagrams at all: open mode, wire version 1, garbage, a truncated keyed one.
    await send(new Wire('open').frame(ping(), 1200));
    await send(Uint8Array.from([1, ...encode(ping()).subarray(1)]));
    await send(Uint8Array.from({ length: 200 }, (_, i) => (i * 37) & 255));
    await send(member.wire.frame(ping()).subarray(0, 30));
    // Keyed under a key the fleet does not hold (answered by a key notice echoing its key id and nonce).
    const outsider = new Wire('outsider').frame(ping(), 1200);
    await send(outsider);
    // A member's datagram with one payload byte or one MAC byte changed.
    for (const at of [40, -1]) {
      const d = member.wire.frame(member.request({ type: 'PING' }), 400).slice();
      d[at < 0 ? d.length + at : at]! ^= 0x20;
      await send(d);
    }
    // Signed with the key but two minutes in the past, and two minutes in the future.
    for (const skew of [-120_000, 120_000]) {
      const wire = new Wire('keyed', new ManualClock(Date.now() + skew));
      await send(wire.frame(ping(), 400));
    }
    await barrier(node, canary);
    const after = node.authState().counters;
    expect(after.unauthenticated - before.unauthenticated).toBe(4);
    expect(after.unknownKey - before.unknownKey).toBe(1);
    expect(after.badMac - before.badMac).toBe(2);
    expect(after.stale - before.stale).toBe(2);
    expect(after.malformed).toBe(before.malformed); // nothing got as far as the decoder
    // Nothing answered but the unknown key id, by a notice of 13 bytes naming it: nothing of the node's.
    expect(attacker.received.map((r) => [...r.data])).toEqual([
      [4, ...outsider.subarray(1, 5), ...outsider.subarray(11, 19)],
    ]);
    expect(stateOf(node)).toEqual(state);
    expect(node.authState().unknownKeys).toHaveLength(1);
    expect(node.authState().isolated).toBe(false); // it has authenticated traffic
  });
});
