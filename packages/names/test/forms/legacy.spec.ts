// The legacy vectors of both parsers this package replaces (packages/dnssrv/test/names and
// packages/httpprx/test/mapping), with the one behaviour where they disagreed decided:
// IPv4 literals are Coralizable (httpprx accepted them, dnssrv answered NXDOMAIN).
import { describe, expect, it } from 'vitest';
import { parseCoralName, type CoralName } from '../../src/index.js';

const Z = ['nyud.net'];
const origin = (host: string, port: number, zone = 'nyud.net'): CoralName => ({
  kind: 'origin',
  zone,
  form: 'legacy',
  scheme: 'http',
  host,
  port,
});

describe('legacy form — vectors of dnssrv', () => {
  const vectors: [string, CoralName][] = [
    ['www.example.com.nyud.net', origin('www.example.com', 80)],
    ['www.example.com.nyud.net.', origin('www.example.com', 80)],
    ['WwW.ExAmPle.CoM.NyUd.NeT', origin('www.example.com', 80)],
    ['www.example.com.8080.nyud.net', origin('www.example.com', 8080)],
    ['example.com.1.nyud.net', origin('example.com', 1)],
    ['example.com.65535.nyud.net', origin('example.com', 65535)],
    ['a-b.c_d.example.org.nyud.net', origin('a-b.c_d.example.org', 80)],
    ['nyud.net', { kind: 'apex', zone: 'nyud.net' }],
    ['NYUD.NET.', { kind: 'apex', zone: 'nyud.net' }],
    ['example.org', { kind: 'outside' }],
    ['xnyud.net', { kind: 'outside' }],
    ['net', { kind: 'outside' }],
    ['', { kind: 'outside' }],
    // decided: dnssrv said invalid; an IPv4 origin is as legitimate (and as guarded) as a name
    ['1.2.3.4.nyud.net', origin('1.2.3.4', 80)],
    ['1.2.3.4.8080.nyud.net', origin('1.2.3.4', 8080)],
  ];
  for (const [name, want] of vectors) {
    it(`${JSON.stringify(name)} → ${want.kind}`, () => {
      expect(parseCoralName(name, Z)).toEqual(want);
    });
  }

  const invalid: [string, string][] = [
    ['foo.nyud.net', 'NAMES_ERR_BAD_HOST'], // one label: the one-label form of a dotless host
    ['8080.nyud.net', 'NAMES_ERR_BAD_HOST'],
    ['example.com.65536.nyud.net', 'NAMES_ERR_BAD_PORT'],
    ['example.com.08080.nyud.net', 'NAMES_ERR_BAD_PORT'],
    ['example.com.0.nyud.net', 'NAMES_ERR_BAD_PORT'],
    ['exa mple.com.nyud.net', 'NAMES_ERR_BAD_HOST'],
    ['-bad.example.com.nyud.net', 'NAMES_ERR_BAD_HOST'],
    ['bad-.example.com.nyud.net', 'NAMES_ERR_BAD_HOST'],
    ['a..b.nyud.net', 'NAMES_ERR_BAD_HOST'],
    [`${'a'.repeat(64)}.com.nyud.net`, 'NAMES_ERR_BAD_HOST'],
    ['www.123.nyud.net', 'NAMES_ERR_BAD_HOST'], // numeric TLD, and "www" alone is no host
    ['ex\\046ample.com.nyud.net', 'NAMES_ERR_BAD_HOST'], // escaped dot from a wire decoder
    ['1.2.3.nyud.net', 'NAMES_ERR_BAD_HOST'],
    ['256.1.1.1.nyud.net', 'NAMES_ERR_BAD_HOST'],
    ['010.1.2.3.nyud.net', 'NAMES_ERR_BAD_HOST'], // not canonical dotted decimal
    ['1.2.3.4.0.nyud.net', 'NAMES_ERR_BAD_PORT'],
  ];
  for (const [name, code] of invalid) {
    it(`${JSON.stringify(name)} → invalid ${code}`, () => {
      expect(parseCoralName(name, Z)).toMatchObject({ kind: 'invalid', zone: 'nyud.net', code });
    });
  }

  it('a numeric last label is a port only when the rest is a valid host', () => {
    expect(parseCoralName('www.example.com.123.nyud.net', Z)).toMatchObject({ port: 123 });
    expect(parseCoralName('1.2.3.80.nyud.net', Z)).toEqual(origin('1.2.3.80', 80));
  });

  it('several zones: the longest match wins, zones are case-insensitive with or without a dot', () => {
    const zones = ['nyud.net', 'CDN.nyud.net.', 'example.edu'];
    expect(parseCoralName('www.a.com.cdn.nyud.net', zones)).toEqual(
      origin('www.a.com', 80, 'cdn.nyud.net'),
    );
    expect(parseCoralName('cdn.nyud.net', zones)).toEqual({ kind: 'apex', zone: 'cdn.nyud.net' });
    expect(parseCoralName('www.a.com.example.edu', zones)).toMatchObject({ zone: 'example.edu' });
  });
});

describe('legacy form — vectors of httpprx', () => {
  const vectors: [string, string, number][] = [
    ['www.example.com.nyud.net', 'www.example.com', 80],
    ['WWW.Example.COM.nyud.net.', 'www.example.com', 80],
    ['www.example.com.8080.nyud.net', 'www.example.com', 8080],
    ['example.com.1.nyud.net', 'example.com', 1],
    ['example.com.65535.nyud.net', 'example.com', 65535],
    ['10.1.2.3.nyud.net', '10.1.2.3', 80],
    ['10.1.2.3.8080.nyud.net', '10.1.2.3', 8080],
    ['my_host-1.a.nyud.net', 'my_host-1.a', 80],
  ];
  for (const [name, host, port] of vectors) {
    it(`${name} → ${host}:${port}`, () => {
      expect(parseCoralName(name, Z)).toEqual(origin(host, port));
    });
  }

  it('picks the longest matching zone and accepts configured zones', () => {
    expect(parseCoralName('a.b.cdn.test', ['test', 'cdn.test'])).toEqual(
      origin('a.b', 80, 'cdn.test'),
    );
    expect(parseCoralName('a.b.cdn.test', ['.CDN.test.'])).toMatchObject({ host: 'a.b' });
  });

  it('is outside every zone for other names', () => {
    for (const name of ['www.example.com', 'evilnyud.net', '127.0.0.1', '[::1]']) {
      expect(parseCoralName(name, Z)).toEqual({ kind: 'outside' });
    }
  });

  const malformed = [
    'a..b.nyud.net',
    '-a.nyud.net',
    'a b.nyud.net',
    'example.com.0.nyud.net',
    'example.com.65536.nyud.net',
    'example.com.08080.nyud.net',
    '8080.nyud.net',
    'x'.repeat(64) + '.nyud.net',
    // decided: httpprx mapped this to http://localhost; a single label now is the one-label
    // form, and a host without a dot is never an origin (dnssrv already refused single labels)
    'localhost.nyud.net',
  ];
  for (const name of malformed) {
    it(`rejects ${JSON.stringify(name.slice(0, 30))}`, () => {
      const r = parseCoralName(name, Z);
      expect(r.kind).toBe('invalid');
      if (r.kind === 'invalid') expect(r.code).toMatch(/^NAMES_ERR_/);
    });
  }
});
