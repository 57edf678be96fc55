import { describe, expect, it } from 'vitest';
import { originUrlOf, parseCoralName, splitHostHeader } from '../src/index.js';

describe('splitHostHeader', () => {
  const good: [string, { name: string; port?: number }][] = [
    ['www.example.com.nyud.net', { name: 'www.example.com.nyud.net' }],
    ['www.example.com.nyud.net:8090', { name: 'www.example.com.nyud.net', port: 8090 }],
    ['WWW-Example-COM.nyud.net.:8443', { name: 'www-example-com.nyud.net', port: 8443 }],
    ['127.0.0.1:8090', { name: '127.0.0.1', port: 8090 }],
    ['[::1]:8090', { name: '[::1]', port: 8090 }],
    ['[2001:DB8::1]', { name: '[2001:db8::1]' }],
    [' a.b ', { name: 'a.b' }],
  ];
  for (const [value, want] of good) {
    it(`${JSON.stringify(value)} → ${JSON.stringify(want)}`, () => {
      expect(splitHostHeader(value)).toEqual(want);
    });
  }

  const bad = [
    '',
    ':80',
    'a.b:',
    'a.b:99999',
    'a.b:8o',
    'a b',
    'a/b',
    'a@b',
    '[::1',
    'a.b:80:80',
    '%61.b',
    'x'.repeat(254),
    'ä.com',
    '.',
  ];
  for (const value of bad) {
    it(`rejects ${JSON.stringify(value.slice(0, 20))} with NAMES_ERR_BAD_HOST_HEADER`, () => {
      expect(() => splitHostHeader(value)).toThrow(
        expect.objectContaining({ code: 'NAMES_ERR_BAD_HOST_HEADER' }),
      );
    });
  }

  it('an IPv6 Host is outside every zone', () => {
    expect(parseCoralName(splitHostHeader('[::1]:8090').name, ['nyud.net'])).toEqual({
      kind: 'outside',
    });
  });
});

describe('originUrlOf', () => {
  it('builds the origin URL, leaving out the default port of the scheme', () => {
    expect(originUrlOf({ scheme: 'http', host: 'www.example.com', port: 80 }, '/a.jpg?x')).toBe(
      'http://www.example.com/a.jpg?x',
    );
    expect(originUrlOf({ scheme: 'https', host: 'www.example.com', port: 443 })).toBe(
      'https://www.example.com/',
    );
    expect(originUrlOf({ scheme: 'https', host: 'www.example.com', port: 80 }, 'a')).toBe(
      'https://www.example.com:80/a',
    );
    expect(originUrlOf({ scheme: 'http', host: '10.1.2.3', port: 8080 }, '/')).toBe(
      'http://10.1.2.3:8080/',
    );
  });

  it('takes a parsed name directly', () => {
    const r = parseCoralName('www-example-com---8443.nyud.net', ['nyud.net']);
    if (r.kind !== 'origin') throw new Error(r.kind);
    expect(originUrlOf(r, '/x')).toBe('https://www.example.com:8443/x');
  });
});
