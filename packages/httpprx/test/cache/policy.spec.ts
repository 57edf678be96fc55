import { describe, expect, it } from 'vitest';
import {
  ageFacts,
  currentAge,
  etagMatches,
  freshnessLifetime,
  mergeNotModified,
  parseAge,
  parseRange,
  requestRules,
  responseRules,
  staleIfErrorWindow,
  storable,
} from '../../src/cache/policy.js';

const P = { defaultTtlSeconds: 0 };
const D = Date.UTC(2026, 0, 1);
const date = (ms: number) => new Date(ms).toUTCString();

describe('freshness lifetime (RFC 9111 §4.2.1, shared cache)', () => {
  const base = { date: date(D) };
  it('s-maxage > max-age > Expires − Date', () => {
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
  });

  it('an invalid Expires ("0", a non-HTTP-date) is already expired (§5.3)', () => {
    for (const expires of [
      '0',
      'garbage',
      '2026-01-02T00:00:00Z',
      'Fri, 02 Jan 2026 00:00:00 +0000',
    ])
      expect(freshnessLifetime(200, { ...base, expires }, P), expires).toBe(0);
  });

  it('Expires without Date is measured from the time the response was received (§4.2.1)', () => {
    expect(freshnessLifetime(200, { expires: date(D + 60_000) }, P, D)).toBe(60);
    // Never falls through to heuristics.
    expect(
      freshnessLifetime(200, { expires: date(D - 1), 'last-modified': date(D - 1e9) }, P, D),
    ).toBe(0);
  });

  it('an invalid max-age or s-maxage makes the response stale (§4.2.1, §1.2.2)', () => {
    for (const cc of [
      'max-age=abc',
      'max-age=-5',
      'max-age=1.5',
      'max-age=',
      's-maxage=x, max-age=60',
    ])
      expect(freshnessLifetime(200, { ...base, 'cache-control': cc }, P), cc).toBe(0);
    expect(freshnessLifetime(200, { ...base, 'cache-control': 'max-age="30"' }, P)).toBe(30);
    expect(freshnessLifetime(200, { ...base, 'cache-control': 'max-age=99999999999999' }, P)).toBe(
      2 ** 31,
    );
  });

  it('the first of repeated directives wins (§4.2.1)', () => {
    expect(freshnessLifetime(200, { ...base, 'cache-control': 'max-age=5, max-age=500' }, P)).toBe(
      5,
    );
  });
});

describe('heuristic freshness (RFC 9111 §4.2.2, RFC 9110 §15.1)', () => {
  const base = { date: date(D) };
  it('10 % of Date − Last-Modified, capped at a day; the default TTL only without Last-Modified', () => {
    expect(freshnessLifetime(200, { ...base, 'last-modified': date(D - 1000_000) }, P)).toBe(100);
    expect(freshnessLifetime(200, { ...base, 'last-modified': date(D - 1e12) }, P)).toBe(86400);
    expect(freshnessLifetime(200, { ...base, 'last-modified': date(D + 1000) }, P)).toBe(0);
    expect(freshnessLifetime(200, base, { defaultTtlSeconds: 43200 })).toBe(43200);
    expect(freshnessLifetime(200, base, P)).toBe(0);
  });

  it('the cap is heuristicMaxSeconds when set', () => {
    const lm = { ...base, 'last-modified': date(D - 1e12) };
    expect(freshnessLifetime(200, lm, { ...P, heuristicMaxSeconds: 3600 })).toBe(3600);
    expect(freshnessLifetime(200, lm, { ...P, heuristicMaxSeconds: 0 })).toBe(0);
  });

  it('negative answers without explicit freshness: negativeTtlSeconds (default 60 s), Last-Modified or not', () => {
    const lm = { ...base, 'last-modified': date(D - 1000_000) };
    for (const s of [404, 405, 410, 414, 501]) {
      expect(freshnessLifetime(s, base, P), String(s)).toBe(60);
      expect(freshnessLifetime(s, lm, P), String(s)).toBe(60);
      expect(freshnessLifetime(s, base, { ...P, negativeTtlSeconds: 5 }), String(s)).toBe(5);
      expect(freshnessLifetime(s, base, { ...P, negativeTtlSeconds: 0 }), String(s)).toBe(0);
      // Explicit freshness is obeyed as sent, above the cap or below it.
      const cc = (v: string) => ({ ...base, 'cache-control': v });
      expect(freshnessLifetime(s, cc('max-age=3600'), P), String(s)).toBe(3600);
      expect(freshnessLifetime(s, cc('max-age=0'), P), String(s)).toBe(0);
    }
    expect(storable({}, 404, base, P).store).toBe(true);
    expect(storable({}, 404, base, { ...P, negativeTtlSeconds: 0 }).reason).toBe('no-freshness');
    expect(storable({}, 404, { ...base, 'cache-control': 'no-store' }, P).reason).toBe('no-store');
    // Not a negative answer: 403, 400 and 5xx are not heuristically cacheable at all.
    for (const s of [400, 403, 500, 503])
      expect(storable({}, s, base, P).store, String(s)).toBe(false);
  });

  it('only for heuristically cacheable statuses, even with public', () => {
    const lm = { ...base, 'last-modified': date(D - 1000_000) };
    for (const s of [200, 203, 204, 300, 301, 308])
      expect(freshnessLifetime(s, lm, P), String(s)).toBe(100);
    for (const s of [404, 405, 410, 414, 501])
      expect(freshnessLifetime(s, lm, P), String(s)).toBe(60);
    for (const s of [201, 302, 303, 307, 400, 403, 500, 502, 503, 299]) {
      expect(freshnessLifetime(s, lm, { defaultTtlSeconds: 60 }), String(s)).toBe(0);
      expect(freshnessLifetime(s, { ...lm, 'cache-control': 'public' }, P), String(s)).toBe(0);
    }
  });
});

