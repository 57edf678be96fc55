import { describe, expect, it } from 'vitest';
import { decodeQuery } from '../../src/index.js';
import { encodeBare, encodeResponse, patchCached } from '../../src/wire/encode.js';
import { encodeQuery, header, parse, questionName } from '../helpers.js';

describe('encoders', () => {
  it('encodeResponse (dns2) round-trips through dns2’s parser, with an ECS echo', () => {
    const b = encodeResponse({
      id: 7,
      rd: true,
      cd: false,
      aa: true,
      rcode: 0,
      question: { name: 'WwW.a.com.nyud.net', type: 1, class: 1 },
      answers: [{ type: 'A', name: 'WwW.a.com.nyud.net', ttl: 30, address: '10.0.0.1' }],
      authorities: [],
      additionals: [],
      opt: {
        udpSize: 1232,
        dnssecOk: false,
        ecs: {
          family: 1,
          sourcePrefix: 24,
          scopePrefix: 16,
          address: new Uint8Array([198, 51, 100, 0]),
        },
      },
    });
    expect(header(b)).toMatchObject({ id: 7, qr: true, aa: true, rd: true, an: 1, ar: 1 });
    const p = parse(b);
    expect(p.answers[0]).toMatchObject({ address: '10.0.0.1', ttl: 30 });
    // The answer's owner is a compression pointer to the question (offset 12).
    expect(b.indexOf(Buffer.from([0xc0, 0x0c]))).toBeGreaterThan(12);
  });

  it('patchCached swaps id, RD/CD and the question case only', () => {
    const q1 = encodeQuery({ name: 'www.a.com.nyud.net', id: 1 });
    const d1 = decodeQuery(q1);
    if (!d1.ok) throw new Error();
    const cached = encodeResponse({
      id: 1,
      rd: false,
      cd: false,
      aa: true,
      rcode: 0,
      question: { name: 'www.a.com.nyud.net', type: 1, class: 1 },
      answers: [{ type: 'A', name: 'www.a.com.nyud.net', ttl: 30, address: '10.0.0.1' }],
      authorities: [],
      additionals: [],
    });
    const q2 = encodeQuery({ name: 'WWW.A.com.NYUD.net', id: 0xabcd, rd: true });
    const d2 = decodeQuery(q2);
    if (!d2.ok) throw new Error();
    const out = patchCached(cached, q2, d2.query);
    expect(header(out)).toMatchObject({ id: 0xabcd, rd: true, an: 1 });
    expect(questionName(out)).toBe('WWW.A.com.NYUD.net');
    expect(out.subarray(12 + 20).equals(cached.subarray(12 + 20))).toBe(true);
    expect(questionName(cached)).toBe('www.a.com.nyud.net'); // the cached copy is untouched
  });

  it('encodeBare echoes odd questions byte for byte and sets TC', () => {
    const q = encodeQuery({ name: 'a\u00ff.nyud.net', id: 3, edns: {} });
    const d = decodeQuery(q);
    if (!d.ok) throw new Error();
    const b = encodeBare({
      id: 3,
      queryFlags: d.query.flags,
      aa: true,
      tc: true,
      rcode: 3,
      question: { msg: q, query: d.query },
      opt: { udpSize: 1232, dnssecOk: false },
    });
    expect(header(b)).toMatchObject({ id: 3, tc: true, rcode: 3, qd: 1, ar: 1 });
    expect(b.subarray(12, d.query.questionEnd).equals(q.subarray(12, d.query.questionEnd))).toBe(
      true,
    );
  });
});
