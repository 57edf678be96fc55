import { describe, expect, it } from 'vitest';
import {
  ageFacts,
  currentAge,
  etagMatches,
  freshnessLifetime,
  mergeNotModified,
  parseCacheControl,
  parseRange,
  requestRules,
  staleRules,
  storable,
  varyNames,
  varyValues,
} from '../../src/cache/policy.js';

const P = { defaultTtlSeconds: 0 };
const D = Date.UTC(2026, 0, 1);
const date = (ms: number) => new Date(ms).toUTCString();

describe('parseCacheControl', () => {
  it('parses tokens, arguments, quotes and case; first duplicate wins', () => {
    const cc = parseCacheControl(
      'Max-Age=60, no-cache="set-cookie, x", PUBLIC, max-age=5, s-maxage="30"',
    );
    expect(cc.get('max-age')).toBe('60');
    expect(cc.get('no-cache')).toBe('set-cookie, x');
    expect(cc.get('public')).toBe(true);
    expect(cc.get('s-maxage')).toBe('30');
  });
  it('survives garbage', () => {
    expect([...parseCacheControl(', ,=,"unterminated, max-age=abc').keys()]).toContain('max-age');
    expect(freshnessLifetime(200, { 'cache-control': 'max-age=abc' }, P)).toBe(0);
    expect(freshnessLifetime(200, { 'cache-control': 'max-age=-5' }, P)).toBe(0);
    expect(parseCacheControl(undefined).size).toBe(0);
  });
});

describe('freshness and age', () => {
  it('s-maxage > max-age > Expires > heuristic > default TTL', () => {
    const base = { date: date(D) };
    expect(freshnessLifetime(200, { ...base, 'cache-control': 's-maxage=10, max-age=20' }, P)).toBe(
      10,
    );
    expect(
      freshnessLifetime(
        200,
        { ...base, 'cache-control': 'max-age=20', expires: date(D + 99_000) },
        P,
      ),
    ).toBe(20);
    expect(freshnessLifetime(200, { ...base, expires: date(D + 99_000) }, P)).toBe(99);
    expect(freshnessLifetime(200, { ...base, expires: 'garbage' }, P)).toBe(0);
    expect(freshnessLifetime(200, { ...base, 'last-modified': date(D - 1000_000) }, P)).toBe(100);
    expect(freshnessLifetime(200, { ...base, 'last-modified': date(D - 1e12) }, P)).toBe(86400);
    expect(freshnessLifetime(200, base, { defaultTtlSeconds: 43200 })).toBe(43200);
    expect(freshnessLifetime(200, base, P)).toBe(0);
    // Not heuristically cacheable: no heuristic, no default.
    expect(
      freshnessLifetime(
        302,
        { ...base, 'last-modified': date(D - 1000_000) },
        { defaultTtlSeconds: 60 },
      ),
    ).toBe(0);
  });

  it('current age per RFC 9111 §4.2.3 (fixed vectors)', () => {
    // Origin Date 10 s before the response arrived; Age 5; 2 s response delay; 7 s resident.
    const f = ageFacts({ age: '5', date: date(D - 10_000) }, D - 2_000, D);
    expect(currentAge(f, D + 7_000)).toBe(17); // max(10, 5+2) + 7
    const g = ageFacts({ age: '-3', date: 'nonsense' }, D, D);
    expect(g.ageValue).toBe(0);
    expect(g.dateValue).toBeUndefined();
    expect(currentAge(g, D + 1_500)).toBe(1);
  });
});

describe('storable', () => {
  const ok = { 'cache-control': 'max-age=60' };
  it('refuses what a shared cache must not store', () => {
    expect(storable({}, 200, ok, P).store).toBe(true);
    expect(storable({}, 200, { 'cache-control': 'private, max-age=60' }, P).reason).toBe('private');
    expect(storable({ 'cache-control': 'no-store' }, 200, ok, P).reason).toBe('no-store');
    expect(storable({ authorization: 'x' }, 200, ok, P).reason).toBe('authorization');
    expect(storable({ authorization: 'x' }, 200, { 'cache-control': 's-maxage=5' }, P).store).toBe(
      true,
    );
    expect(storable({}, 200, { ...ok, vary: 'Accept, *' }, P).reason).toBe('vary-star');
    expect(storable({}, 206, ok, P).reason).toBe('status');
    expect(storable({}, 302, {}, P).reason).toBe('status');
    expect(storable({}, 302, ok, P).store).toBe(true);
    expect(storable({}, 200, {}, P).reason).toBe('no-freshness');
    expect(storable({}, 200, { etag: '"a"' }, P).store).toBe(true);
  });
});