describe('storable (RFC 9111 §3)', () => {
  const ok = { 'cache-control': 'max-age=60' };
  it('refuses what a shared cache must not store', () => {
    expect(storable({}, 200, ok, P).store).toBe(true);
    expect(storable({}, 200, { 'cache-control': 'private, max-age=60' }, P).reason).toBe('private');
    expect(storable({ 'cache-control': 'no-store' }, 200, ok, P).reason).toBe('no-store');
    expect(storable({}, 200, { 'cache-control': 'no-store, max-age=60' }, P).reason).toBe(
      'no-store',
    );
    expect(storable({}, 200, { ...ok, vary: 'Accept, *' }, P).reason).toBe('vary-star');
    expect(storable({}, 206, ok, P).reason).toBe('status');
    expect(storable({}, 304, ok, P).reason).toBe('status');
    expect(storable({}, 103, ok, P).reason).toBe('status');
    expect(storable({}, 200, {}, P).reason).toBe('no-freshness');
    expect(storable({}, 200, { etag: '"a"' }, P).store).toBe(true);
  });

  it('any final status with explicit freshness; other statuses not without it (§3)', () => {
    for (const s of [201, 299, 302, 303, 307, 400, 403, 500, 502, 503, 599])
      expect(storable({}, s, ok, P).store, String(s)).toBe(true);
    for (const s of [302, 307, 500])
      expect(storable({}, s, { 'last-modified': date(D - 1e6), date: date(D) }, P).store).toBe(
        false,
      );
    expect(storable({}, 204, { date: date(D), 'last-modified': date(D - 1e6) }, P).store).toBe(
      true,
    );
  });

  it('Authorization: only with public, s-maxage or must-revalidate (§3.5)', () => {
    expect(storable({ authorization: 'x' }, 200, ok, P).reason).toBe('authorization');
    for (const cc of ['s-maxage=5', 'public, max-age=5', 'must-revalidate, max-age=5'])
      expect(storable({ authorization: 'x' }, 200, { 'cache-control': cc }, P).store, cc).toBe(
        true,
      );
  });

  it('must-understand overrides no-store only for understood statuses (§5.2.2.3)', () => {
    const mu = { 'cache-control': 'must-understand, no-store, max-age=60' };
    expect(storable({}, 200, mu, P).store).toBe(true);
    expect(storable({}, 299, mu, P).reason).toBe('must-understand');
  });

  it('qualified private and no-cache name fields, and do not forbid storing (§5.2.2.7, §5.2.2.4)', () => {
    const r = responseRules(
      200,
      { 'cache-control': 'private="Set-Cookie, X-User", no-cache="x-trace", max-age=60' },
      P,
    );
    expect(r.private).toBe(false);
    expect(r.privateFields).toEqual(['set-cookie', 'x-user']);
    expect(r.noCache).toBe(false);
    expect(r.noCacheFields).toEqual(['x-trace']);
  });
});

