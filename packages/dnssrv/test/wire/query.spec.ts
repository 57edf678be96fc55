import { describe, expect, it } from 'vitest';
import { SeededRandom } from '@coral/testkit';
import { decodeQuery, questionLabels } from '../../src/index.js';
import { encodeQuery } from '../helpers.js';

function fails(b: Uint8Array) {
  const r = decodeQuery(b);
  if (r.ok) throw new Error('expected a failure');
  return r;
}

describe('decodeQuery — valid queries', () => {
  it('decodes a plain query, keeping the case as sent and lowercasing the key', () => {
    const msg = encodeQuery({ name: 'WwW.Example.COM.nyud.net', type: 28, id: 0xbeef, rd: true });
    const r = decodeQuery(msg);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.query).toMatchObject({
      id: 0xbeef,
      rd: true,
      qname: 'www.example.com.nyud.net',
      escaped: false,
      qtype: 28,
      qclass: 1,
    });
    expect(r.query.opt).toBeUndefined();
    expect(questionLabels(msg, r.query)).toEqual(['WwW', 'Example', 'COM', 'nyud', 'net']);
  });

  it('decodes EDNS with an ECS option', () => {
    const r = decodeQuery(
      encodeQuery({
        name: 'a.b.nyud.net',
        edns: { udpSize: 4096, dnssecOk: true, ecs: { sourcePrefix: 24, address: [198, 51, 100] } },
      }),
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.query.opt).toMatchObject({ udpSize: 4096, version: 0, dnssecOk: true });
    expect(r.query.opt!.ecs).toMatchObject({ family: 1, sourcePrefix: 24, scopePrefix: 0 });
    expect([...r.query.opt!.ecs!.address]).toEqual([198, 51, 100, 0]);
  });

  it('escapes odd bytes so a dot inside a label cannot fake a zone suffix', () => {
    // Built by hand: the label "nyud.net" (with its dot) inside one label.
    const msg = Buffer.concat([
      Buffer.from([0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]),
      Buffer.from([1, 0x78, 8]),
      Buffer.from('nyud.net', 'latin1'),
      Buffer.from([0, 0, 1, 0, 1]),
    ]);
    const q = decodeQuery(msg);
    expect(q.ok && q.query.qname).toBe('x.nyud\\046net');
    expect(q.ok && q.query.escaped).toBe(true);
  });

  it('lowercases letters inside escaped labels, escapes every other byte as \\DDD', () => {
    const msg = Buffer.concat([
      Buffer.from([0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]),
      Buffer.from([5]),
      Buffer.from('A B\xff_', 'latin1'),
      Buffer.from([3]),
      Buffer.from('Net', 'latin1'),
      Buffer.from([0, 0, 1, 0, 1]),
    ]);
    const q = decodeQuery(msg);
    if (!q.ok) throw new Error(q.reason);
    expect(q.query.qname).toBe('a\\032b\\255_.net');
    expect(q.query.escaped).toBe(true);
    expect(questionLabels(msg, q.query)).toEqual(['A B\xff_', 'Net']);
  });

  it('the longest presentation form fits: a 255-byte name of escaped bytes', () => {
    // Labels of 63, 63, 63 and 61 bytes (+ 4 length bytes + the root = 255), every byte 0xff.
    const labels = [63, 63, 63, 61].map((n) =>
      Buffer.concat([Buffer.from([n]), Buffer.alloc(n, 0xff)]),
    );
    const msg = Buffer.concat([
      Buffer.from([0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]),
      ...labels,
      Buffer.from([0, 0, 1, 0, 1]),
    ]);
    const q = decodeQuery(msg);
    if (!q.ok) throw new Error(q.reason);
    expect(q.query.qname).toHaveLength(250 * 4 + 3);
    expect(q.query.qname.startsWith('\\255\\255')).toBe(true);
    expect(questionLabels(msg, q.query).map((l) => l.length)).toEqual([63, 63, 63, 61]);
    // One byte more is refused.
    const longer = Buffer.concat([msg.subarray(0, 12), Buffer.from([1, 0x61]), msg.subarray(12)]);
    expect(decodeQuery(longer)).toMatchObject({ ok: false, reason: 'name longer than 255 bytes' });
  });

  it('accepts a backwards compression pointer in an additional record', () => {
    // An additional A record whose owner points at the question name (offset 12).
    const base = encodeQuery({ name: 'a.nyud.net' });
    base.writeUInt16BE(1, 10);
    const rr = Buffer.from([0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 1, 2, 3, 4]);
    expect(decodeQuery(Buffer.concat([base, rr])).ok).toBe(true);
  });
});

