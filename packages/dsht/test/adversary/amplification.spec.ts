/**
 * Amplification over real UDP: to a source that has not completed a round trip (no valid token),
 * no answer of any message type is larger than the request — whatever the request asks for, and
 * however small it is. A request carrying its token gets the full answer. Open and keyed mode (the
 * keyed attacker is an insider; an outsider gets no answer at all, only a few key notices smaller
 * than what it sent).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRST_CONTACT_PAD_BYTES } from '../../src/constants.js';
import type { Dsht } from '../../src/dsht.js';
import { keyFromName } from '../../src/id/id.js';
import type { Request } from '../../src/wire/messages.js';
import { addrOf, MODES, onlyKeyNotices, Peer, startNode, Wire, type Mode } from './harness.js';

describe.each(MODES)('amplification (%s mode)', (mode: Mode) => {
  const net = mode === 'open' ? 1 : 2;
  const ip = (h: number) => `127.12.${net}.${h}`;
  const hot = keyFromName('url:http://big.example/');
  let node: Dsht;
  const peers: Dsht[] = [];
  const sockets: Peer[] = [];
  let canary: Peer;

  beforeAll(async () => {
    // The canary pings before every check; its PINGs must not run out (rate limits: other tests).
    node = await startNode(ip(1), mode, {
      service: { httpPort: 8090, region: 'r'.repeat(64) },
      rateLimits: { PING: { perSecond: 10_000, burst: 10_000 } },
    });
    for (let i = 0; i < 14; i++) peers.push(await startNode(ip(10 + i), mode, {}, [addrOf(node)]));
    await node.join();
    // Large values under one key, so a GET could draw a full datagram.
    for (let i = 0; i < 4; i++)
      node.store.store(0, hot, keyFromName(`pub${i}`), new Uint8Array(500).fill(i), 600);
    canary = await Peer.bind(ip(99), new Wire(mode));
    sockets.push(canary);
  });
  afterAll(async () => {
    for (const s of sockets) await s.close();
    for (const p of [node, ...peers]) await p.stop();
  });

  const requests: Array<[string, Request]> = [
    ['PING', { type: 'PING' }],
    ['FIND_NODE', { type: 'FIND_NODE', level: 0, target: keyFromName('anywhere') }],
    ['GET with values', { type: 'GET', level: 0, key: hot, max: 16 }],
    ['GET without values', { type: 'GET', level: 0, key: keyFromName('nothing'), max: 16 }],
    ['GET at an unserved level', { type: 'GET', level: 2, key: hot, max: 16 }],
    ['STORE_PROBE', { type: 'STORE_PROBE', level: 0, key: hot, ttl: 600 }],
    ['STORE', { type: 'STORE', level: 0, key: hot, value: new Uint8Array(0), ttl: 600 }],
  ];

  it.each(requests)(
    'no answer to an unverified %s is larger than the request',
    async (_n, body) => {
      const s = await Peer.bind(ip(50 + sockets.length), new Wire(mode));
      sockets.push(s);
      for (const padTo of [0, 120, 300, 700, 1200]) {
        for (const token of [undefined, new Uint8Array(8)]) {
          const r = await s.tell(node, s.request(body, { token }), canary, padTo);
          if (r) expect(r.size, `padTo ${padTo}`).toBeLessThanOrEqual(r.sent);
          else expect(padTo).toBeLessThan(300); // only the smallest requests go unanswered
        }
      }
    },
  );

  it('an honest first contact (padded) gets a full answer; one with a token, a large one', async () => {
    const s = await Peer.bind(ip(70), new Wire(mode));
    sockets.push(s);
    const find = { type: 'FIND_NODE', level: 0, target: keyFromName('x') } as const;
    const padded = await s.ask(node.contact, s.request(find), {
      padTo: FIRST_CONTACT_PAD_BYTES.FIND_NODE,
    });
    expect(padded?.msg.truncated).toBeUndefined();
    expect(padded?.msg.body.type === 'NODES' && padded.msg.body.contacts.length).toBe(14);
    const token = padded!.msg.token!;
    // A converging walk asks fewer: the answer carries the closest that many.
    const few = await s.ask(node.contact, s.request({ ...find, count: 5 }, { token }));
    expect(few?.msg.body.type === 'NODES' && few.msg.body.contacts).toEqual(
      padded?.msg.body.type === 'NODES' && padded.msg.body.contacts.slice(0, 5),
    );
    const get = await s.ask(node.contact, s.request(requests[2]![1], { token }));
    expect(get!.size).toBeGreaterThan(get!.sent * 5); // verified: the answer may be large
    expect(get!.msg.body.type === 'VALUES' && get!.msg.body.values.length).toBeGreaterThan(0);
  });

  it('counts it all: amplificationMax ≤ 1 over every message type', () => {
    const a = node.authState();
    expect(a.amplificationMax).toBeGreaterThan(0);
    expect(a.amplificationMax).toBeLessThanOrEqual(1);
    const byType = node.snapshot().rpc.amplificationMaxByType;
    expect(Object.keys(byType).sort()).toEqual(
      ['FIND_NODE', 'GET', 'PING', 'STORE', 'STORE_PROBE'].sort(),
    );
    for (const r of Object.values(byType)) expect(r).toBeLessThanOrEqual(1);
    expect(a.counters.amplificationTrimmed + a.counters.amplificationDropped).toBeGreaterThan(0);
  });

  if (mode === 'keyed') {
    it('an outsider gets no answer, only a few 13-byte key notices', async () => {
      const s = await Peer.bind(ip(80), new Wire('outsider'));
      sockets.push(s);
      for (const [, body] of requests) {
        expect(await s.tell(node, s.request(body), canary, 1200)).toBeUndefined();
      }
      expect(onlyKeyNotices(s)).toBeGreaterThan(0);
    });
  }
});
