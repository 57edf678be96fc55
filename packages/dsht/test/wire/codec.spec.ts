import { describe, expect, it } from 'vitest';
import { Packr } from 'msgpackr';
import { SeededRandom } from '@coral/testkit';
import type { Contact } from '../../src/contact.js';
import { MAX_DATAGRAM_BYTES, WIRE_VERSION } from '../../src/constants.js';
import { nodeIdFor, toHex } from '../../src/id/id.js';
import { decode, encode, encodePayload, TypeCode } from '../../src/wire/codec.js';
import type { Message } from '../../src/wire/messages.js';

const contact = (i: number): Contact => ({
  id: nodeIdFor(`10.0.0.${i}`, 4000),
  ip: `10.0.0.${i}`,
  port: 4000,
});
const sender: Contact = {
  ...contact(1),
  httpPort: 8090,
  dnsPort: 53,
  region: 'eu-west',
  clusters: [
    { level: 0, clusterId: new Uint8Array(20), size: 100, age: 3600 },
    { level: 2, clusterId: nodeIdFor('10.0.0.9', 4000), size: 7, age: 60 },
  ],
};
const key = nodeIdFor('key', 1);
const token = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]);

const samples: Message[] = [
  { kind: 'request', txid: 1, sender, body: { type: 'PING' } },
  { kind: 'request', txid: 1, sender, token, body: { type: 'PING' } },
  { kind: 'request', txid: 2, sender, body: { type: 'FIND_NODE', level: 1, target: key } },
  {
    kind: 'request',
    txid: 2,
    sender,
    body: { type: 'FIND_NODE', level: 0, target: key, count: 8 },
  },
  { kind: 'request', txid: 3, sender, body: { type: 'GET', level: 2, key, max: 4 } },
  { kind: 'request', txid: 4, sender, body: { type: 'STORE_PROBE', level: 0, key, ttl: 3600 } },
  {
    kind: 'request',
    txid: 0xffffffff,
    sender,
    body: {
      type: 'STORE',
      level: 0,
      key,
      value: new Uint8Array(512).fill(7),
      ttl: 20,
    },
  },
  {
    kind: 'request',
    txid: 5,
    sender,
    token,
    body: {
      type: 'STORE',
      level: 1,
      key,
      value: new Uint8Array(3),
      ttl: 20,
      copyOf: contact(2).id,
    },
  },
  { kind: 'response', txid: 6, sender, body: { type: 'PONG' } },
  { kind: 'response', txid: 6, sender, token, truncated: true, body: { type: 'PONG' } },
  {
    kind: 'response',
    txid: 7,
    sender,
    body: { type: 'NODES', contacts: [contact(2), { ...contact(3), httpPort: 80 }] },
  },
  {
    kind: 'response',
    txid: 8,
    sender,
    body: {
      type: 'VALUES',
      values: [
        { publisher: contact(4).id, value: new Uint8Array([1, 2, 3]), ttl: 30 },
        { publisher: contact(5).id, value: new Uint8Array([4]), ttl: 9, copy: true },
      ],
      contacts: [],
    },
  },
  {
    kind: 'response',
    txid: 9,
    sender,
    body: { type: 'PROBE_RESULT', full: true, loaded: false, contacts: [contact(5)] },
  },
  { kind: 'response', txid: 10, sender, body: { type: 'STORE_RESULT', status: 2 } },
  { kind: 'response', txid: 10, sender, body: { type: 'STORE_RESULT', status: 4 } },
  {
    kind: 'response',
    txid: 11,
    sender,
    body: { type: 'ERROR', code: 2, message: 'level 2 not served' },
  },
  // Failure detection: PING / PONG with an incarnation and gossip, PING_REQ, LEAVE, INDIRECT_ACK.
  {
    kind: 'request',
    txid: 12,
    sender,
    token,
    body: {
      type: 'PING',
      incarnation: 1_764_590_000_123,
      updates: [
        { id: contact(2).id, state: 'suspect', incarnation: 7 },
        { id: contact(3).id, state: 'dead', incarnation: 0 },
        { id: contact(4).id, state: 'left', incarnation: Number.MAX_SAFE_INTEGER },
        { id: contact(5).id, state: 'alive', incarnation: 1 },
      ],
    },
  },
  { kind: 'request', txid: 13, sender, body: { type: 'PING', incarnation: 0 } },
  { kind: 'response', txid: 13, sender, body: { type: 'PONG', incarnation: 42 } },
  {
    kind: 'request',
    txid: 14,
    sender,
    token,
    body: { type: 'PING_REQ', target: contact(6).id, timeoutMs: 320 },
  },
  { kind: 'response', txid: 14, sender, body: { type: 'INDIRECT_ACK', acked: true } },
  { kind: 'response', txid: 14, sender, body: { type: 'INDIRECT_ACK', acked: false } },
  { kind: 'request', txid: 15, sender, token, body: { type: 'LEAVE', incarnation: 99 } },
];

