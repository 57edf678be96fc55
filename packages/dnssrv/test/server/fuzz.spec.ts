/**
 * Seeded fuzzing. What goes where:
 *
 * - 100,000 random and mutated packets are SENT OVER REAL UDP on loopback (from 127.0.1.9, in
 *   batches of 128; the test waits until the server has received each batch, so every one of them
 *   goes through the socket's receive loop). The server runs with its default rate limiting, as
 *   in production, so most of its answers to that one source are dropped or slipped.
 * - 50,000 more go straight to `handlePacket()` (UDP and TCP paths, no rate limiting on TCP), where
 *   the test checks every answer: nothing thrown, and any answer is a response (QR set) to the
 *   same transaction id that dns2's independent parser can read.
 *
 * Afterwards the server must still answer a valid query correctly (Node's stub resolver) and
 * must not have hit a single internal error.
 */
import dgram from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { SeededRandom } from '@coral/testkit';
import { TYPE } from '../../src/index.js';
import { encodeQuery, fleet, header, node, parse, waitFor } from '../helpers.js';
import { lastDecision, resolver, start, type Started } from './support.js';

let s: Started | undefined;
afterEach(async () => {
  await s?.server.close();
  s = undefined;
});

const TEMPLATES = [
  encodeQuery({ name: 'www.example.com.nyud.net' }),
  encodeQuery({ name: 'WwW.ExAmple.com.8080.nyud.net', type: TYPE.AAAA, rd: true }),
  encodeQuery({ name: 'nyud.net', type: TYPE.NS, edns: { udpSize: 4096 } }),
  encodeQuery({ name: 'nyud.net', type: TYPE.SOA }),
  encodeQuery({ name: 'foo.nyud.net' }),
  encodeQuery({ name: 'www.example.org' }),
  encodeQuery({ name: 'a.b.c.nyud.net', type: TYPE.ANY }),
  encodeQuery({
    name: 'cdn.example.net.nyud.net',
    edns: { dnssecOk: true, ecs: { sourcePrefix: 24, address: [198, 51, 100] } },
  }),
  encodeQuery({
    name: 'x.y.nyud.net',
    edns: { ecs: { sourcePrefix: 56, family: 2, address: [0x20, 1, 0xd, 0xb8, 0, 0, 1] } },
  }),
];

/** One fuzz packet: 30% random bytes, 70% a mutated valid query. */
function fuzzPacket(rng: SeededRandom): Buffer {
  if (rng.next() < 0.3)
    return Buffer.from(rng.bytes(new Uint8Array(rng.int(rng.next() < 0.8 ? 64 : 700))));
  const t = TEMPLATES[rng.int(TEMPLATES.length)]!;
  let b = Buffer.from(t);
  const mutations = 1 + rng.int(4);
  for (let m = 0; m < mutations; m++) {
    switch (rng.int(8)) {
      case 0: // flip bits
        for (let i = 0, n = 1 + rng.int(8); i < n; i++) b[rng.int(b.length)]! ^= 1 << rng.int(8);
        break;
      case 1: // replace bytes
        for (let i = 0, n = 1 + rng.int(4); i < n; i++) b[rng.int(b.length)] = rng.int(256);
        break;
      case 2: // truncate
        b = b.subarray(0, rng.int(b.length + 1));
        break;
      case 3: // append garbage
        b = Buffer.concat([b, Buffer.from(rng.bytes(new Uint8Array(1 + rng.int(40))))]);
        break;
      case 4: // absurd or wrong counts
        if (b.length >= 12)
          b.writeUInt16BE(rng.next() < 0.5 ? 0xffff : rng.int(4), 4 + 2 * rng.int(4));
        break;
      case 5: // a compression pointer somewhere (loops, forward, into the header)
        if (b.length >= 14) {
          const at = 12 + rng.int(b.length - 13);
          b[at] = 0xc0 | rng.int(0x40);
          b[at + 1] = rng.int(256);
        }
        break;
      case 6: // bad label length
        if (b.length > 12) b[12 + rng.int(b.length - 12)] = [0x40, 0x80, 0x3f, 0xff][rng.int(4)]!;
        break;
      case 7: // header flags (QR, opcode, Z, rcode)
        if (b.length >= 4) {
          b[2] = rng.int(256);
          b[3] = rng.int(256);
        }
        break;
    }
  }
  return b;
}

describe('fuzz', () => {
  it('100,000 random and mutated packets over UDP (+50,000 direct), then still answers correctly', async () => {
    s = await start({ rrl: {} }, fleet().add(node(2))); // production rate-limiting defaults
    const rng = new SeededRandom(20261129);

    const sock = dgram.createSocket('udp4');
    await new Promise<void>((r) => sock.bind(0, '127.0.1.9', () => r()));
    let replies = 0;
    let badReplies = 0;
    sock.on('message', (m) => {
      replies++;
      if (m.length < 12 || !header(m).qr) badReplies++;
    });
    const TOTAL = 100_000;
    const BATCH = 128;
    for (let sent = 0; sent < TOTAL;) {
      const n = Math.min(BATCH, TOTAL - sent);
      for (let i = 0; i < n; i++) sock.send(fuzzPacket(rng), s.port, '127.0.0.1');
      sent += n;
      await waitFor(() => s!.server.stats().queries.udp === sent, { limitMs: 20_000 });
    }
    expect(s.server.stats().queries.udp).toBe(TOTAL);

    // Direct calls, every answer checked.
    for (let i = 0; i < 50_000; i++) {
      const p = fuzzPacket(rng);
      const transport = i % 2 === 0 ? 'tcp' : 'udp';
      const out = await s.server.handlePacket(p, { address: '127.0.2.10', port: 5353 }, transport);
      if (out === null) continue;
      expect(out.length).toBeGreaterThanOrEqual(12);
      expect(header(out).qr).toBe(true);
      expect(header(out).id).toBe(p.readUInt16BE(0));
      if (i % 50 === 1) expect(() => parse(out)).not.toThrow();
    }

    // Still alive and correct (from another /24, so rate limiting of the fuzz source is no factor).
    const got = await resolver(s.port).resolve4('www.example.com.nyud.net');
    expect(got.sort()).toEqual(['10.0.0.1', '10.0.0.2']);
    const st = s.server.stats();
    expect(st.internalErrors).toBe(0);
    expect(st.malformed).toBeGreaterThan(50_000);
    expect(st.rcodes.FORMERR).toBeGreaterThan(1000);
    expect(badReplies).toBe(0);
    expect(lastDecision(s.server)).toMatchObject({
      client: '127.0.0.1',
      outcome: 'sent',
      rcode: 'NOERROR',
    });
    expect(replies).toBeGreaterThan(0);
    sock.close();
  });
});
