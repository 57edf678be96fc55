import { describe, expect, it } from 'vitest';
import {
  cacheRequest,
  decide,
  mayJoin,
  mayShareWithWaiter,
  selectVariant,
  staleOnErrorOk,
} from '../../src/cache/decide.js';
import type { Candidate } from '../../src/cache/decide.js';

const T = Date.UTC(2026, 0, 1);
const P = { defaultTtlSeconds: 0 };
const date = (ms: number) => new Date(ms).toUTCString();

/** A 200 stored at T (Date T, received T) with these Cache-Control directives. */
function stored(
  cc: string,
  extra: Partial<Candidate> & { headers?: Record<string, string> } = {},
): Candidate {
  return {
    status: 200,
    vary: [],
    varyValues: [],
    facts: { requestTime: T, responseTime: T, ageValue: 0, dateValue: T },
    ...extra,
    headers: { date: date(T), 'cache-control': cc, ...extra.headers },
  };
}
const req = (headers: Record<string, string> = {}, method = 'GET', peer = false) =>
  cacheRequest(method, headers, peer);
const at = (s: number) => T + s * 1000;
const kind = (d: ReturnType<typeof decide>) =>
  d.kind === 'hit'
    ? d.refresh
      ? 'hit+refresh'
      : 'hit'
    : d.kind === 'forward'
      ? `forward:${d.fwd}`
      : 'refuse';

