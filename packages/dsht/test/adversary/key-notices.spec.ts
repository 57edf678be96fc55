/**
 * Key notices over real UDP (auth/key-notices.ts). A node started with a key the fleet does not
 * hold learns it from the fleet's 13-byte notice and reports it once per interval, while a node
 * with the fleet's key hears nothing of the kind; the notice is never larger than the datagram it
 * answers and holds nothing but the sender's own key id and nonce; a spray of datagrams under
 * random key ids from one source gets at most that source's burst, from many sources at most the
 * global burst; and a forged notice is ignored unless it echoes a request the node sent to that
 * very address — and even then changes no state.
 *
 * The nodes whose limits or timers a test counts on run on a ManualClock (their buckets refill
 * only when the test says so); everything else is real sockets on 127.19.x.x.
 */
import { randomBytes } from 'node:crypto';
import { Keyring } from '@coral/keyring';
import { ManualClock, waitFor, type Clock } from '@coral/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import type { KeyRejection } from '../../src/auth/key-notices.js';
import {
  KEY_NOTICE_BYTES,
  KEY_NOTICE_GLOBAL_RATE,
  KEY_NOTICE_RATE,
  KEY_NOTICE_VERSION,
} from '../../src/constants.js';
import { Dsht } from '../../src/dsht.js';
import { RpcTimeoutError } from '../../src/errors.js';
import { UdpTransport } from '../../src/transport/udp.js';
import type { DshtOptions } from '../../src/types.js';
import { addrOf, barrier, FLEET_KEY, Peer, startNode, stateOf, Wire } from './harness.js';

const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});

const WRONG_KEY = 'e7'.repeat(32);
const WRONG_ID = Keyring.parse([WRONG_KEY]).primaryId;
const FLEET_ID = Keyring.parse([FLEET_KEY]).primaryId;

/** A keyed node over UDP on `ip` with the given clock and no timers; started unless `start` is false. */
async function nodeOn(
  ip: string,
  key: string,
  clock: Clock,
  options: DshtOptions = {},
  start = true,
): Promise<Dsht> {
  const node = new Dsht(
    {
      transport: new UdpTransport({}, { host: ip, port: 0 }),
      clock,
      keyring: Keyring.parse([key]),
    },
    { timers: false, ...options },
  );
  if (start) await node.start();
  cleanup.push(() => node.stop());
  return node;
}

async function peer(ip: string, wire: Wire): Promise<Peer> {
  const p = await Peer.bind(ip, wire);
  cleanup.push(() => p.close());
  return p;
}

/** `node`'s 'key-rejected' events, from now on. */
function rejections(node: Dsht): KeyRejection[] {
  const seen: KeyRejection[] = [];
  node.on('key-rejected', (r) => seen.push(r));
  return seen;
}

