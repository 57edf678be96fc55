import { describe, expect, it } from 'vitest';
import {
  coralizeHost,
  coralizeUrl,
  coralizeUrlDetailed,
  parseCoralName,
  type Origin,
} from '../src/index.js';

const Z = 'nyud.net';
const o = (scheme: 'http' | 'https', host: string, port: number): Origin => ({
  scheme,
  host,
  port,
});
const code = (c: string) => expect.objectContaining({ code: c });

describe('coralizeHost', () => {
  it('one-label is the default form, for both schemes', () => {
    expect(coralizeHost(o('https', 'www.example.com', 443), Z)).toBe('www-example-com.nyud.net');
    expect(coralizeHost(o('https', 'WWW.Example.com.', 8443), 'NYUD.net.')).toBe(
      'www-example-com---8443.nyud.net',
    );
    expect(coralizeHost(o('http', 'www.example.com', 80), Z)).toBe('www-example-com---h.nyud.net');
    expect(coralizeHost(o('http', 'bücher.ch', 8080), Z)).toBe('xn--bcher-ch---h8080-jzb.nyud.net');
  });

  it('legacy form for http origins', () => {
    const legacy = { form: 'legacy' } as const;
    expect(coralizeHost(o('http', 'www.example.com', 80), Z, legacy)).toBe(
      'www.example.com.nyud.net',
    );
    expect(coralizeHost(o('http', 'www.example.com', 8080), Z, legacy)).toBe(
      'www.example.com.8080.nyud.net',
    );
    expect(coralizeHost(o('http', '10.1.2.3', 81), Z, legacy)).toBe('10.1.2.3.81.nyud.net');
    expect(coralizeHost(o('http', 'bücher.ch', 80), Z, legacy)).toBe('xn--bcher-kva.ch.nyud.net');
    expect(() => coralizeHost(o('https', 'www.example.com', 443), Z, legacy)).toThrow(
      code('NAMES_ERR_LEGACY_HTTPS'),
    );
  });

  it('round-trips through parseCoralName in both forms', () => {
    for (const origin of [
      o('http', 'a.example', 80),
      o('http', 'a-b.example', 8080),
      o('https', 'a.example', 8443),
    ]) {
      for (const form of ['one-label', 'legacy'] as const) {
        if (form === 'legacy' && origin.scheme === 'https') continue;
        const name = coralizeHost(origin, Z, { form });
        expect(parseCoralName(name, [Z])).toEqual({ kind: 'origin', zone: Z, form, ...origin });
      }
    }
  });

  it('refuses what has no name, each with its code', () => {
    expect(() => coralizeHost(o('https', 'a'.repeat(60) + '.com', 443), Z)).toThrow(
      code('NAMES_ERR_LABEL_TOO_LONG'),
    );
    expect(() => coralizeHost(o('https', 'a.example', 0), Z)).toThrow(code('NAMES_ERR_BAD_PORT'));
    expect(() => coralizeHost(o('https', 'a.example', 65536), Z)).toThrow(
      code('NAMES_ERR_BAD_PORT'),
    );
    expect(() => coralizeHost(o('https', 'a.example', 80.5), Z)).toThrow(
      code('NAMES_ERR_BAD_PORT'),
    );
    expect(() => coralizeHost({ scheme: 'ftp' as 'http', host: 'a.example', port: 21 }, Z)).toThrow(
      code('NAMES_ERR_BAD_SCHEME'),
    );
    expect(() => coralizeHost(o('https', '[::1]', 443), Z)).toThrow(code('NAMES_ERR_IPV6_LITERAL'));
    expect(() => coralizeHost(o('https', 'localhost', 443), Z)).toThrow(code('NAMES_ERR_BAD_HOST'));
    expect(() => coralizeHost(o('https', 'www.nyud.net', 443), Z)).toThrow(
      code('NAMES_ERR_ORIGIN_IN_ZONE'),
    );
    expect(() => coralizeHost(o('https', 'a.example', 443), 'bad zone')).toThrow(
      code('NAMES_ERR_BAD_ZONE'),
    );
  });

  it('refuses a name over 253 octets even when the label fits', () => {
    const zone = Array.from({ length: 4 }, () => 'z'.repeat(60)).join('.'); // 243 octets
    expect(() => coralizeHost(o('https', 'www.example.com', 443), zone)).toThrow(
      code('NAMES_ERR_NAME_TOO_LONG'),
    );
    // legacy too
    expect(() => coralizeHost(o('http', 'www.example.com', 80), zone, { form: 'legacy' })).toThrow(
      code('NAMES_ERR_NAME_TOO_LONG'),
    );
  });

  it('never hands out a whole name a browser would refuse under the Bidi rule', () => {
    // A right-to-left host before the numeric port label of the legacy form.
    expect(() =>
      coralizeHost(o('http', 'xn--4gbrim.xn--mgbh0fb', 8080), Z, { form: 'legacy' }),
    ).toThrow(code('NAMES_ERR_BAD_IDN'));
    // A right-to-left one-label name under a zone whose label begins with a digit.
    expect(() => coralizeHost(o('https', 'xn--4gbrim.xn--mgbh0fb', 443), '1cdn.example')).toThrow(
      code('NAMES_ERR_BAD_IDN'),
    );
    expect(coralizeHost(o('https', 'xn--4gbrim.xn--mgbh0fb', 443), Z)).toMatch(
      /^xn--.*\.nyud\.net$/,
    );
  });
});

