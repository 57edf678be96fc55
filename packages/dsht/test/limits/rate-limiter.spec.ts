import { ManualClock } from '@coral/testkit';
import { describe, expect, it } from 'vitest';
import { hostKey, netKey } from '../../src/limits/address.js';
import { GlobalBucket, SourceLimiter } from '../../src/limits/rate-limiter.js';
import type { RequestType } from '../../src/wire/messages.js';

describe('source keys', () => {
  it('group IPv4 by address and /24, IPv6 by /64 and /48, mapped IPv4 as IPv4', () => {
    expect(hostKey('203.0.113.9')).toBe('203.0.113.9');
    expect(netKey('203.0.113.9')).toBe('203.0.113.0/24');
    expect(hostKey('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(hostKey('2001:db8:1:2::99')).toBe('2001:db8:1:2::/64');
    expect(netKey('2001:db8:1:ffff::1')).toBe('2001:db8:1::/48');
    expect(hostKey('::1')).toBe('0:0:0:0::/64');
    expect(hostKey('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(netKey('0:0:0:0:0:ffff:192.0.2.7')).toBe('192.0.2.0/24');
    expect(hostKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
  });
});

describe('SourceLimiter', () => {
  it('allows a burst per host and type, then the sustained rate', async () => {
    const clock = new ManualClock(0);
    const l = new SourceLimiter<RequestType>(
      { clock },
      { limits: { PING: { perSecond: 10, burst: 5 } } },
    );
    let ok = 0;
    for (let i = 0; i < 20; i++) if (l.allow('PING', '10.0.0.1')) ok++;
    expect(ok).toBe(5);
    // Another type and another host have their own buckets.
    expect(l.allow('FIND_NODE', '10.0.0.1')).toBe(true);
    expect(l.allow('PING', '10.0.0.2')).toBe(true);
    await clock.advance(500);
    ok = 0;
    for (let i = 0; i < 20; i++) if (l.allow('PING', '10.0.0.1')) ok++;
    expect(ok).toBe(5);
    expect(l.refused.PING).toBeGreaterThan(0);
  });

  it('limits a /24 as a whole at netMultiplier times a host', () => {
    const clock = new ManualClock(0);
    const l = new SourceLimiter(
      { clock },
      { limits: { GET: { perSecond: 1, burst: 2 } }, netMultiplier: 3 },
    );
    let ok = 0;
    for (let h = 1; h <= 10; h++)
      for (let i = 0; i < 2; i++) if (l.allow('GET', `10.9.9.${h}`)) ok++;
    expect(ok).toBe(6);
    expect(l.allow('GET', '10.9.8.1')).toBe(true);
  });

  it('stays bounded, and tracks only the sources it served', () => {
    const clock = new ManualClock(0);
    const l = new SourceLimiter({ clock }, { maxEntries: 100 });
    for (let i = 0; i < 1000; i++) l.allow('PING', `10.${i >> 8}.${i & 255}.1`);
    expect(l.size).toBeLessThanOrEqual(100);
    expect(l.tracks('10.3.231.1')).toBe(true);
    expect(l.tracks('10.0.0.1')).toBe(false);
  });

  it('forgets a source once all its buckets have refilled, and only then', async () => {
    const clock = new ManualClock(0);
    // Longest refill: PING, 4 / 2 per second = 2 s; forgotten after 2 s + 1 s of idleness.
    const l = new SourceLimiter(
      { clock },
      { limits: { PING: { perSecond: 2, burst: 4 }, GET: { perSecond: 100, burst: 100 } } },
    );
    const pingsAllowed = (): number =>
      Array.from({ length: 6 }, () => l.allow('PING', '10.0.0.1')).filter(Boolean).length;
    expect(pingsAllowed()).toBe(4);
    await clock.advance(1_500);
    // Not yet refilled: a newcomer does not push it out, and it is still limited (3 of 4 back).
    l.allow('GET', '10.0.1.1');
    expect(l.tracks('10.0.0.1')).toBe(true);
    expect(pingsAllowed()).toBe(3);
    await clock.advance(3_000);
    // Idle past every refill: forgotten when the next source arrives, and served as a new one.
    l.allow('GET', '10.0.2.1');
    expect(l.tracks('10.0.0.1')).toBe(false);
    expect(pingsAllowed()).toBe(4);
  });

  it('limits kinds of its own (what a source can make a node send), with a /24 on top', () => {
    const clock = new ManualClock(0);
    const l = new SourceLimiter<'NOTICE'>(
      { clock },
      { kinds: { NOTICE: { perSecond: 0.5, burst: 2 } }, netMultiplier: 2 },
    );
    const allowed = (ip: string) =>
      Array.from({ length: 5 }, () => l.allow('NOTICE', ip)).filter(Boolean).length;
    expect(allowed('10.7.7.1')).toBe(2);
    expect(allowed('10.7.7.2')).toBe(2);
    expect(allowed('10.7.7.3')).toBe(0); // the /24 had 2 × 2
    expect(l.refused.NOTICE).toBe(11);
    expect(l.limits).toEqual({ NOTICE: { perSecond: 0.5, burst: 2 } });
  });
});

describe('GlobalBucket', () => {
  it('refills at its rate', async () => {
    const clock = new ManualClock(0);
    const b = new GlobalBucket({ clock }, { perSecond: 2, burst: 2 });
    expect([b.take(), b.take(), b.take()]).toEqual([true, true, false]);
    await clock.advance(500);
    expect([b.take(), b.take()]).toEqual([true, false]);
    expect(b.refused).toBe(2);
  });
});
