import { describe, expect, it } from 'vitest';
import { keyFromName, toHex } from '../../src/id/id.js';
import {
  decodeLegacyValue,
  decodeValue,
  encodeValueKey,
  encodeValueRecord,
  LEGACY_SOURCE,
  VALUE_PREFIX,
} from '../../src/persistence/records.js';
import type { StoredValue } from '../../src/store/value-store.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const id = (n: number) => new Uint8Array(20).fill(n);

describe('value records (binary layout)', () => {
  it('encode to fixed bytes', () => {
    const v: StoredValue = {
      level: 2,
      key: id(0xaa),
      publisher: id(0xbb),
      value: Uint8Array.of(1, 2, 3),
      expiresAt: 1.5,
      storedAt: 1,
      source: '10.0.0.7',
    };
    expect(hex(encodeValueKey(v))).toBe(
      `760102 14${'aa'.repeat(20)} 00 14${'bb'.repeat(20)}`.replace(/ /g, ''),
    );
    expect(hex(encodeValueRecord(v))).toBe(
      '000000000000f83f' +
        '000000000000f03f' +
        '01' +
        '08' +
        hex(Buffer.from('10.0.0.7')) +
        '010203',
    );
    const copy = { ...v, copy: true, storedBy: id(0xcc), source: undefined };
    delete copy.source;
    expect(hex(encodeValueKey(copy))).toBe(
      `760102 14${'aa'.repeat(20)} 01 14${'bb'.repeat(20)} 14${'cc'.repeat(20)}`.replace(/ /g, ''),
    );
    expect(hex(encodeValueRecord(copy))).toBe('000000000000f83f000000000000f03f00010203');
  });

  it('round-trip own values, sourced values and copies', () => {
    const base = { level: 1, key: keyFromName('k'), expiresAt: 9e12, storedAt: 1_700_000_000_123 };
    const values: StoredValue[] = [
      { ...base, publisher: keyFromName('me'), value: new Uint8Array(0) },
      {
        ...base,
        publisher: keyFromName('them'),
        value: new Uint8Array(512).fill(7),
        source: 'fe80::1',
      },
      {
        ...base,
        level: 0,
        publisher: keyFromName('them'),
        value: Uint8Array.of(9),
        copy: true,
        storedBy: keyFromName('copier'),
        source: 'hôte', // utf8
      },
    ];
    for (const v of values) {
      const back = decodeValue(encodeValueKey(v), encodeValueRecord(v));
      expect(back).toEqual(v);
    }
  });

  it('reject damaged records instead of throwing', () => {
    const v: StoredValue = {
      level: 0,
      key: id(1),
      publisher: id(2),
      value: Uint8Array.of(5),
      expiresAt: 10,
      storedAt: 1,
      source: 'x',
    };
    const k = encodeValueKey(v);
    const r = encodeValueRecord(v);
    expect(decodeValue(k, r)).toBeDefined();
    // Truncated anywhere, extended, wrong prefix, bad kind or source tag, bad utf8, NaN times.
    for (let n = 0; n < k.length; n++) expect(decodeValue(k.subarray(0, n), r)).toBeUndefined();
    expect(decodeValue(Uint8Array.of(...k, 0), r)).toBeUndefined();
    expect(decodeValue(Uint8Array.of(0x76, 0x02, ...k.subarray(2)), r)).toBeUndefined();
    const badKind = k.slice();
    badKind[VALUE_PREFIX.length + 2 + 20] = 7;
    expect(decodeValue(badKind, r)).toBeUndefined();
    for (let n = 0; n < 18; n++) expect(decodeValue(k, r.subarray(0, n))).toBeUndefined();
    const badTag = r.slice();
    badTag[16] = 9;
    expect(decodeValue(k, badTag)).toBeUndefined();
    const badUtf8 = r.slice();
    badUtf8[18] = 0xff;
    expect(decodeValue(k, badUtf8)).toBeUndefined();
    const nan = r.slice();
    new DataView(nan.buffer).setFloat64(0, Number.NaN, true);
    expect(decodeValue(k, nan)).toBeUndefined();
  });

  it('the earlier layout (utf8 keys, JSON) still decodes, with and without a source', () => {
    const key = keyFromName('k');
    const pub = keyFromName('p');
    const by = keyFromName('c');
    const rec = (o: object) =>
      JSON.stringify({ value: 'AQI=', expiresAt: 9e12, storedAt: 5, ...o });
    expect(decodeLegacyValue(`v!0!${toHex(key)}!${toHex(pub)}`, rec({ src: '10.1.1.1' }))).toEqual({
      level: 0,
      key,
      publisher: pub,
      value: Uint8Array.of(1, 2),
      expiresAt: 9e12,
      storedAt: 5,
      source: '10.1.1.1',
    });
    expect(
      decodeLegacyValue(`v!0!${toHex(key)}!${toHex(pub)}`, rec({ src: null }))?.source,
    ).toBeUndefined();
    expect(decodeLegacyValue(`v!1!${toHex(key)}!${toHex(pub)}`, rec({}))?.source).toBe(
      LEGACY_SOURCE,
    );
    const copy = decodeLegacyValue(
      `v!1!${toHex(key)}!c${toHex(by)}${toHex(pub)}`,
      rec({ src: null }),
    );
    expect(copy).toMatchObject({ level: 1, copy: true, storedBy: by, publisher: pub });
    expect(decodeLegacyValue(`v!0!${toHex(key)}!x`, '{not json')).toBeUndefined();
    expect(decodeLegacyValue(`v!0!${toHex(key)}!${toHex(pub)}`, 'null')).toBeUndefined();
  });
});