describe('coralizeUrl', () => {
  const cases: [string, string][] = [
    ['https://www.example.com/a.jpg', 'https://www-example-com.nyud.net:8443/a.jpg'],
    [
      'https://www.example.com:8443/a?x=1#top',
      'https://www-example-com---8443.nyud.net:8443/a?x=1#top',
    ],
    ['https://bücher.ch/', 'https://xn--bcher-ch-65a.nyud.net:8443/'],
    ['https://en-us.example.com', 'https://0-en--us-example-com-0.nyud.net:8443/'],
    // legacy vectors of httpprx's coralize, now with the proxy port 8090 by default
    ['http://www.example.com/', 'http://www.example.com.nyud.net:8090/'],
    ['http://www.example.com', 'http://www.example.com.nyud.net:8090/'],
    [
      'http://www.example.com:8080/a/b.jpg?x=1&y',
      'http://www.example.com.8080.nyud.net:8090/a/b.jpg?x=1&y',
    ],
    // the fragment is kept (httpprx's coralize dropped it; a Location may carry one)
    ['http://WWW.Example.com:80/a#frag', 'http://www.example.com.nyud.net:8090/a#frag'],
    ['http://10.1.2.3:81/', 'http://10.1.2.3.81.nyud.net:8090/'],
    // WHATWG URL canonicalizes odd IPv4 spellings before we see them
    ['http://0x7f.1/', 'http://127.0.0.1.nyud.net:8090/'],
  ];
  for (const [url, want] of cases) {
    it(`${url} → ${want}`, () => expect(coralizeUrl(url, Z)).toBe(want));
  }

  it('leaves out the default port of the client scheme and honours the listener ports', () => {
    expect(coralizeUrl('https://a.example/x', Z, { tlsPort: 443 })).toBe(
      'https://a-example.nyud.net/x',
    );
    expect(coralizeUrl('http://a.example/x', Z, { httpPort: 80 })).toBe(
      'http://a.example.nyud.net/x',
    );
    expect(coralizeUrl('http://a.com/x', Z, { httpPort: 8090 })).toBe(
      'http://a.com.nyud.net:8090/x',
    );
  });

  it('gives http origins the one-label form when asked, over TLS unless tls is false', () => {
    expect(coralizeUrl('http://www.example.com/', Z, { form: 'one-label' })).toBe(
      'https://www-example-com---h.nyud.net:8443/',
    );
    expect(coralizeUrl('http://www.example.com:8080/', Z, { form: 'one-label', tls: false })).toBe(
      'http://www-example-com---h8080.nyud.net:8090/',
    );
  });

  it('falls back to the legacy form for an http origin with no one-label form, and says so', () => {
    const host = `${'a'.repeat(40)}.${'b'.repeat(30)}.com`;
    const r = coralizeUrlDetailed(`http://${host}/x`, Z, { form: 'one-label', fallback: 'legacy' });
    expect(r).toMatchObject({
      url: `http://${host}.nyud.net:8090/x`,
      form: 'legacy',
      fallback: { code: 'NAMES_ERR_LABEL_TOO_LONG' },
    });
    expect(() => coralizeUrl(`http://${host}/x`, Z, { form: 'one-label' })).toThrow(
      code('NAMES_ERR_LABEL_TOO_LONG'),
    );
    expect(coralizeUrlDetailed(`http://${host}/x`, Z).fallback).toBeUndefined();
  });

  it('has no fallback for https: the error says why and what to do', () => {
    const host = `${'a'.repeat(40)}.${'b'.repeat(30)}.com`;
    expect(() => coralizeUrl(`https://${host}/x`, Z, { fallback: 'legacy' })).toThrow(
      expect.objectContaining({
        code: 'NAMES_ERR_LABEL_TOO_LONG',
        message: expect.stringMatching(/63.*cannot name an https origin.*http URL/s),
      }),
    );
  });

  it('refuses URLs it cannot Coralize, each with its code', () => {
    const bad: [string, string][] = [
      ['ftp://a.com/', 'NAMES_ERR_BAD_SCHEME'],
      ['not a url', 'NAMES_ERR_BAD_URL'],
      ['/relative', 'NAMES_ERR_BAD_URL'],
      ['http://u:p@a.com/', 'NAMES_ERR_BAD_URL'],
      ['http://[::1]/', 'NAMES_ERR_IPV6_LITERAL'],
      ['http://localhost/', 'NAMES_ERR_BAD_HOST'],
      ['http://www.example.com.nyud.net/', 'NAMES_ERR_ORIGIN_IN_ZONE'],
      ['https://www-example-com.nyud.net:8443/', 'NAMES_ERR_ORIGIN_IN_ZONE'],
    ];
    for (const [url, c] of bad) expect(() => coralizeUrl(url, Z), url).toThrow(code(c));
    expect(() => coralizeUrl('https://a.com/', Z, { form: 'legacy' })).toThrow(
      code('NAMES_ERR_LEGACY_HTTPS'),
    );
    expect(() => coralizeUrl('https://a.com/', Z, { tlsPort: 0 })).toThrow(
      code('NAMES_ERR_BAD_PORT'),
    );
  });

  it('every URL it gives is kept byte for byte by the WHATWG URL parser', () => {
    for (const url of [
      'https://bücher.ch/ä?ö#ü',
      'http://xn--57hw060o.com:81/',
      'https://r3---sn-x.googlevideo.com/v',
    ]) {
      for (const form of ['one-label', 'legacy'] as const) {
        const out = coralizeUrl(url, Z, { form: url.startsWith('https') ? undefined : form });
        expect(new URL(out).href).toBe(out);
      }
    }
  });
});
