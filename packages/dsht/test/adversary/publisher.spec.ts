/**
 * Forged publishers over real UDP: the publisher of a stored value is the authenticated sender,
 * never a field; only a value's own publisher replaces it; a path-cached copy never replaces (or
 * shadows) a first-hand value. The attacker has a round trip (a token) and, in keyed mode, the
 * fleet key — the strongest stranger there is short of taking over the honest publisher's address.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Dsht } from '../../src/dsht.js';
import { keyFromName, nodeIdFor, toHex } from '../../src/id/id.js';
import { StoreStatus } from '../../src/wire/messages.js';
import { addrOf, barrier, MODES, Peer, startNode, stateOf, Wire, type Mode } from './harness.js';

const text = (b: Uint8Array) => new TextDecoder().decode(b);
const bytes = (s: string) => new TextEncoder().encode(s);

describe.each(MODES)('forged publisher (%s mode)', (mode: Mode) => {
  const net = mode === 'open' ? 1 : 2;
  const ip = (h: number) => `127.13.${net}.${h}`;
  const key = keyFromName('url:http://www.victim.example/index.html');
  let victim: Dsht;
  let publisher: Dsht;
  let reader: Dsht;
  let attacker: Peer;
  let canary: Peer;

  beforeAll(async () => {
    victim = await startNode(ip(1), mode);
    publisher = await startNode(ip(2), mode, {}, [addrOf(victim)]);
    reader = await startNode(ip(3), mode, {}, [addrOf(victim)]);
    attacker = await Peer.bind(ip(66), new Wire(mode));
    canary = await Peer.bind(ip(99), new Wire(mode));
    // The honest publisher stores its record at the victim (the RPC layer fetches a token first).
    const r = await publisher.rpc.request(victim.contact, {
      type: 'STORE',
      level: 0,
      key,
      value: bytes('complete at 127.13.x.2'),
      ttl: 600,
    });
    expect(r.body).toEqual({ type: 'STORE_RESULT', status: StoreStatus.ACCEPTED });
  });
  afterAll(async () => {
    await attacker.close();
    await canary.close();
    for (const n of [reader, publisher, victim]) await n.stop();
  });

  const firstHand = () =>
    victim.store.get(0, key).filter((v) => !v.copy && toHex(v.publisher) === toHex(publisher.id));

  it('a STORE names its sender as publisher; it cannot replace another publisher’s value', async () => {
    const token = await attacker.token(victim.contact);
    const r = await attacker.ask(
      victim.contact,
      attacker.request({ type: 'STORE', level: 0, key, value: bytes('evil'), ttl: 600 }, { token }),
    );
    expect(r?.msg.body).toEqual({ type: 'STORE_RESULT', status: StoreStatus.ACCEPTED });
    expect(firstHand().map((v) => text(v.value))).toEqual(['complete at 127.13.x.2']);
    const mine = victim.store
      .get(0, key)
      .filter((v) => toHex(v.publisher) === toHex(attacker.contact.id));
    expect(mine.map((v) => text(v.value))).toEqual(['evil']);
  });

  it('a "copy" of the publisher’s value is refused while the original is there', async () => {
    const token = await attacker.token(victim.contact);
    const r = await attacker.ask(
      victim.contact,
      attacker.request(
        { type: 'STORE', level: 0, key, value: bytes('evil copy'), ttl: 600, copyOf: publisher.id },
        { token },
      ),
    );
    expect(r?.msg.body).toEqual({ type: 'STORE_RESULT', status: StoreStatus.EXISTS });
    expect(firstHand().map((v) => text(v.value))).toEqual(['complete at 127.13.x.2']);
    expect(victim.store.get(0, key).some((v) => v.copy)).toBe(false);
  });

  it('a datagram claiming to come from the publisher is dropped as spoofed', async () => {
    const before = stateOf(victim);
    const token = await attacker.token(victim.contact);
    const spoofedBefore = victim.authState().counters.spoofed;
    // The publisher's id and address in the sender field, sent from the attacker's address.
    const asPublisher = {
      id: publisher.id,
      ip: publisher.contact.ip,
      port: publisher.contact.port,
    };
    // The attacker's IP with another port, and the publisher's id (which does not match it).
    const mixed = { id: publisher.id, ip: attacker.address.ip, port: publisher.contact.port };
    for (const sender of [asPublisher, mixed]) {
      const msg = attacker.request(
        { type: 'STORE', level: 0, key, value: bytes('evil'), ttl: 600 },
        { token, sender },
      );
      expect(await attacker.tell(victim, msg, canary, 400)).toBeUndefined();
    }
    expect(victim.authState().counters.spoofed - spoofedBefore).toBe(2);
    expect(firstHand().map((v) => text(v.value))).toEqual(['complete at 127.13.x.2']);
    expect(stateOf(victim).values).toBe(before.values);
    expect(toHex(nodeIdFor(attacker.address.ip, attacker.address.port))).not.toBe(
      toHex(publisher.id),
    );
  });

  it('a get through the fleet returns the publisher’s own value, first-hand', async () => {
    const got = await reader.get(key, { maxValues: 16 });
    const fromPublisher = got.records.filter((r) => toHex(r.publisher) === toHex(publisher.id));
    expect(fromPublisher.map((r) => [text(r.value), r.copy ?? false])).toEqual([
      ['complete at 127.13.x.2', false],
    ]);
    await barrier(victim, canary);
  });
});
