import { describe, expect, it } from 'vitest';
import { cacheFacts } from '../src/index.js';

describe('cacheFacts (RFC 9211 Cache-Status)', () => {
  it('reads a hit with its ttl', () => {
    expect(cacheFacts('Coral; hit; ttl=299', 'Coral')).toEqual({
      result: 'hit',
      hit: true,
      stored: false,
      collapsed: false,
      ttl: 299,
    });
  });

  it('reads a miss stored from the origin, collapsed, with a detail string', () => {
    const f = cacheFacts(
      'Coral; fwd=uri-miss; fwd-status=200; stored; collapsed; detail="peer-0123456789ab unverified"',
      'Coral',
    );
    expect(f).toEqual({
      result: 'miss',
      hit: false,
      fwd: 'uri-miss',
      fwdStatus: 200,
      stored: true,
      collapsed: true,
      detail: 'peer-0123456789ab unverified',
    });
  });

  it('tells the stale outcomes apart', () => {
    expect(cacheFacts('Coral; hit; ttl=-3; detail=stale-while-revalidate', 'Coral').result).toBe(
      'stale',
    );
    expect(cacheFacts('Coral; fwd=stale; fwd-status=304; ttl=60', 'Coral').result).toBe(
      'revalidated',
    );
    expect(cacheFacts('Coral; fwd=stale; fwd-status=200', 'Coral').result).toBe('expired');
    expect(
      cacheFacts('Coral; fwd=stale; fwd-status=502; detail=stale-if-error', 'Coral').result,
    ).toBe('stale');
  });

  it('reads bypasses, peer fetches and node-made errors', () => {
    expect(cacheFacts('Coral; fwd=method; fwd-status=201', 'Coral').result).toBe('bypass');
    expect(cacheFacts('Coral; fwd=bypass; detail=redirect-home', 'Coral').result).toBe('bypass');
    expect(cacheFacts('Coral; fwd=peer; fwd-status=200', 'Coral').result).toBe('miss');
    expect(cacheFacts('Coral; detail=CORAL_ORIGIN_TLS_FAILED', 'Coral')).toMatchObject({
      result: 'error',
      detail: 'CORAL_ORIGIN_TLS_FAILED',
    });
  });

  it('takes the last member of this cache, after an upstream cache’s', () => {
    const f = cacheFacts('OriginCache; hit, Coral; fwd=uri-miss; fwd-status=200', 'Coral');
    expect(f).toMatchObject({ result: 'miss', hit: false, fwd: 'uri-miss' });
  });

  it('treats an absent, foreign or unparseable field as a node-made answer', () => {
    for (const h of [undefined, '', 'Other; hit', 'Coral; hit; ttl="', '"Coral"; hit, ;;']) {
      expect(cacheFacts(h, 'Coral').result, String(h)).toBe('error');
    }
  });
});