describe('wire codec', () => {
  it.each(samples.map((m) => [m.body.type, m] as const))('round-trips %s', (_t, msg) => {
    const data = encode(msg);
    expect(data[0]).toBe(WIRE_VERSION);
    expect(data.length).toBeLessThanOrEqual(MAX_DATAGRAM_BYTES);
    expect(decode(data)).toEqual(msg);
  });

  it('matches a fixed vector for PING (wire version 2)', () => {
    const s: Contact = { id: new Uint8Array(20).fill(0xab), ip: '127.0.0.1', port: 8091 };
    const data = encode({
      kind: 'request',
      txid: 0x01020304,
      sender: s,
      token: new Uint8Array(8).fill(0xcd),
      body: { type: 'PING' },
    });
    expect(Buffer.from(data).toString('hex')).toBe(
      '02' + // version 2 (open mode)
        '95' + // array(5)
        '01' + // PING
        'ce01020304' + // txid u32
        '00' + // flags
        '97' + // sender array(7)
        'c414' +
        'ab'.repeat(20) + // id bin8(20)
        'a93132372e302e302e31' + // "127.0.0.1"
        'cd1f9b' + // port 8091
        '00' +
        '00' +
        'a0' +
        '90' + // httpPort 0, dnsPort 0, region "", clusters []
        'c408' +
        'cd'.repeat(8), // token bin8(8)
    );
  });

  it('accepts zero padding after the message, nothing else', () => {
    const ping: Message = { kind: 'request', txid: 1, sender, body: { type: 'PING' } };
    const plain = encode(ping);
    for (const size of [plain.length, plain.length + 1, 300, 1200]) {
      const padded = encode(ping, MAX_DATAGRAM_BYTES, size);
      expect(padded.length).toBe(size);
      expect(decode(padded)).toEqual(ping);
    }
    const junk = encode(ping, MAX_DATAGRAM_BYTES, 300);
    junk[299] = 1;
    malformed(junk);
    malformed(encode(ping, MAX_DATAGRAM_BYTES + 1, MAX_DATAGRAM_BYTES + 1));
  });

  it('truncates an answer to nothing when asked, and marks it', () => {
    const msg: Message = {
      kind: 'response',
      txid: 1,
      sender,
      body: {
        type: 'VALUES',
        values: [{ publisher: key, value: new Uint8Array(400), ttl: 5 }],
        contacts: [contact(2), contact(3)],
      },
    };
    const small = encodePayload(msg, { limit: 150, truncate: true });
    expect(small.length).toBeLessThanOrEqual(150);
    const back = decode(Uint8Array.from([WIRE_VERSION, ...small]));
    expect(back).toMatchObject({ truncated: true, body: { values: [], contacts: [] } });
    // Without `truncate`, one value is always kept.
    expect(() => encodePayload(msg, { limit: 150 })).toThrow(
      expect.objectContaining({ code: 'DSHT_ERR_TOO_LARGE' }),
    );
  });

  it('trims contact lists to fit the datagram limit', () => {
    const many = Array.from({ length: 32 }, (_, i) => ({
      ...contact(i + 10),
      ip: `2001:db8::${i + 10}`,
      httpPort: 8090,
    }));
    const msg: Message = {
      kind: 'response',
      txid: 1,
      sender,
      body: { type: 'NODES', contacts: many },
    };
    const data = encode(msg);
    expect(data.length).toBeLessThanOrEqual(MAX_DATAGRAM_BYTES);
    const back = decode(data);
    expect(back.body.type === 'NODES' && back.body.contacts.length).toBeGreaterThan(10);
    expect(back.body.type === 'NODES' && back.body.contacts.length).toBeLessThan(32);
  });

  it('refuses to encode a request that cannot fit', () => {
    const big: Message = {
      kind: 'request',
      txid: 1,
      sender,
      body: { type: 'STORE', level: 0, key, value: new Uint8Array(512), ttl: 1 },
    };
    expect(() => encode(big, 300)).toThrow(expect.objectContaining({ code: 'DSHT_ERR_TOO_LARGE' }));
  });

  const malformed = (data: Uint8Array): void => {
    expect(() => decode(data)).toThrow(expect.objectContaining({ code: 'DSHT_ERR_MALFORMED' }));
  };

  it('rejects every truncation of every sample', () => {
    for (const m of samples) {
      const data = encode(m);
      for (let n = 0; n < data.length; n++) malformed(data.subarray(0, n));
    }
  });

  it('rejects oversized datagrams and wrong versions', () => {
    const data = encode(samples[0]!);
    const big = new Uint8Array(MAX_DATAGRAM_BYTES + 1);
    big.set(data);
    malformed(big);
    // Version 1 (no tokens) and the keyed version are not open-mode datagrams.
    for (const version of [1, 3, 0xff]) {
      const v = data.slice();
      v[0] = version;
      malformed(v);
    }
    // Non-zero bytes after the message.
    malformed(Uint8Array.from([...data, 7]));
  });

  it('rejects random bytes without throwing anything but MalformedMessageError', () => {
    const rng = new SeededRandom(42);
    for (let i = 0; i < 2000; i++) {
      const data = rng.bytes(new Uint8Array(1 + rng.int(300)));
      if (i % 2 === 0) data[0] = WIRE_VERSION;
      malformed(data);
    }
  });

  it('rejects wrongly typed fields', () => {
    const packr = new Packr({ useRecords: false });
    const s = [sender.id, sender.ip, sender.port, 0, 0, '', []];
    const e = new Uint8Array(0);
    // [type, txid, flags, sender, token, ...fields]
    const frame = (arr: unknown[]): Uint8Array => {
      const p = packr.pack(
        Array.isArray(arr) && arr.length >= 3
          ? [arr[0], arr[1], 0, arr[2], e, ...arr.slice(3)]
          : arr,
      );
      const out = new Uint8Array(p.length + 1);
      out[0] = WIRE_VERSION;
      out.set(p, 1);
      return out;
    };
    // Control: a well-formed FIND_NODE decodes.
    expect(decode(frame([TypeCode.FIND_NODE, 1, s, 0, key])).body.type).toBe('FIND_NODE');
    const bad: unknown[][] = [
      [TypeCode.FIND_NODE, 1, s, '0', key], // level as string
      [TypeCode.FIND_NODE, 1, s, 3, key], // level out of range
      [TypeCode.FIND_NODE, 1, s, 0, key.subarray(0, 19)], // short id
      [TypeCode.FIND_NODE, -1, s, 0, key], // negative txid
      [TypeCode.FIND_NODE, 1.5, s, 0, key], // fractional txid
      [TypeCode.FIND_NODE, 1, s, 0, key, 'extra'], // count not a number
      [TypeCode.FIND_NODE, 1, s, 0, key, 0], // count 0
      [TypeCode.FIND_NODE, 1, s, 0, key, 33], // count over the contact list's bound
      [TypeCode.FIND_NODE, 1, s, 0, key, 8, 8], // extra field
      [TypeCode.FIND_NODE, 1, s, 0], // missing field
      [0x42, 1, s], // unknown type
      [TypeCode.PING, 1, [sender.id, 'not-an-ip', 1, 0, 0, '', []]],
      [TypeCode.PING, 1, [sender.id, sender.ip, 0, 0, 0, '', []]], // port 0
      [TypeCode.PING, 1, [sender.id, sender.ip, 70000, 0, 0, '', []]],
      [TypeCode.PING, 1, [sender.id, sender.ip, 1, 0, 0, 'x'.repeat(65), []]],
      [TypeCode.PING, 1, [sender.id, sender.ip, 1, 0, 0, '', [[5, key, 1, 1]]]],
      [TypeCode.STORE, 1, s, 0, key, new Uint8Array(513), 10, e], // value too big
      [TypeCode.STORE, 1, s, 0, key, new Uint8Array(1), 0, e], // ttl 0
      [TypeCode.STORE, 1, s, 0, key, 'text', 10, e], // value not bytes
      [TypeCode.GET, 1, s, 0, key, 0], // max 0
      [TypeCode.PROBE_RESULT, 1, s, 1, 0, []], // booleans as numbers
      [TypeCode.STORE_RESULT, 1, s, 9],
      [TypeCode.NODES, 1, s, [[key, '10.0.0.1']]], // short contact
      [TypeCode.NODES, 1, s, { a: 1 }],
    ];
    for (const b of bad) malformed(frame(b));
    malformed(frame({ not: 'an array' } as unknown as unknown[]));
    const raw = (arr: unknown[]): Uint8Array => Uint8Array.from([WIRE_VERSION, ...packr.pack(arr)]);
    const f = [0, key];
    expect(decode(raw([TypeCode.FIND_NODE, 1, 0, s, e, ...f])).body.type).toBe('FIND_NODE');
    for (const b of [
      [TypeCode.FIND_NODE, 1, 1, s, e, ...f], // flags on a request
      [TypeCode.PONG, 1, 2, s, e], // unknown flag
      [TypeCode.FIND_NODE, 1, 0, s, new Uint8Array(17), ...f], // token too long
      [TypeCode.FIND_NODE, 1, 0, s, 'token', ...f], // token not bytes
      [TypeCode.STORE, 1, 0, s, e, 0, key, e, 10, new Uint8Array(19)], // copyOf not an id
      [TypeCode.VALUES, 1, 0, s, e, [[key, e, 5]], []], // value without its copy flag
      [TypeCode.VALUES, 1, 0, s, e, [[key, e, 5, 1]], []], // copy flag not a boolean
      [TypeCode.STORE_RESULT, 1, 0, s, e, 5], // unknown status
      [TypeCode.PING, 1, 0, s, e, 5], // incarnation without its updates
      [TypeCode.PING, 1, 0, s, e, -1, []], // negative incarnation
      [TypeCode.PING, 1, 0, s, e, 1.5, []], // fractional incarnation
      [TypeCode.PING, 1, 0, s, e, 2 ** 53, []], // beyond a safe integer
      [TypeCode.PONG, 1, 0, s, e, 1, [[key, 4, 1]]], // unknown member state
      [TypeCode.PONG, 1, 0, s, e, 1, [[key, 0]]], // short update
      [TypeCode.PONG, 1, 0, s, e, 1, [[key.subarray(1), 0, 1]]], // short member id
      [TypeCode.PONG, 1, 0, s, e, 1, Array(9).fill([key, 0, 1])], // more than 8 updates
      [TypeCode.PING_REQ, 1, 0, s, e, key, 0], // timeout 0
      [TypeCode.PING_REQ, 1, 0, s, e, key, 5_001], // timeout beyond MAX_PING_REQ_TIMEOUT_MS
      [TypeCode.PING_REQ, 1, 0, s, e, '10.0.0.1:4000', 100], // target not an id
      [TypeCode.LEAVE, 1, 0, s, e], // no incarnation
      [TypeCode.INDIRECT_ACK, 1, 0, s, e, 1], // acked not a boolean
    ])
      malformed(raw(b));
    expect(toHex(key)).toHaveLength(40);
  });
});
