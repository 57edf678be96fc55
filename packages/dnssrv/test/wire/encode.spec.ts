import { describe, expect, it } from 'vitest';
import { decodeQuery } from '../../src/index.js';
import { encodeBare } from '../../src/wire/encode.js';
import { encodeQuery, header } from '../helpers.js';

describe('encodeBare', () => {
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
