import { describe, expect, it } from 'vitest';
import { parseCoralName } from '../../src/index.js';

const Z = ['nyud.net'];

describe('parseCoralName — fixed vectors', () => {
  const vectors: [string, ReturnType<typeof parseCoralName>][] = [
    [
      'www.example.com.nyud.net',
      { kind: 'origin', zone: 'nyud.net', host: 'www.example.com', port: 80 },
    ],
    [
      'www.example.com.nyud.net.',
      { kind: 'origin', zone: 'nyud.net', host: 'www.example.com', port: 80 },
    ],
    [
      'WwW.ExAmPle.CoM.NyUd.NeT',
      { kind: 'origin', zone: 'nyud.net', host: 'www.example.com', port: 80 },
    ],
    [
      'www.example.com.8080.nyud.net',
      { kind: 'origin', zone: 'nyud.net', host: 'www.example.com', port: 8080 },
    ],
    ['example.com.1.nyud.net', { kind: 'origin', zone: 'nyud.net', host: 'example.com', port: 1 }],
    [
      'example.com.65535.nyud.net',
      { kind: 'origin', zone: 'nyud.net', host: 'example.com', port: 65535 },
    ],
    [
      'a-b.c_d.example.org.nyud.net',
      { kind: 'origin', zone: 'nyud.net', host: 'a-b.c_d.example.org', port: 80 },
    ],
    ['nyud.net', { kind: 'apex', zone: 'nyud.net' }],
    ['NYUD.NET.', { kind: 'apex', zone: 'nyud.net' }],
    ['example.org', { kind: 'outside' }],
    ['xnyud.net', { kind: 'outside' }],
    ['net', { kind: 'outside' }],
    ['', { kind: 'outside' }],
  ];
  for (const [name, want] of vectors) {
    it(`${JSON.stringify(name)} → ${want.kind}`, () => {
      expect(parseCoralName(name, Z)).toEqual(want);
    });
  }

  const invalid = [
    'foo.nyud.net', // single label
    '8080.nyud.net', // a port alone
    'example.com.65536.nyud.net', // port out of range
    'example.com.08080.nyud.net', // leading zero
    'example.com.0.nyud.net', // port 0
    '1.2.3.4.nyud.net', // IP literal
    '1.2.3.4.8080.nyud.net',
    'exa mple.com.nyud.net', // space
    '-bad.example.com.nyud.net', // leading hyphen
    'bad-.example.com.nyud.net',
    'a..b.nyud.net', // empty label
    `${'a'.repeat(64)}.com.nyud.net`, // label too long
    'www.123.nyud.net', // numeric TLD and no host before a port
    'ex\\046ample.com.nyud.net', // escaped dot from the wire decoder
  ];
  for (const name of invalid) {
    it(`${JSON.stringify(name)} → invalid (NXDOMAIN)`, () => {
      const r = parseCoralName(name, Z);
      expect(r.kind).toBe('invalid');
    });
  }

  it('a numeric last label is a port only when the rest is a valid host', () => {
    // "www" alone is not a host, so 123 cannot be its port; "www.123" has a numeric TLD.
    expect(parseCoralName('www.123.nyud.net', Z).kind).toBe('invalid');
    expect(parseCoralName('www.example.com.123.nyud.net', Z)).toMatchObject({ port: 123 });
  });

  it('several zones: the longest match wins, zones are case-insensitive with or without a dot', () => {
    const zones = ['nyud.net', 'CDN.nyud.net.', 'example.edu'];
    expect(parseCoralName('www.a.com.cdn.nyud.net', zones)).toEqual({
      kind: 'origin',
      zone: 'cdn.nyud.net',
      host: 'www.a.com',
      port: 80,
    });
    expect(parseCoralName('cdn.nyud.net', zones)).toEqual({ kind: 'apex', zone: 'cdn.nyud.net' });
    expect(parseCoralName('www.a.com.example.edu', zones)).toMatchObject({ zone: 'example.edu' });
  });
});
