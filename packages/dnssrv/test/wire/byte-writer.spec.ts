import dns2 from 'dns2';
import { describe, expect, it } from 'vitest';
import { SeededRandom } from '@coral/testkit';
import { ByteWriter, type Dns2Writer } from '../../src/wire/byte-writer.js';
import { encodeResponse } from '../../src/wire/encode.js';
import type { ResourceRecord, ResponseSpec } from '../../src/wire/records.js';

const dns2Writer = (): Dns2Writer =>
  new (dns2.Packet as unknown as { Writer: new () => Dns2Writer }).Writer();

describe('ByteWriter — the dns2 writer contract over bytes', () => {
  it('writes MSB-first bit fields, aligned or not, like dns2’s writer', () => {
    const ours = new ByteWriter();
    const theirs = dns2Writer();
    const fields: [number, number][] = [
      [0xbeef, 16],
      [1, 1],
      [5, 4],
      [0, 1],
      [1, 1],
      [0x2a, 7], // 30 bits: unaligned
      [3, 2], // 32: aligned again
      [0xdeadbeef, 32],
      [-1, 16],
      [0x7fffffff, 32],
    ];
    for (const [d, size] of fields) {
      ours.write(d, size);
      theirs.write(d, size);
    }
    expect(ours.bitLength()).toBe(theirs.bitLength());
    expect(ours.byteLength()).toBe(theirs.byteLength());
    expect(ours.toBuffer().equals(theirs.toBuffer())).toBe(true);
  });

  it('patches a field in place and appends another writer’s bits', () => {
    const ours = new ByteWriter();
    const theirs = dns2Writer();
    const inner = dns2Writer();
    inner.write(0x0102, 16);
    inner.write(0x3, 8);
    for (const w of [ours, theirs]) {
      w.write(0xffff, 16);
      w.write(0, 16); // placeholder
      w.writeBuffer(inner as unknown as { buffer: number[] });
      w.patch(16, 0xabcd, 16);
      w.patch(3, 0, 2); // clears two bits inside the first byte
    }
    expect(ours.toBuffer()).toEqual(theirs.toBuffer());
    expect([...ours.toBuffer()]).toEqual([0xe7, 0xff, 0xab, 0xcd, 0x01, 0x02, 0x03]);
  });

  it('grows past its first buffer', () => {
    const w = new ByteWriter();
    for (let i = 0; i < 3000; i++) w.write(i & 0xff, 8);
    const b = w.toBuffer();
    expect(b.length).toBe(3000);
    expect(b[2999]).toBe(2999 & 0xff);
  });
});

describe('encodeResponse through ByteWriter = dns2’s own writer, byte for byte', () => {
  const rnd = new SeededRandom(7);
  const label = () => {
    const chars = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_';
    let s = '';
    for (let i = 0, n = 1 + rnd.int(12); i < n; i++) s += chars[rnd.int(chars.length)];
    return s;
  };
  const name = (zone: string) => [...Array.from({ length: rnd.int(4) }, label), zone].join('.');
  const ip4 = () => Array.from({ length: 4 }, () => rnd.int(256)).join('.');
  const ip6 = () => Array.from({ length: 8 }, () => rnd.int(0x10000).toString(16)).join(':');
  function record(owner: string): ResourceRecord {
    const ttl = rnd.int(2) ? 30 : rnd.int(0x7fffffff);
    switch (rnd.int(5)) {
      case 0:
        return { type: 'A', name: owner, ttl, address: ip4() };
      case 1:
        return { type: 'AAAA', name: owner, ttl, address: ip6() };
      case 2:
        return { type: 'CNAME', name: owner, ttl, target: name('example.org') };
      case 3:
        return { type: 'NS', name: owner, ttl, host: name('nyud.net') };
      default:
        return {
          type: 'SOA',
          name: owner,
          ttl,
          mname: name('nyud.net'),
          rname: name('nyud.net'),
          serial: rnd.int(0xffffffff),
          refresh: rnd.int(100000),
          retry: rnd.int(100000),
          expire: rnd.int(10000000),
          minimum: rnd.int(100000),
        };
    }
  }
  function spec(): ResponseSpec {
    const q = name('nyud.net');
    const n = (k: number) =>
      Array.from({ length: rnd.int(k) }, () => record(rnd.int(2) ? q : name('nyud.net')));
    const withOpt = rnd.int(3) > 0;
    const family = rnd.int(2) === 0 ? 1 : 2;
    const prefix = rnd.int(family === 1 ? 33 : 129);
    const address = new Uint8Array(family === 1 ? 4 : 16);
    rnd.bytes(address.subarray(0, Math.ceil(prefix / 8)));
    return {
      id: rnd.int(0x10000),
      rd: rnd.int(2) === 1,
      cd: rnd.int(2) === 1,
      aa: rnd.int(2) === 1,
      rcode: withOpt && rnd.int(8) === 0 ? 16 : rnd.int(6),
      question: { name: q, type: [1, 28, 2, 6, 255][rnd.int(5)]!, class: 1 },
      answers: n(4),
      authorities: n(3),
      additionals: n(3),
      ...(withOpt
        ? {
            opt: {
              udpSize: 512 + rnd.int(4000),
              dnssecOk: rnd.int(2) === 1,
              ...(rnd.int(2)
                ? {
                    ecs: {
                      family: family as 1 | 2,
                      sourcePrefix: prefix,
                      scopePrefix: rnd.int(prefix + 1),
                      address,
                    },
                  }
                : {}),
            },
          }
        : {}),
    };
  }

  it('2,000 random responses (all record kinds, compression, OPT, ECS, BADVERS)', () => {
    for (let i = 0; i < 2000; i++) {
      const s = spec();
      // encodeResponse builds a fresh dns2 Packet each call, so the two runs see the same input.
      const ours = encodeResponse(s);
      const theirs = encodeResponse(s, dns2Writer());
      if (!ours.equals(theirs)) {
        throw new Error(
          `response ${i} differs:\n${ours.toString('hex')}\n${theirs.toString('hex')}`,
        );
      }
    }
  });
});
