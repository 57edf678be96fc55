import { ManualClock } from '@coral/testkit';
import { describe, expect, it } from 'vitest';
import { AdminSessions, clearCookie, readCookie } from '../../src/admin/session.js';

const token = 'admin-token-0123456789';

describe('AdminSessions', () => {
  it('issues values that prove the token until they expire, without containing it', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const s = new AdminSessions({ clock }, { token, ttlSeconds: 60 });
    const v = s.issue();
    expect(v).toMatch(/^v1\.\d+\.[A-Za-z0-9_-]{43}$/);
    expect(v).not.toContain(token);
    expect(s.verify(v)).toBe(true);
    await clock.advance(59_000);
    expect(s.verify(v)).toBe(true);
    await clock.advance(1_000);
    expect(s.verify(v)).toBe(false);
  });

  it('refuses values of another token, tampered ones and garbage', () => {
    const clock = new ManualClock(1_700_000_000_000);
    const s = new AdminSessions({ clock }, { token });
    const other = new AdminSessions({ clock }, { token: 'another-token-0123456789' });
    const v = s.issue();
    expect(other.verify(v)).toBe(false);
    const [ver, exp, mac] = v.split('.') as [string, string, string];
    // a later expiry with the old MAC
    expect(s.verify(`${ver}.${Number(exp) + 3600}.${mac}`)).toBe(false);
    const flipped = mac.slice(0, -1) + (mac.endsWith('A') ? 'B' : 'A');
    expect(s.verify(`${ver}.${exp}.${flipped}`)).toBe(false);
    for (const bad of [undefined, '', 'v1', 'v2.1.x', `v1.${exp}.${mac}=`, 'x'.repeat(5000)]) {
      expect(s.verify(bad)).toBe(false);
    }
  });

  it('writes HttpOnly, SameSite=Strict, host-only cookies, and clears them', () => {
    const s = new AdminSessions({ clock: new ManualClock(0) }, { token, ttlSeconds: 600 });
    const c = s.setCookie('coral_admin_8092');
    expect(c).toMatch(/^coral_admin_8092=v1\.\d+\.[\w-]+; /);
    expect(c).toContain('; Path=/; Max-Age=600; HttpOnly; SameSite=Strict');
    expect(c).not.toMatch(/Domain=/i);
    expect(s.setCookie('c', true)).toMatch(/; Secure$/);
    expect(clearCookie('coral_admin_8092')).toBe(
      'coral_admin_8092=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict',
    );
  });

  it('reads one cookie out of a Cookie header', () => {
    expect(readCookie('a=1; coral_admin=v1.x.y; b=2', 'coral_admin')).toBe('v1.x.y');
    expect(readCookie('coral_admin_1=z', 'coral_admin')).toBeUndefined();
    expect(readCookie(undefined, 'coral_admin')).toBeUndefined();
    expect(readCookie('junk; =; coral_admin', 'coral_admin')).toBeUndefined();
  });
});