describe('request and stale rules', () => {
  it('reads request directives and Pragma', () => {
    expect(requestRules({ pragma: 'no-cache' }).noCache).toBe(true);
    expect(requestRules({ pragma: 'no-cache', 'cache-control': 'max-age=5' }).noCache).toBe(false);
    expect(requestRules({ 'cache-control': 'max-stale' }).maxStale).toBe(Infinity);
    expect(
      requestRules({ 'cache-control': 'max-stale=7, min-fresh=3, only-if-cached' }),
    ).toMatchObject({
      maxStale: 7,
      minFresh: 3,
      onlyIfCached: true,
    });
  });
  it('stale rules from the stored response', () => {
    expect(
      staleRules({ 'cache-control': 'max-age=1, stale-while-revalidate=9, stale-if-error=4' }),
    ).toMatchObject({
      whileRevalidate: 9,
      ifError: 4,
      mustRevalidate: false,
    });
    expect(
      staleRules({ 'cache-control': 'max-age=1, must-revalidate, stale-while-revalidate=9' }),
    ).toMatchObject({
      whileRevalidate: 0,
      ifError: 0,
      mustRevalidate: true,
    });
    expect(staleRules({ 'cache-control': 's-maxage=1' }).mustRevalidate).toBe(true);
    expect(staleRules({}).ifError).toBe(3600);
  });
});

describe('Vary, validators, 304 merge', () => {
  it('normalizes Vary names and values', () => {
    expect(varyNames({ vary: 'Accept-Encoding, ,accept-language, Accept-Encoding' })).toEqual([
      'accept-encoding',
      'accept-language',
    ]);
    expect(varyValues(['accept-language'], { 'accept-language': '  FR,  de ' })).toEqual([
      'fr, de',
    ]);
    expect(varyValues(['x'], {})).toEqual(['']);
  });
  it('compares ETags weakly for If-None-Match', () => {
    expect(etagMatches('"a", W/"b"', 'W/"b"')).toBe(true);
    expect(etagMatches('"b"', 'W/"b"')).toBe(true);
    expect(etagMatches('"c"', '"b"')).toBe(false);
    expect(etagMatches('*', '"b"')).toBe(true);
    expect(etagMatches('*', undefined)).toBe(false);
  });
  it('304 updates all but the body-describing fields', () => {
    expect(
      mergeNotModified(
        { etag: '"1"', 'content-length': '10', 'cache-control': 'max-age=1' },
        { etag: '"1"', 'content-length': '0', 'cache-control': 'max-age=99', 'x-new': 'y' },
      ),
    ).toEqual({ etag: '"1"', 'content-length': '10', 'cache-control': 'max-age=99', 'x-new': 'y' });
  });
});

describe('parseRange', () => {
  const cases: Array<[string | undefined, ReturnType<typeof parseRange>]> = [
    [undefined, undefined],
    ['bytes=0-9', { start: 0, end: 9 }],
    ['bytes=90-', { start: 90, end: 99 }],
    ['bytes=-10', { start: 90, end: 99 }],
    ['bytes=-1000', { start: 0, end: 99 }],
    ['bytes=50-1000', { start: 50, end: 99 }],
    ['bytes=100-', 'unsatisfiable'],
    ['bytes=-0', 'unsatisfiable'],
    ['bytes=9-5', undefined],
    ['bytes=0-1,3-4', undefined],
    ['items=0-9', undefined],
    ['bytes=abc', undefined],
    ['bytes=-', undefined],
  ];
  for (const [v, want] of cases) {
    it(`${String(v)} of 100 bytes`, () => expect(parseRange(v, 100)).toEqual(want));
  }
});
