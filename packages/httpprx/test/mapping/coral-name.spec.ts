import { describe, expect, it } from 'vitest';
import {
  coralize,
  normalizeUrl,
  originUrl,
  parseCoralHost,
  urlKey,
} from '../../src/mapping/coral-name.js';

const Z = ['nyud.net'];

describe('parseCoralHost — fixed vectors (legacy names: http origins)', () => {
  const vectors: Array<[string, string, number]> = [
    ['www.example.com.nyud.net', 'www.example.com', 80],
    ['www.example.com.nyud.net:8090', 'www.example.com', 80],
    ['WWW.Example.COM.nyud.net.', 'www.example.com', 80],
    ['www.example.com.8080.nyud.net', 'www.example.com', 8080],
    ['www.example.com.8080.nyud.net:8090', 'www.example.com', 8080],
    ['example.com.1.nyud.net', 'example.com', 1],
    ['example.com.65535.nyud.net', 'example.com', 65535],
    ['10.1.2.3.nyud.net', '10.1.2.3', 80],
    ['10.1.2.3.8080.nyud.net', '10.1.2.3', 8080],
    ['my_host-1.a.nyud.net', 'my_host-1.a', 80],
  ];
  for (const [host, originHost, originPort] of vectors) {
    it(`${host} → http://${originHost}:${originPort}`, () => {
      expect(parseCoralHost(host, Z)).toEqual({
        scheme: 'http',
        originHost,
        originPort,
        zone: 'nyud.net',
        form: 'legacy',
      });
    });
  }

  it('picks the longest matching zone and accepts configured zones', () => {
    expect(parseCoralHost('a.b.cdn.test', ['test', 'cdn.test'])).toEqual({
      scheme: 'http',
      originHost: 'a.b',
      originPort: 80,
      zone: 'cdn.test',
      form: 'legacy',
    });
    expect(parseCoralHost('a.b.cdn.test', ['.CDN.test.'])?.originHost).toBe('a.b');
  });

  it('returns undefined outside every zone, for the apex and for _acme-challenge', () => {
    expect(parseCoralHost('www.example.com', Z)).toBeUndefined();
    expect(parseCoralHost('nyud.net', Z)).toBeUndefined();
    expect(parseCoralHost('evilnyud.net', Z)).toBeUndefined();
    expect(parseCoralHost('127.0.0.1:8090', Z)).toBeUndefined();
    expect(parseCoralHost('_acme-challenge.nyud.net', Z)).toBeUndefined();
  });
});

describe('parseCoralHost — one-label names (@coral/names)', () => {
  const vectors: Array<[string, 'http' | 'https', string, number]> = [
    ['www-example-com.nyud.net', 'https', 'www.example.com', 443],
    ['www-example-com.nyud.net:8443', 'https', 'www.example.com', 443],
    ['WWW-Example-COM.nyud.net.', 'https', 'www.example.com', 443],
    ['www-example-com---8443.nyud.net', 'https', 'www.example.com', 8443],
    ['www-example-com---h.nyud.net', 'http', 'www.example.com', 80],
    ['www-example-com---h8080.nyud.net', 'http', 'www.example.com', 8080],
    ['foo--bar-example-com.nyud.net', 'https', 'foo-bar.example.com', 443],
    ['0-en--us-example-com-0.nyud.net', 'https', 'en-us.example.com', 443],
    ['xn--bcher-ch-65a.nyud.net', 'https', 'xn--bcher-kva.ch', 443],
    ['192-0-2-7.nyud.net', 'https', '192.0.2.7', 443],
  ];
  for (const [host, scheme, originHost, originPort] of vectors) {
    it(`${host} → ${scheme}://${originHost}:${originPort}`, () => {
      expect(parseCoralHost(host, Z)).toEqual({
        scheme,
        originHost,
        originPort,
        zone: 'nyud.net',
        form: 'one-label',
      });
    });
  }

  it('originUrl keeps the scheme of the name', () => {
    const t = parseCoralHost('www-example-com---8443.nyud.net', Z)!;
    expect(originUrl(t, '/a?b')).toBe('https://www.example.com:8443/a?b');
    const h = parseCoralHost('www-example-com---h.nyud.net', Z)!;
    expect(originUrl(h, '/a')).toBe('http://www.example.com/a');
  });

  const malformed = [
    '',
    ':80',
    'a..b.nyud.net',
    '-a.nyud.net',
    'a b.nyud.net',
    'example.com.0.nyud.net',
    'example.com.65536.nyud.net',
    'example.com.08080.nyud.net',
    '8080.nyud.net',
    'localhost.nyud.net',
    'www-example-com---443.nyud.net',
    'www-example-com-----8080.nyud.net',
    'www-example-com---99999.nyud.net',
    'www-nyud-net.nyud.net',
    '_dmarc.nyud.net',
    'www.example.com.nyud.net:99999',
    '[::1]:80',
    'x'.repeat(64) + '.nyud.net',
  ];
  for (const host of malformed) {
    it(`rejects ${JSON.stringify(host.slice(0, 40))} with CORAL_BAD_HOST`, () => {
      expect(() => parseCoralHost(host, Z)).toThrow(
        expect.objectContaining({ code: 'CORAL_BAD_HOST' }),
      );
    });
  }
});