/** A keyed datagram of `size` bytes under a random key id: version 0x03, then random bytes. */
function underRandomKey(size: number): Uint8Array {
  const d = randomBytes(size);
  d[0] = 3;
  return d;
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/**
 * Wait until `node` has read `n` datagrams under unknown key ids in all (a spray goes in chunks:
 * a socket buffer holds only so many).
 */
function received(node: Dsht, n: number): Promise<unknown> {
  return waitFor(() => node.authState().counters.unknownKey >= n, { what: `${n} datagrams read` });
}

describe('a node with the wrong fleet key', () => {
  it('learns that the fleet does not accept its key id, once per interval; a right-key node does not', async () => {
    const seed = await startNode('127.19.1.1', 'keyed');
    cleanup.push(() => seed.stop());

    // The right key: joins, and nothing says its key is refused.
    const good = await startNode('127.19.1.2', 'keyed', {}, [addrOf(seed)]);
    cleanup.push(() => good.stop());
    expect(good.members().map((m) => m.port)).toEqual([seed.contact.port]);
    expect(good.authState().counters.keyRejected).toBe(0);
    expect(good.authState().keyRejection).toBeUndefined();
    expect(seed.authState().counters.keyNoticesSent).toBe(0);

    // The wrong key (its clock is the test's: its bootstrap ping waits until told).
    const clock = new ManualClock(Date.now());
    const wrong = await nodeOn('127.19.1.3', WRONG_KEY, clock, {}, false);
    const seen = rejections(wrong);
    const joined = wrong.start({ bootstrap: [addrOf(seed)] });
    void joined.catch(() => undefined);
    await waitFor(() => seen.length > 0, { what: 'the first key notice' });
    expect(seen[0]).toMatchObject({
      keyId: WRONG_ID,
      from: { ip: seed.contact.ip, port: seed.contact.port },
      notices: 1,
      fleetHeard: false,
    });
    expect(wrong.authState().keyRejection).toMatchObject({ keyId: WRONG_ID, from: addrOf(seed) });
    // The retransmissions are refused too: counted, not reported again within the interval.
    await clock.advance(1_000);
    await waitFor(() => wrong.authState().counters.keyRejected >= 2, { what: 'second notice' });
    await clock.advance(2_000);
    await waitFor(() => wrong.authState().counters.keyRejected >= 3, { what: 'third notice' });
    await clock.advance(4_000);
    await joined;
    expect(seen).toHaveLength(1);
    expect(wrong.members()).toEqual([]);
    expect(wrong.routes(0)).toEqual([]);
    expect(seed.authState().counters.keyNoticesSent).toBe(3);
    // A minute on, the next refusal is reported again, with the notices since the last report
    // (the two retransmissions' and its own).
    await clock.advance(60_000);
    const again = wrong.ping(seed.contact, { retries: 0 });
    await waitFor(() => seen.length > 1, { what: 'the next report' });
    expect(seen[1]).toMatchObject({ keyId: WRONG_ID, notices: 3, fleetHeard: false });
    await clock.advance(4_000);
    await expect(again).rejects.toBeInstanceOf(RpcTimeoutError);
    expect(seen).toHaveLength(2);
  });

  it('a seed with key notices off (WireGuard-silent) tells the wrong-key node nothing', async () => {
    const seed = await startNode('127.19.2.1', 'keyed', { auth: { keyNotices: false } });
    cleanup.push(() => seed.stop());
    const canary = await peer('127.19.2.99', new Wire('keyed'));
    const wrong = await peer('127.19.2.3', new Wire('outsider'));
    for (let i = 0; i < 8; i++) await wrong.send(underRandomKey(400), seed.contact);
    await barrier(seed, canary);
    expect(wrong.received).toHaveLength(0);
    expect(seed.authState().counters).toMatchObject({
      unknownKey: 8,
      keyNoticesSent: 0,
      keyNoticesLimited: 0,
    });
  });
});

describe('key notices a stranger can draw', () => {
  it('are never larger than the datagram they answer, hold only its key id and nonce, and one source gets at most its burst', async () => {
    const clock = new ManualClock(Date.now());
    const seed = await nodeOn('127.19.3.1', FLEET_KEY, clock);
    const canary = await peer('127.19.3.99', new Wire('keyed', clock));
    const attacker = await peer('127.19.3.66', new Wire('open'));
    await barrier(seed, canary);
    const before = stateOf(seed);
    const sent = new Map<string, Uint8Array>();
    const spray = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const d = underRandomKey(36 + ((i * 97) % 1165)); // 36 (the smallest keyed datagram) .. 1200
        sent.set(hex(d.subarray(11, 19)), d);
        await attacker.send(d, seed.contact);
        if (i % 32 === 31) await received(seed, sent.size);
      }
      await received(seed, sent.size);
      await barrier(seed, canary);
    };
    await spray(300);
    expect(attacker.received).toHaveLength(KEY_NOTICE_RATE.burst);
    for (const r of attacker.received) {
      expect(r.data.length).toBe(KEY_NOTICE_BYTES);
      expect(r.data[0]).toBe(KEY_NOTICE_VERSION);
      const d = sent.get(hex(r.data.subarray(5, 13)));
      expect(d, 'a notice answers a datagram the attacker sent').toBeDefined();
      expect(r.data.length).toBeLessThan(d!.length);
      // Its key id and nonce, and nothing of the seed's (no key id of its own, no fleet detail).
      expect(hex(r.data)).toBe(
        hex(Uint8Array.from([4, ...d!.subarray(1, 5), ...d!.subarray(11, 19)])),
      );
    }
    expect(seed.authState().counters).toMatchObject({
      unknownKey: 300,
      keyNoticesSent: KEY_NOTICE_RATE.burst,
      keyNoticesLimited: 300 - KEY_NOTICE_RATE.burst,
    });
    // Ten seconds refill what 0.5/s gives, up to the burst.
    await clock.advance(10_000);
    await spray(100);
    const refill = Math.min(KEY_NOTICE_RATE.burst, 10 * KEY_NOTICE_RATE.perSecond);
    expect(attacker.received).toHaveLength(KEY_NOTICE_RATE.burst + refill);
    expect(stateOf(seed)).toEqual(before);
    expect(seed.authState().isolated).toBe(false);
  });

  it('from many sources at once, at most the global burst', async () => {
    const clock = new ManualClock(Date.now());
    const seed = await nodeOn('127.19.4.1', FLEET_KEY, clock);
    const canary = await peer('127.19.4.99', new Wire('keyed', clock));
    // Twelve sources in twelve /24s (so no network bucket binds first), 50 datagrams each.
    const attackers: Peer[] = [];
    for (let i = 0; i < 12; i++)
      attackers.push(await peer(`127.19.${10 + i}.66`, new Wire('open')));
    await barrier(seed, canary);
    for (let round = 0; round < 50; round++) {
      for (const a of attackers) await a.send(underRandomKey(64), seed.contact);
      await received(seed, (round + 1) * attackers.length);
    }
    await barrier(seed, canary);
    const got = attackers.reduce((n, a) => n + a.received.length, 0);
    expect(got).toBe(KEY_NOTICE_GLOBAL_RATE.burst);
    for (const a of attackers) expect(a.received.length).toBeLessThanOrEqual(KEY_NOTICE_RATE.burst);
    expect(seed.authState().counters.keyNoticesSent).toBe(KEY_NOTICE_GLOBAL_RATE.burst);
    expect(seed.rpc.notices!.sources).toBeLessThanOrEqual(2 * attackers.length);
  });
});