describe('decodeQuery — malformed input (never throws)', () => {
  it('short headers are dropped, not answered', () => {
    for (let n = 0; n < 12; n++) expect(fails(new Uint8Array(n)).action).toBe('drop');
  });

  it('a response (QR set) is dropped', () => {
    const q = encodeQuery({ name: 'a.nyud.net' });
    q[2] = q[2]! | 0x80;
    expect(fails(q).action).toBe('drop');
  });

  it('opcodes other than QUERY get NOTIMP', () => {
    expect(fails(encodeQuery({ name: 'a.nyud.net', opcode: 5 })).action).toBe('notimp');
  });

  it('QDCOUNT 0 or 2 is FORMERR', () => {
    const q = encodeQuery({ name: 'a.nyud.net' });
    q.writeUInt16BE(0, 4);
    expect(fails(q)).toMatchObject({ action: 'formerr', reason: 'QDCOUNT 0' });
    q.writeUInt16BE(2, 4);
    expect(fails(q).action).toBe('formerr');
  });

  it('truncated questions are FORMERR at every cut', () => {
    const q = encodeQuery({ name: 'www.example.com.nyud.net' });
    for (let n = 12; n < q.length; n++) {
      const r = fails(q.subarray(0, n));
      expect(r.action).toBe('formerr');
      expect(r.id).toBe(0x1234);
    }
  });

  it('reserved label types (0x40, 0x80) and labels past the end are FORMERR', () => {
    for (const lenByte of [0x40, 0x80, 0x7f]) {
      const q = Buffer.concat([
        Buffer.from([0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, lenByte, 0x61, 0]),
        Buffer.from([0, 1, 0, 1]),
      ]);
      expect(fails(q).action).toBe('formerr');
    }
  });

  it('compression pointer loops and forward pointers are FORMERR', () => {
    const head = Buffer.from([0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    // Pointer to itself.
    expect(fails(Buffer.concat([head, Buffer.from([0xc0, 12, 0, 1, 0, 1])])).reason).toMatch(
      /pointer/,
    );
    // Two pointers pointing at each other (a label, then a pointer back to offset 12 → loop).
    expect(
      fails(Buffer.concat([head, Buffer.from([1, 0x61, 0xc0, 12, 0, 1, 0, 1])])).reason,
    ).toMatch(/pointer/);
    // Forward pointer.
    expect(
      fails(Buffer.concat([head, Buffer.from([0xc0, 20, 0, 1, 0, 1, 0, 0, 1, 0x61, 0])])).reason,
    ).toMatch(/pointer/);
    // Pointer into the header.
    expect(fails(Buffer.concat([head, Buffer.from([0xc0, 2, 0, 1, 0, 1])])).reason).toMatch(
      /pointer/,
    );
    // Pointer cut in half.
    expect(fails(Buffer.concat([head, Buffer.from([0xc0])])).action).toBe('formerr');
  });

  it('names longer than 255 bytes are FORMERR', () => {
    const labels = Array.from({ length: 5 }, () => 'a'.repeat(60)).join('.');
    expect(fails(encodeQuery({ name: labels })).reason).toMatch(/255/);
  });

  it('absurd counts run past the end: FORMERR', () => {
    for (const off of [6, 8, 10]) {
      const q = encodeQuery({ name: 'a.nyud.net' });
      q.writeUInt16BE(0xffff, off);
      expect(fails(q).action).toBe('formerr');
    }
  });

  it('trailing garbage, two OPTs, a non-root OPT owner are FORMERR', () => {
    expect(
      fails(Buffer.concat([encodeQuery({ name: 'a.nyud.net' }), Buffer.from([1, 2, 3])])).reason,
    ).toMatch(/trailing/);
    const one = encodeQuery({ name: 'a.nyud.net', edns: {} });
    const opt = one.subarray(one.length - 11);
    const two = Buffer.concat([one, opt]);
    two.writeUInt16BE(2, 10);
    expect(fails(two).reason).toMatch(/more than one OPT/);
    const badOwner = Buffer.concat([
      encodeQuery({ name: 'a.nyud.net' }),
      Buffer.from([1, 0x61, 0]),
      opt.subarray(1),
    ]);
    badOwner.writeUInt16BE(1, 10);
    expect(fails(badOwner).reason).toMatch(/OPT owner/);
  });

  it('malformed ECS options are FORMERR (RFC 7871 §7.1.1)', () => {
    const bad = [
      { family: 3, sourcePrefix: 24, address: [1, 2, 3] }, // unknown family
      { sourcePrefix: 33, address: [1, 2, 3, 4, 5] }, // prefix too long
      { sourcePrefix: 20, address: [1, 2, 0x0f] }, // bits beyond the prefix
    ];
    for (const ecs of bad) {
      const r = fails(encodeQuery({ name: 'a.nyud.net', edns: { ecs } }));
      expect(r.action).toBe('formerr');
      expect(r.query?.qname).toBe('a.nyud.net'); // the question decoded: it can be echoed
    }
    // Address length that disagrees with the prefix.
    const q = encodeQuery({
      name: 'a.nyud.net',
      edns: { ecs: { sourcePrefix: 24, address: [1, 2, 3] } },
    });
    q[q.length - 5] = 16; // source prefix 16 but 3 address bytes
    expect(fails(q).reason).toMatch(/ECS/);
  });

  it('random bytes never throw', () => {
    const rng = new SeededRandom(7);
    for (let i = 0; i < 5000; i++) {
      const b = rng.bytes(new Uint8Array(rng.int(80)));
      expect(() => decodeQuery(b)).not.toThrow();
    }
  });
});