describe('Age (RFC 9111 §5.1) and current age (§4.2.3)', () => {
  it('parses delta-seconds, the first member of a list, and ignores anything else', () => {
    expect(parseAge('7200')).toBe(7200);
    expect(parseAge('7200, 0')).toBe(7200);
    expect(parseAge(' 60 ,5')).toBe(60);
    for (const v of ['7200.0', '-3', 'abc', '', '1e3', '0x10', '+5'])
      expect(parseAge(v), v).toBe(0);
    expect(parseAge('99999999999999999999')).toBe(2 ** 31);
  });

  it('current age per §4.2.3 (fixed vectors)', () => {
    // Origin Date 10 s before the response arrived; Age 5; 2 s response delay; 7 s resident.
    const f = ageFacts({ age: '5', date: date(D - 10_000) }, D - 2_000, D);
    expect(currentAge(f, D + 7_000)).toBe(17); // max(10, 5+2) + 7
    // Age dominates the apparent age.
    const g = ageFacts({ age: '100', date: date(D - 10_000) }, D - 2_000, D);
    expect(currentAge(g, D)).toBe(102);
    const h = ageFacts({ age: '7200.0', date: 'nonsense' }, D, D);
    expect(h.ageValue).toBe(0);
    expect(h.dateValue).toBeUndefined();
    expect(currentAge(h, D + 1_500)).toBe(1);
  });
});

describe('request directives (RFC 9111 §5.2.1, §5.4)', () => {
  it('reads request directives and Pragma', () => {
    expect(requestRules({ pragma: 'no-cache' }).noCache).toBe(true);
    expect(requestRules({ pragma: 'x, no-cache' }).noCache).toBe(true);
    expect(requestRules({ pragma: 'no-cachex' }).noCache).toBe(false);
    expect(requestRules({ pragma: 'no-cache', 'cache-control': 'max-age=5' }).noCache).toBe(false);
    expect(requestRules({ 'cache-control': 'max-stale' }).maxStale).toBe(Infinity);
    expect(requestRules({ 'cache-control': 'max-age=x' }).maxAge).toBe(0);
    expect(
      requestRules({
        'cache-control': 'max-stale=7, min-fresh=3, only-if-cached, stale-if-error=9',
      }),
    ).toMatchObject({ maxStale: 7, minFresh: 3, onlyIfCached: true, staleIfError: 9 });
  });
});

describe('stale responses (RFC 9111 §4.2.4, RFC 5861)', () => {
  const rules = (cc: string) => responseRules(200, { 'cache-control': cc }, P);
  it('stale-while-revalidate, never under must-revalidate / no-cache', () => {
    expect(rules('max-age=1, stale-while-revalidate=9').whileRevalidate).toBe(9);
    expect(rules('max-age=1, must-revalidate, stale-while-revalidate=9').whileRevalidate).toBe(0);
    expect(rules('max-age=1, no-cache, stale-while-revalidate=9').whileRevalidate).toBe(0);
    expect(rules('s-maxage=1').mustRevalidate).toBe(true);
    expect(rules('proxy-revalidate').mustRevalidate).toBe(true);
  });

  it('stale-if-error only with permission: the response, the client, or the operator; off by default', () => {
    expect(staleIfErrorWindow(rules('max-age=1'), undefined, P)).toBe(0);
    expect(staleIfErrorWindow(rules('max-age=1, stale-if-error=4'), undefined, P)).toBe(4);
    expect(
      staleIfErrorWindow(
        rules('max-age=1'),
        requestRules({ 'cache-control': 'stale-if-error=8' }),
        P,
      ),
    ).toBe(8);
    expect(
      staleIfErrorWindow(rules('max-age=1'), requestRules({ 'cache-control': 'max-stale=5' }), P),
    ).toBe(5);
    expect(
      staleIfErrorWindow(rules('max-age=1'), undefined, { ...P, staleOnErrorSeconds: 60 }),
    ).toBe(60);
    // The response's own window replaces the operator's default.
    expect(
      staleIfErrorWindow(rules('max-age=1, stale-if-error=4'), undefined, {
        ...P,
        staleOnErrorSeconds: 60,
      }),
    ).toBe(4);
    // Prohibited by must-revalidate, proxy-revalidate, s-maxage and no-cache whatever else says yes.
    for (const cc of ['must-revalidate', 'proxy-revalidate', 's-maxage=1', 'no-cache'])
      expect(
        staleIfErrorWindow(
          rules(`${cc}, stale-if-error=99`),
          requestRules({ 'cache-control': 'max-stale' }),
          { ...P, staleOnErrorSeconds: 60 },
        ),
        cc,
      ).toBe(0);
  });
});

describe('validators and 304 (RFC 9110 §13.1.2, RFC 9111 §4.3.4)', () => {
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

describe('parseRange (RFC 9110 §14.1.2)', () => {
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