describe('a forged key notice', () => {
  it('is ignored unless it echoes a request sent to that address, and changes no state even then', async () => {
    // Both on the test's clock: nothing happens between them unless the test says so.
    const clock = new ManualClock(Date.now());
    const member = await nodeOn('127.19.5.2', FLEET_KEY, clock);
    const node = await nodeOn('127.19.5.1', FLEET_KEY, clock);
    await node.ping(member.contact);
    expect(node.members().map((m) => m.port)).toEqual([member.contact.port]);
    const canary = await peer('127.19.5.99', new Wire('keyed', clock));
    const onPath = await peer('127.19.5.66', new Wire('open'));
    const other = await peer('127.19.5.67', new Wire('open'));
    const seen = rejections(node);
    await barrier(node, canary);

    const state = () => ({
      ...stateOf(node),
      members: node.members().map((m) => m.id),
      routes: node.routes(0).map((c) => c.port),
      isolated: node.authState().isolated,
      pending: node.rpc.pendingCount,
      expecting: node.rpc.notices!.expecting,
    });
    const notice = (keyId: Uint8Array, nonce: Uint8Array) =>
      Uint8Array.from([KEY_NOTICE_VERSION, ...keyId, ...nonce]);
    const fleetId = Buffer.from(FLEET_ID, 'hex');

    // Blind forgeries: the node's own key id with random nonces, malformed lengths, and the
    // member's address named nowhere (an attacker cannot send from it).
    const quiet = state();
    for (let i = 0; i < 50; i++) await onPath.send(notice(fleetId, randomBytes(8)), node.contact);
    for (const n of [1, 12, 14, 1200]) {
      const d = randomBytes(n);
      d[0] = KEY_NOTICE_VERSION;
      await onPath.send(d, node.contact);
    }
    await barrier(node, canary);
    expect(node.authState().counters).toMatchObject({ keyNoticesIgnored: 54, keyRejected: 0 });
    expect(seen).toEqual([]);
    expect(state()).toEqual(quiet);

    // The node sends a first-contact PING to the on-path attacker, which reads its nonce.
    const pinged = node.ping(onPath.address);
    let settled = false;
    void pinged.then(
      () => (settled = true),
      () => (settled = true),
    );
    const request = await waitFor(() => onPath.received[0]?.data, { what: 'the node’s PING' });
    const nonce = request.subarray(11, 19);
    const waiting = state();
    expect(waiting.pending).toBe(1);
    expect(waiting.expecting).toBe(1);
    // Echoed from another address, or under another key id: ignored.
    await other.send(notice(fleetId, nonce), node.contact);
    await onPath.send(notice(Buffer.from(WRONG_ID, 'hex'), nonce), node.contact);
    await barrier(node, canary);
    expect(node.authState().counters).toMatchObject({ keyNoticesIgnored: 56, keyRejected: 0 });
    expect(seen).toEqual([]);
    // Echoed exactly, from the address it went to: reported — a hint, and nothing more.
    await onPath.send(notice(fleetId, nonce), node.contact);
    await onPath.send(notice(fleetId, nonce), node.contact); // a copy counts no more
    await barrier(node, canary);
    expect(node.authState().counters).toMatchObject({ keyNoticesIgnored: 57, keyRejected: 1 });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ keyId: FLEET_ID, from: onPath.address, fleetHeard: true });
    // Nothing moved: the member stays, the tables and isolation are as they were, and the PING
    // still waits for its answer or its timeout (the notice ended nothing).
    expect(state()).toEqual({ ...waiting, expecting: 0 });
    expect(settled).toBe(false);
    await clock.advance(7_000);
    await expect(pinged).rejects.toBeInstanceOf(RpcTimeoutError);
    expect(node.members().map((m) => m.port)).toEqual([member.contact.port]);
    expect(await node.ping(member.contact)).toBeGreaterThanOrEqual(0);
  });
});
