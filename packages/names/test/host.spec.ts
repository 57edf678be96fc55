import { describe, expect, it } from 'vitest';
import { canonicalHost, isIPv4, normalizeZone, unicodeHost } from '../src/index.js';

describe('canonicalHost', () => {
  const good: [string, string][] = [
    ['www.example.com', 'www.example.com'],
    ['WWW.Example.COM.', 'www.example.com'],
    ['bücher.ch', 'xn--bcher-kva.ch'],
    ['XN--BCHER-KVA.CH', 'xn--bcher-kva.ch'],
    ['Bücher.CH', 'xn--bcher-kva.ch'],
    ['faß.de', 'xn--fa-hia.de'], // nontransitional: ß stays ß (IDNA2008), as browsers do
    ['例え。テスト', 'xn--r8jz45g.xn--zckzah'], // ideographic full stop maps to "."
    ['r3---sn-ab5l6nzr.googlevideo.com', 'r3---sn-ab5l6nzr.googlevideo.com'],
    ['a_b.example.com', 'a_b.example.com'],
    ['192.0.2.1', '192.0.2.1'],
    ['0.0.0.0', '0.0.0.0'],
    ['255.255.255.255', '255.255.255.255'],
  ];
  for (const [input, want] of good) {
    it(`${input} → ${want}`, () => expect(canonicalHost(input)).toBe(want));
  }

  const bad: [string, string][] = [
    ['', 'NAMES_ERR_BAD_HOST'],
    ['localhost', 'NAMES_ERR_BAD_HOST'],
    ['a..b', 'NAMES_ERR_BAD_HOST'],
    ['-a.com', 'NAMES_ERR_BAD_HOST'],
    ['a-.com', 'NAMES_ERR_BAD_HOST'],
    ['_a.com', 'NAMES_ERR_BAD_HOST'],
    ['a b.com', 'NAMES_ERR_BAD_HOST'],
    ['a*.com', 'NAMES_ERR_BAD_HOST'],
    [`${'a'.repeat(64)}.com`, 'NAMES_ERR_BAD_HOST'],
    [`${'a.'.repeat(127)}com`, 'NAMES_ERR_BAD_HOST'], // 257 octets
    ['1.2.3', 'NAMES_ERR_BAD_HOST'],
    ['1.2.3.4.5', 'NAMES_ERR_BAD_HOST'],
    ['256.0.0.1', 'NAMES_ERR_BAD_HOST'],
    ['01.2.3.4', 'NAMES_ERR_BAD_HOST'],
    ['example.123', 'NAMES_ERR_BAD_HOST'],
    ['[::1]', 'NAMES_ERR_IPV6_LITERAL'],
    ['2001:db8::1', 'NAMES_ERR_IPV6_LITERAL'],
    ['xn--zz.com', 'NAMES_ERR_BAD_IDN'], // not valid punycode
    ['xn--ab-.com', 'NAMES_ERR_BAD_HOST'], // punycode of ASCII only ends with "-"
    ['xn---bcher-cxa.ch', 'NAMES_ERR_BAD_IDN'], // U-label "-bücher" begins with "-"
    ['a\u200d.com', 'NAMES_ERR_BAD_IDN'], // ZWJ out of context (ContextJ)
    ['xn--4gbrim.1com', 'NAMES_ERR_BAD_IDN'], // Bidi domain: an LTR label must begin with a letter
  ];
  for (const [input, code] of bad) {
    it(`${JSON.stringify(input.slice(0, 40))} → ${code}`, () => {
      expect(() => canonicalHost(input)).toThrow(expect.objectContaining({ code }));
    });
  }

  it('accepts left-to-right labels beside right-to-left ones when each keeps its Bidi rule', () => {
    expect(canonicalHost('hello.xn--4gbrim.xn--mgbh0fb')).toBe('hello.xn--4gbrim.xn--mgbh0fb');
  });

  it('isIPv4 is dotted decimal only', () => {
    expect(isIPv4('10.0.0.1')).toBe(true);
    for (const s of ['10.0.0', '10.0.0.01', '0x7f.0.0.1', '10.0.0.256', '1.2.3.4.']) {
      expect(isIPv4(s)).toBe(false);
    }
  });

  it('unicodeHost shows U-labels', () => {
    expect(unicodeHost('xn--bcher-kva.ch')).toBe('bücher.ch');
    expect(unicodeHost('www.example.com')).toBe('www.example.com');
  });
});

describe('normalizeZone', () => {
  it('lowercases, drops leading and trailing dots, converts IDN', () => {
    expect(normalizeZone('NYUD.net.')).toBe('nyud.net');
    expect(normalizeZone('.cdn.test')).toBe('cdn.test');
    expect(normalizeZone('bücher.ch')).toBe('xn--bcher-kva.ch');
    expect(normalizeZone('localhost')).toBe('localhost');
  });
  it('throws NAMES_ERR_BAD_ZONE for what is not a DNS name', () => {
    for (const z of [
      '',
      '.',
      'a..b',
      'a b.net',
      '-a.net',
      `${'a'.repeat(64)}.net`,
      'a\u200d.net',
    ]) {
      expect(() => normalizeZone(z), z).toThrow(
        expect.objectContaining({ code: 'NAMES_ERR_BAD_ZONE' }),
      );
    }
  });
});
