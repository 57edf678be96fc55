import { describe, expect, it } from 'vitest';
import { ProxyError } from '../../src/errors.js';
import { originUrl } from '../../src/mapping/coral-name.js';
import { requestTarget, upstreamUrl } from '../../src/mapping/target.js';
import { splitHostHeader } from '../../src/mapping/host.js';
import { SeededRandom } from '@coral/testkit';

const site = { name: 'www.school.test' };
const origin = { protocol: 'http:' as const, hostname: 'origin.test', port: 8080 };

function code(f: () => unknown): string | undefined {
  try {
    f();
    return undefined;
  } catch (e) {
    return e instanceof ProxyError ? e.code : String(e);
  }
}

describe('requestTarget: origin-form', () => {
  it.each([
    ['/', '/'],
    ['/a/b?c=d', '/a/b?c=d'],
    ['/a//b', '/a//b'],
    ['/a/./b', '/a/b'],
    ['/a/b/..', '/a/'],
    ['/a/b/.', '/a/b/'],
    ['/a/../b', '/b'],
    ['/a/%2e%2E/b', '/b'],
    ['/a/.%2e/b', '/b'],
    ['/a/%2E./b', '/b'],
    ['//..', '/'],
    ['/a/b?x=/../..//evil', '/a/b?x=/../..//evil'],
    ['/a/..%2fb', '/a/..%2fb'],
    ['/%2e%2e%2f', '/%2e%2e%2f'],
    ['/a%2Fb', '/a%2Fb'],
    ['/...', '/...'],
    ['/x|y', '/x|y'],
  ])('%s → %s', (raw, want) => {
    expect(requestTarget(raw, site)).toBe(want);
  });

  it.each([
    '//evil/x',
    '//',
    '/\\evil/x',
    '/a\\b',
    '/%2F%2Fevil/x',
    '/%2fevil',
    '/%5Cevil',
    '/%5c%5cevil',
    '/..',
    '/../x',
    '/a/../../x',
    '/a/../..//evil',
    '/a/..//evil',
    '/.//evil',
    '/%2e%2e/x',
    '/x#frag',
    '/x y',
    '/x\u0000',
    '/é',
    '*',
    'evil/x',
    'evil:80',
    '',
  ])('%j is CORAL_BAD_TARGET', (raw) => {
    expect(code(() => requestTarget(raw, site))).toBe('CORAL_BAD_TARGET');
  });
});

describe('requestTarget: absolute-form', () => {
  it('is accepted only for the Host authority (case, trailing dot and default port aside)', () => {
    expect(requestTarget('http://www.school.test/x?y', site)).toBe('/x?y');
    expect(requestTarget('HTTP://WWW.School.Test:80/x', site)).toBe('/x');
    expect(requestTarget('http://www.school.test./x', site)).toBe('/x');
    expect(requestTarget('http://www.school.test', site)).toBe('/');
    expect(requestTarget('http://www.school.test?q', site)).toBe('/?q');
    expect(requestTarget('http://a.test:8090/x', { name: 'a.test', port: 8090 })).toBe('/x');
    expect(requestTarget('https://a.test/x', { name: 'a.test', port: 443 }, 'https:')).toBe('/x');
  });

  it.each([
    'http://evil.test/x',
    'http://www.school.test:8080/x',
    'http://www.school.test@evil.test/x',
    'http://user@www.school.test/x',
    'https://www.school.test/x',
    'ftp://www.school.test/x',
    'http://www.school.test//evil/x',
    'http://www.school.test/\\evil',
    'http:///x',
    'http://[::1]/x',
    'http://www.school.test#frag',
  ])('%j is CORAL_BAD_TARGET', (raw) => {
    expect(code(() => requestTarget(raw, site))).toBe('CORAL_BAD_TARGET');
  });
});

describe('upstreamUrl', () => {
  it('concatenates origin and canonical path', () => {
    expect(upstreamUrl(origin, '/a//b?c')).toBe('http://origin.test:8080/a//b?c');
    expect(upstreamUrl({ ...origin, port: 80 }, '/')).toBe('http://origin.test/');
    expect(upstreamUrl({ protocol: 'http:', hostname: '::1', port: 81 }, '/x')).toBe(
      'http://[::1]:81/x',
    );
  });

  it('refuses a path that would change the authority (defence in depth)', () => {
    expect(code(() => upstreamUrl(origin, '@evil/x'))).toBe('CORAL_BAD_TARGET');
    expect(code(() => upstreamUrl(origin, '.evil.test/x'))).toBe('CORAL_BAD_TARGET');
  });

  it('never leaves the origin for 20,000 generated hostile targets', () => {
    const rnd = new SeededRandom(7);
    const parts = [
      '/',
      '//',
      '\\',
      '%2f',
      '%2F',
      '%5c',
      '.',
      '..',
      '%2e',
      '%2E',
      'evil.test',
      ':',
      '@',
      '?',
      '#',
      'a',
      '%',
      '%%32%65',
    ];
    let accepted = 0;
    for (let i = 0; i < 20_000; i++) {
      let t = '/';
      const n = 1 + rnd.int(8);
      for (let j = 0; j < n; j++) t += parts[rnd.int(parts.length)];
      let path: string;
      try {
        path = requestTarget(t, site);
      } catch (e) {
        expect((e as ProxyError).code).toBe('CORAL_BAD_TARGET');
        continue;
      }
      accepted++;
      const u = new URL(upstreamUrl(origin, path));
      expect(u.host, t).toBe('origin.test:8080');
      // What an origin (or a URL parser) makes of the path itself never names a host either.
      expect(new URL(u.pathname + u.search, 'http://base.test/').host, t).toBe('base.test');
    }
    expect(accepted).toBeGreaterThan(1_000);
  });
});

describe('originUrl (Coralized names) uses the same rules', () => {
  const target = {
    scheme: 'http' as const,
    form: 'legacy' as const,
    originHost: 'www.example.com',
    originPort: 80,
    zone: 'nyud.net',
  };
  it('keeps paths on the origin', () => {
    expect(originUrl(target, '/a/../b')).toBe('http://www.example.com/b');
    expect(code(() => originUrl(target, '//evil/x'))).toBe('CORAL_BAD_TARGET');
    expect(code(() => originUrl(target, '/\\evil/x'))).toBe('CORAL_BAD_TARGET');
  });
});

describe('splitHostHeader', () => {
  it.each([
    'a.test, b.test',
    'a.test b',
    'a.test/x',
    'user@a.test',
    '[::1]:80',
    'a.test:',
    'a.test:99999',
    '',
  ])('%j is CORAL_BAD_HOST', (h) => {
    expect(code(() => splitHostHeader(h))).toBe('CORAL_BAD_HOST');
  });
  it('lowercases and drops a trailing dot', () => {
    expect(splitHostHeader('WWW.School.Test.:8090')).toEqual({
      name: 'www.school.test',
      port: 8090,
    });
  });
});