describe('coralize / originUrl round trip', () => {
  const cases: Array<[string, string]> = [
    ['http://www.example.com/', 'http://www.example.com.nyud.net/'],
    ['http://www.example.com', 'http://www.example.com.nyud.net/'],
    [
      'http://www.example.com:8080/a/b.jpg?x=1&y',
      'http://www.example.com.8080.nyud.net/a/b.jpg?x=1&y',
    ],
    ['http://WWW.Example.com:80/a#frag', 'http://www.example.com.nyud.net/a#frag'],
    ['http://10.1.2.3:81/', 'http://10.1.2.3.81.nyud.net/'],
    ['https://www.example.com/a?b', 'https://www-example-com.nyud.net/a?b'],
    ['https://www.example.com:8443/', 'https://www-example-com---8443.nyud.net/'],
  ];
  for (const [url, coral] of cases) {
    it(`${url} ⇄ ${coral}`, () => {
      expect(coralize(url, 'nyud.net')).toBe(coral);
      const u = new URL(coral);
      const target = parseCoralHost(u.host, Z)!;
      expect(originUrl(target, u.pathname + u.search)).toBe(normalizeUrl(url));
    });
  }

  it('appends the proxy port when given', () => {
    expect(coralize('http://a.com/x', 'nyud.net', 8090)).toBe('http://a.com.nyud.net:8090/x');
    expect(coralize('http://a.com/x', 'nyud.net', 80)).toBe('http://a.com.nyud.net/x');
    expect(coralize('https://a.com/x', 'nyud.net', 8443)).toBe('https://a-com.nyud.net:8443/x');
  });

  it('refuses non-http and malformed URLs with CORAL_BAD_URL', () => {
    for (const bad of [
      'ftp://a.com/',
      'http://localhost/',
      `https://${'a'.repeat(70)}.com/`,
      'not a url',
      'http://u:p@a.com/',
      'http://[::1]/',
    ]) {
      expect(() => coralize(bad, 'nyud.net')).toThrow(
        expect.objectContaining({ code: 'CORAL_BAD_URL' }),
      );
    }
  });
});

describe('urlKey', () => {
  it('is SHA-1 of "url:" + normalized URL (fixed vector)', () => {
    const hex = (u: string) => Buffer.from(urlKey(u)).toString('hex');
    expect(hex('http://www.example.com/')).toBe('9728467c03f760f2f01c7b630e6ca128f4b93bd5');
    expect(hex('http://WWW.example.com:80')).toBe('9728467c03f760f2f01c7b630e6ca128f4b93bd5');
    expect(urlKey('http://www.example.com/')).toHaveLength(20);
    expect(hex('http://www.example.com/a')).not.toBe(hex('http://www.example.com/'));
  });
});
