import { describe, expect, it } from 'vitest';
import {
  deltaSeconds,
  parseCacheControl,
  parseTargeted,
  responseDirectives,
} from '../../src/cache/directives.js';
import { freshnessLifetime, responseRules, storable } from '../../src/cache/policy.js';

const P = { defaultTtlSeconds: 0 };
const D = Date.UTC(2026, 0, 1);
const date = (ms: number) => new Date(ms).toUTCString();

describe('Cache-Control (RFC 9111 §5.2)', () => {
  it('tokens, both argument forms, case-insensitive names; the first duplicate wins (§4.2.1)', () => {
    const cc = parseCacheControl(
      'Max-Age=60, no-cache="set-cookie, x", PUBLIC, max-age=5, s-maxage="30", x="a\\"b"',
    );
    expect(cc.get('max-age')).toBe('60');
    expect(cc.get('no-cache')).toBe('set-cookie, x');
    expect(cc.get('public')).toBe(true);
    expect(cc.get('s-maxage')).toBe('30');
    expect(cc.get('x')).toBe('a"b');
  });

  it('a malformed member is skipped up to the next comma, the others survive', () => {
    const cc = parseCacheControl(', ,=,max-age=abc, no-store x, public, "unterminated, private');
    expect(cc.get('max-age')).toBe('abc');
    expect(cc.has('no-store')).toBe(false);
    expect(cc.get('public')).toBe(true);
    expect(cc.has('private')).toBe(false); // inside the unterminated quoted-string
    expect(deltaSeconds(cc, 'max-age')).toBe('invalid');
    expect(parseCacheControl(undefined).size).toBe(0);
    expect(parseCacheControl('private="a, b", max-age=9').get('max-age')).toBe('9');
  });
});

describe('targeted fields (RFC 9213)', () => {
  it('are Structured Fields Dictionaries; empty or unparsable fields are ignored (§2.1)', () => {
    expect(parseTargeted('max-age=60, must-revalidate')).toEqual(
      new Map<string, string | true>([
        ['max-age', '60'],
        ['must-revalidate', true],
      ]),
    );
    expect(parseTargeted('')).toBeUndefined();
    expect(parseTargeted('   ')).toBeUndefined();
    expect(parseTargeted('Max-Age=60')).toBeUndefined(); // uppercase keys are not sf-keys
    expect(parseTargeted('max-age=60,')).toBeUndefined(); // trailing comma
    expect(parseTargeted('max-age="60"')?.get('max-age')).toBe('60');
    expect(parseTargeted('no-cache="a, b"')?.get('no-cache')).toBe('a, b');
    // Parameters ignored; a Decimal never is a delta-seconds value (§2.1: do not consume it).
    expect(parseTargeted('max-age=60;foo=1')?.get('max-age')).toBe('60');
    expect(deltaSeconds(parseTargeted('max-age=1.5')!, 'max-age')).toBe('invalid');
  });

  it('the first valid field of the target list wins; Cache-Control and Expires are then ignored (§2.2)', () => {
    const base = {
      date: date(D),
      'cache-control': 'no-store',
      expires: date(D + 10_000),
    };
    expect(storable({}, 200, base, P).store).toBe(false);
    const cdn = { ...base, 'cdn-cache-control': 'max-age=600' };
    expect(responseDirectives(cdn).targeted).toBe('cdn-cache-control');
    expect(storable({}, 200, cdn, P).store).toBe(true);
    expect(freshnessLifetime(200, cdn, P)).toBe(600);
    // Coral-Cache-Control targets this CDN alone and comes first.
    const coral = { ...cdn, 'coral-cache-control': 'max-age=30' };
    expect(responseDirectives(coral).targeted).toBe('coral-cache-control');
    expect(freshnessLifetime(200, coral, P)).toBe(30);
    // An invalid Coral-Cache-Control falls back to CDN-Cache-Control, an empty one too.
    expect(freshnessLifetime(200, { ...cdn, 'coral-cache-control': 'max-age=,' }, P)).toBe(600);
    expect(freshnessLifetime(200, { ...cdn, 'coral-cache-control': '' }, P)).toBe(600);
    // No valid targeted field: Cache-Control and Expires again.
    const bad = { date: date(D), expires: date(D + 10_000), 'cdn-cache-control': 'MAX-AGE=5' };
    expect(freshnessLifetime(200, bad, P)).toBe(10);
    // Expires is ignored under a targeted field: a valid one without max-age falls to heuristics.
    expect(
      freshnessLifetime(
        200,
        { date: date(D), expires: date(D + 10_000), 'cdn-cache-control': 'public' },
        P,
      ),
    ).toBe(0);
  });

  it('must implement max-age, must-revalidate, no-store, no-cache and private (§2.2)', () => {
    const t = (v: string) => responseRules(200, { 'cdn-cache-control': v, date: date(D) }, P);
    expect(t('max-age=5').lifetime).toBe(5);
    expect(t('max-age=5, must-revalidate').mustRevalidate).toBe(true);
    expect(t('no-store').noStore).toBe(true);
    expect(t('no-cache').noCache).toBe(true);
    expect(t('private').private).toBe(true);
    expect(t('s-maxage=9, max-age=5').lifetime).toBe(9);
    expect(t('max-age=5, stale-while-revalidate=30').whileRevalidate).toBe(30);
    // "no-store makes max-age inoperative": not stored.
    expect(storable({}, 200, { 'cdn-cache-control': 'no-store, max-age=60' }, P).store).toBe(false);
    // RFC 9213 §3 example: Cache-Control no-store for others, the CDN may store.
    expect(
      storable(
        {},
        200,
        {
          'cache-control': 'no-store',
          'cdn-cache-control': 'none',
          'last-modified': date(D - 1e6),
          date: date(D),
        },
        P,
      ).store,
    ).toBe(true);
  });
});