describe('decide (RFC 9111 §4)', () => {
  it('misses: uri-miss, vary-miss, request no-cache; only-if-cached and peers are refused (§5.2.1.7)', () => {
    expect(decide(req(), [], T, P)).toEqual({
      kind: 'forward',
      fwd: 'uri-miss',
      join: true,
      peers: true,
      register: true,
    });
    const gz = stored('max-age=60', { vary: ['accept-encoding'], varyValues: ['gzip'] });
    expect(decide(req(), [gz], T, P)).toMatchObject({ kind: 'forward', fwd: 'vary-miss' });
    expect(decide(req({ 'cache-control': 'no-cache' }), [], T, P)).toMatchObject({
      fwd: 'request',
      join: false,
      peers: false,
    });
    expect(decide(req({ 'cache-control': 'no-store' }), [], T, P)).toMatchObject({
      register: false,
      peers: false,
    });
    expect(decide(req({ 'cache-control': 'only-if-cached' }), [], T, P)).toMatchObject({
      kind: 'refuse',
      join: false,
    });
    expect(decide(req({}, 'GET', true), [], T, P)).toMatchObject({ kind: 'refuse', join: true });
    // A HEAD miss may join a GET in flight but starts no shared fetch.
    expect(decide(req({}, 'HEAD'), [], T, P)).toMatchObject({
      kind: 'forward',
      join: true,
      register: false,
      peers: false,
    });
  });

  it('Authorization: never served from the cache, never joined (§3.5)', () => {
    expect(decide(req({ authorization: 'Basic x' }), [stored('max-age=60')], T, P)).toEqual({
      kind: 'forward',
      fwd: 'request',
      join: false,
      peers: false,
      register: false,
    });
  });

  it('freshness against request max-age, min-fresh, max-stale (§4.2, §5.2.1.1-3)', () => {
    const m = stored('max-age=60');
    const cases: Array<[Record<string, string>, number, string]> = [
      [{}, 0, 'hit'],
      [{}, 59, 'hit'],
      [{}, 60, 'forward:stale'],
      [{ 'cache-control': 'max-age=10' }, 10, 'hit'],
      [{ 'cache-control': 'max-age=10' }, 11, 'forward:stale'],
      [{ 'cache-control': 'max-age=0' }, 0, 'hit'],
      [{ 'cache-control': 'max-age=0' }, 1, 'forward:stale'],
      [{ 'cache-control': 'min-fresh=20' }, 40, 'hit'],
      [{ 'cache-control': 'min-fresh=20' }, 41, 'forward:stale'],
      [{ 'cache-control': 'max-stale=30' }, 90, 'hit'],
      [{ 'cache-control': 'max-stale=30' }, 91, 'forward:stale'],
      [{ 'cache-control': 'max-stale' }, 1e6, 'hit'],
      [{ 'cache-control': 'max-stale, max-age=100' }, 101, 'forward:stale'],
      [{ 'cache-control': 'no-cache' }, 0, 'forward:request'],
      [{ pragma: 'no-cache' }, 0, 'forward:request'],
    ];
    for (const [h, s, want] of cases)
      expect(kind(decide(req(h), [m], at(s), P)), `${JSON.stringify(h)} at ${s}s`).toBe(want);
  });

  it('response directives: no-cache revalidates always; must-revalidate / proxy-revalidate / s-maxage refuse max-stale (§5.2.2)', () => {
    expect(kind(decide(req(), [stored('no-cache, max-age=60')], T, P))).toBe('forward:stale');
    for (const cc of [
      'max-age=10, must-revalidate',
      'max-age=10, proxy-revalidate',
      's-maxage=10',
    ]) {
      expect(kind(decide(req({ 'cache-control': 'max-stale' }), [stored(cc)], at(11), P)), cc).toBe(
        'forward:stale',
      );
      expect(kind(decide(req(), [stored(cc)], at(5), P)), cc).toBe('hit');
    }
  });

  it('stale-while-revalidate: serve and refresh within the window, not after, not under must-revalidate (RFC 5861 §3)', () => {
    const m = stored('max-age=10, stale-while-revalidate=20');
    expect(kind(decide(req(), [m], at(15), P))).toBe('hit+refresh');
    expect(kind(decide(req(), [m], at(29), P))).toBe('hit+refresh');
    expect(kind(decide(req(), [m], at(30), P))).toBe('forward:stale');
    expect(kind(decide(req({ 'cache-control': 'max-age=5' }), [m], at(15), P))).toBe(
      'forward:stale',
    );
    expect(
      kind(
        decide(
          req(),
          [stored('max-age=10, must-revalidate, stale-while-revalidate=20')],
          at(15),
          P,
        ),
      ),
    ).toBe('forward:stale');
  });

  it('only-if-cached: served when reusable, refused (504) when stale (§5.2.1.7)', () => {
    const m = stored('max-age=10');
    expect(kind(decide(req({ 'cache-control': 'only-if-cached' }), [m], at(5), P))).toBe('hit');
    expect(decide(req({ 'cache-control': 'only-if-cached' }), [m], at(50), P)).toMatchObject({
      kind: 'refuse',
      join: false,
    });
  });

  it('peers get fresh copies only, whatever they ask', () => {
    const m = stored('max-age=10');
    expect(
      kind(decide(req({ 'cache-control': 'only-if-cached' }, 'GET', true), [m], at(5), P)),
    ).toBe('hit');
    expect(decide(req({}, 'GET', true), [m], at(10), P)).toMatchObject({
      kind: 'refuse',
      join: true,
    });
    expect(decide(req({}, 'GET', true), [stored('no-cache, max-age=60')], T, P)).toMatchObject({
      kind: 'refuse',
    });
  });

  it('heuristic freshness for heuristically cacheable statuses only (RFC 9110 §15.1, RFC 9111 §4.2.2)', () => {
    const lm = { 'last-modified': date(T - 1000_000) };
    expect(kind(decide(req(), [stored('', { headers: lm })], at(50), P))).toBe('hit');
    expect(kind(decide(req(), [stored('', { status: 302, headers: lm })], at(50), P))).toBe(
      'forward:stale',
    );
    expect(kind(decide(req(), [stored('max-age=60', { status: 302 })], at(50), P))).toBe('hit');
    expect(kind(decide(req(), [stored('max-age=60', { status: 500 })], at(50), P))).toBe('hit');
  });

  it('Vary selection: matching variant, most recent by Date (§4.1, §4)', () => {
    const old = stored('max-age=60', { vary: ['accept-encoding'], varyValues: ['gzip'] });
    const newer = {
      ...stored('max-age=60', { vary: ['accept-encoding'], varyValues: ['gzip'] }),
      facts: { requestTime: T, responseTime: T + 5000, ageValue: 0, dateValue: T + 5000 },
    };
    const br = stored('max-age=60', { vary: ['accept-encoding'], varyValues: ['br'] });
    const none = stored('max-age=60', { vary: ['accept-encoding'], varyValues: [null] });
    expect(selectVariant(req({ 'accept-encoding': 'GZIP' }), [old, br, newer])).toBe(newer);
    expect(selectVariant(req({ 'accept-encoding': 'br' }), [old, br, newer])).toBe(br);
    expect(selectVariant(req({}), [old, br, none])).toBe(none);
    expect(selectVariant(req({ 'accept-encoding': '' }), [old, br, none])).toBeUndefined();
  });

  it('joining a fetch in flight only when its response would be reusable for the joiner (§4)', () => {
    const fresh = stored('max-age=60');
    expect(mayJoin(req(), fresh, T, P)).toBe(true);
    expect(mayJoin(req({ 'cache-control': 'no-cache' }), fresh, T, P)).toBe(false);
    expect(mayJoin(req({ 'cache-control': 'max-age=0' }), fresh, at(1), P)).toBe(false);
    expect(mayJoin(req(), stored('max-age=0'), T, P)).toBe(false);
    expect(mayJoin(req(), stored('no-cache, max-age=60'), T, P)).toBe(false);
    expect(mayJoin(req(), stored('max-age=1, stale-while-revalidate=99'), at(5), P)).toBe(false);
    const gz = stored('max-age=60', { vary: ['accept-encoding'], varyValues: ['gzip'] });
    expect(mayJoin(req({ 'accept-encoding': 'gzip' }), gz, T, P)).toBe(true);
    expect(mayJoin(req({ 'accept-encoding': 'br' }), gz, T, P)).toBe(false);
    expect(mayJoin(req({ authorization: 'x' }), fresh, T, P)).toBe(false);
  });

  it('a waiter may share a response whose only freshness is a spent heuristic, nothing more (§4, §4.2.2)', () => {
    // Last-Modified a second before Date: 10 % of it is 0 s, stale on arrival.
    const recent = (extra: Record<string, string> = {}, status = 200): Candidate => ({
      ...stored('', { headers: { 'last-modified': date(T - 1000), ...extra } }),
      status,
    });
    expect(mayJoin(req(), recent(), T, P)).toBe(false);
    expect(mayShareWithWaiter(req(), recent(), T, P)).toBe(true);
    expect(mayShareWithWaiter(req({ 'cache-control': 'max-age=0' }), recent(), T, P)).toBe(true);
    expect(mayShareWithWaiter(req({ 'cache-control': 'max-age=0' }), recent(), at(2), P)).toBe(
      false,
    );
    expect(mayShareWithWaiter(req({ 'cache-control': 'no-cache' }), recent(), T, P)).toBe(false);
    expect(mayShareWithWaiter(req({ 'cache-control': 'min-fresh=1' }), recent(), T, P)).toBe(false);
    expect(mayShareWithWaiter(req({ authorization: 'x' }), recent(), T, P)).toBe(false);
    // The origin's own word stands: explicit freshness spent, no-cache; statuses not
    // heuristically cacheable.
    expect(mayShareWithWaiter(req(), stored('max-age=0'), T, P)).toBe(false);
    expect(mayShareWithWaiter(req(), recent({ expires: date(T - 1000) }), T, P)).toBe(false);
    expect(mayShareWithWaiter(req(), recent({ 'cache-control': 'no-cache' }), T, P)).toBe(false);
    expect(mayShareWithWaiter(req(), recent({}, 302), T, P)).toBe(false);
    const gz = { ...recent(), vary: ['accept-encoding'], varyValues: ['gzip'] };
    expect(mayShareWithWaiter(req({ 'accept-encoding': 'br' }), gz, T, P)).toBe(false);
    expect(mayShareWithWaiter(req({ 'accept-encoding': 'gzip' }), gz, T, P)).toBe(true);
  });

  it('stale on error only with permission, never for a no-cache request (§4.2.4, RFC 5861 §4)', () => {
    expect(staleOnErrorOk(req(), stored('max-age=10'), at(20), P)).toBe(false);
    expect(staleOnErrorOk(req(), stored('max-age=10, stale-if-error=30'), at(20), P)).toBe(true);
    expect(staleOnErrorOk(req(), stored('max-age=10, stale-if-error=30'), at(40), P)).toBe(false);
    expect(
      staleOnErrorOk(req({ 'cache-control': 'max-stale=60' }), stored('max-age=10'), at(20), P),
    ).toBe(true);
    expect(
      staleOnErrorOk(req(), stored('max-age=10'), at(20), { ...P, staleOnErrorSeconds: 60 }),
    ).toBe(true);
    expect(
      staleOnErrorOk(
        req({ 'cache-control': 'no-cache' }),
        stored('max-age=10, stale-if-error=99'),
        at(20),
        P,
      ),
    ).toBe(false);
  });
});
