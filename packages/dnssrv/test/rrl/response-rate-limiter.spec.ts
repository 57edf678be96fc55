import { describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { ResponseRateLimiter } from '../../src/index.js';
import { parseCidr, parseIp } from '../../src/net/ip.js';

const ip = (s: string) => parseIp(s)!;

describe('ResponseRateLimiter', () => {
  it('token bucket per (prefix, kind, name), slip every 2nd limited, refill with time', async () => {
    const clock = new ManualClock();
    const rrl = new ResponseRateLimiter({ clock }, { responsesPerSecond: 3, slip: 2 });
    const v = () => rrl.check(ip('192.0.2.10'), 'answer', 'a.nyud.net/1');
    expect([v(), v(), v(), v(), v(), v(), v()]).toEqual([
      'send',
      'send',
      'send',
      'drop',
      'slip',
      'drop',
      'slip',
    ]);
    // Same /24, same name: same account. Another name or kind: another account.
    expect(rrl.check(ip('192.0.2.99'), 'answer', 'a.nyud.net/1')).toBe('drop');
    expect(rrl.check(ip('192.0.2.99'), 'answer', 'b.nyud.net/1')).toBe('send');
    expect(rrl.check(ip('192.0.2.99'), 'nxdomain', 'nyud.net')).toBe('send');
    expect(rrl.check(ip('192.0.2.99'), 'nodata', 'nyud.net')).toBe('send');
    // Another /24 is unaffected.
    expect(rrl.check(ip('192.0.3.10'), 'answer', 'a.nyud.net/1')).toBe('send');
    await clock.advance(1000 / 3);
    expect(v()).toBe('send');
    expect(v()).toBe('slip'); // limited #4 → slipped (every 2nd)
    expect(rrl.counters).toMatchObject({ allowed: 8, slipped: 3, dropped: 3 });
  });

  it('slip 0 drops everything over the limit; rate 0 disables; exempt prefixes pass', () => {
    const rrl = new ResponseRateLimiter(
      { clock: new ManualClock() },
      { responsesPerSecond: 1, slip: 0, exempt: [parseCidr('10.0.0.0/8')] },
    );
    expect([1, 2, 3].map(() => rrl.check(ip('192.0.2.1'), 'error', ''))).toEqual([
      'send',
      'drop',
      'drop',
    ]);
    expect([1, 2, 3].map(() => rrl.check(ip('10.1.1.1'), 'error', ''))).toEqual([
      'send',
      'send',
      'send',
    ]);
    const off = new ResponseRateLimiter({}, { responsesPerSecond: 0 });
    expect(off.enabled).toBe(false);
    expect(off.check(ip('192.0.2.1'), 'answer', 'x')).toBe('send');
  });

  it('IPv6 clients are grouped by /56; the account table is bounded', () => {
    const rrl = new ResponseRateLimiter(
      { clock: new ManualClock() },
      { responsesPerSecond: 1, slip: 0, maxAccounts: 10 },
    );
    expect(rrl.check(ip('2001:db8:0:100::1'), 'answer', 'x')).toBe('send');
    expect(rrl.check(ip('2001:db8:0:1ff::2'), 'answer', 'x')).toBe('drop'); // same /56
    expect(rrl.check(ip('2001:db8:0:200::1'), 'answer', 'x')).toBe('send'); // next /56
    for (let i = 0; i < 50; i++) rrl.check(ip(`192.0.${i}.1`), 'answer', 'x');
    expect(rrl.accounts).toBeLessThanOrEqual(10);
  });
});
