import { ManualClock } from '@coral/testkit';
import { describe, expect, it } from 'vitest';
import { AdminAccess, checkAccess, isAddressHost, isLoopback } from '../../src/admin/access.js';

describe('isLoopback', () => {
  it('accepts 127.0.0.0/8, ::1 and IPv4-mapped loopback only', () => {
    for (const a of ['127.0.0.1', '127.9.8.7', '::1', '::ffff:127.0.0.1']) {
      expect(isLoopback(a)).toBe(true);
    }
    for (const a of ['10.0.0.1', '::ffff:10.0.0.1', '128.0.0.1', 'fe80::1', '', undefined, 'x']) {
      expect(isLoopback(a)).toBe(false);
    }
  });
});

describe('checkAccess', () => {
  const token = 'correct-horse-battery-staple';
  it('lets loopback clients in with or without a token configured', () => {
    expect(() => checkAccess('127.0.0.1', undefined, undefined)).not.toThrow();
    expect(() => checkAccess('::1', undefined, token)).not.toThrow();
  });
  it('refuses other addresses when no token is configured (403)', () => {
    expect(() => checkAccess('192.0.2.7', `Bearer ${token}`, undefined)).toThrow(
      expect.objectContaining({ code: 'CORAL_ERR_ADMIN_FORBIDDEN', statusCode: 403 }),
    );
  });
  it('requires the right bearer token from other addresses (401)', () => {
    expect(() => checkAccess('192.0.2.7', undefined, token)).toThrow(
      expect.objectContaining({ code: 'CORAL_ERR_ADMIN_UNAUTHORIZED', statusCode: 401 }),
    );
    expect(() => checkAccess('192.0.2.7', 'Bearer wrong', token)).toThrow(
      expect.objectContaining({ code: 'CORAL_ERR_ADMIN_UNAUTHORIZED' }),
    );
    expect(() => checkAccess('192.0.2.7', `Basic ${token}`, token)).toThrow(
      expect.objectContaining({ code: 'CORAL_ERR_ADMIN_UNAUTHORIZED' }),
    );
    expect(() => checkAccess('192.0.2.7', `Bearer ${token}`, token)).not.toThrow();
  });
});

describe('isAddressHost (DNS rebinding)', () => {
  it('accepts IP literals and localhost, with or without a port, and no Host at all', () => {
    for (const h of [
      undefined,
      '127.0.0.1',
      '127.0.0.1:8092',
      '[::1]:8092',
      '[::1]',
      'localhost',
      'LOCALHOST:8092',
      'admin.localhost:8092',
      '192.0.2.10:8092',
    ]) {
      expect(isAddressHost(h), String(h)).toBe(true);
    }
  });
  it('refuses names and malformed hosts', () => {
    for (const h of ['evil.example', 'evil.example:8092', '127.0.0.1.evil.example', '[nope]', '']) {
      expect(isAddressHost(h), h).toBe(false);
    }
  });
});

describe('AdminAccess', () => {
  const token = 'correct-horse-battery-staple';
  const clock = new ManualClock(1_700_000_000_000);
  const access = new AdminAccess({ clock }, { token });
  const cookie = `coral_admin=${access.sessions!.issue()}`;
  const r = (method: string, remoteAddress: string, headers: Record<string, string> = {}) => ({
    method,
    remoteAddress,
    headers,
  });

  it('serves loopback clients that address it by IP, and asks the rest for the token', () => {
    expect(access.authorize(r('GET', '127.0.0.1', { host: '127.0.0.1:8092' }))).toBe('loopback');
    expect(() => access.authorize(r('GET', '127.0.0.1', { host: 'evil.example:8092' }))).toThrow(
      expect.objectContaining({ statusCode: 401, message: expect.stringMatching(/rebinding/) }),
    );
    expect(
      access.authorize(
        r('POST', '127.0.0.1', { host: 'evil.example', authorization: `Bearer ${token}` }),
      ),
    ).toBe('bearer');
    const open = new AdminAccess({ clock }, {});
    expect(() => open.authorize(r('GET', '127.0.0.1', { host: 'evil.example' }))).toThrow(
      expect.objectContaining({ statusCode: 403, code: 'CORAL_ERR_ADMIN_FORBIDDEN' }),
    );
  });

  it('lets a session cookie read but not act', () => {
    expect(access.authorize(r('GET', '192.0.2.7', { cookie }))).toBe('session');
    expect(access.authorize(r('HEAD', '192.0.2.7', { cookie }))).toBe('session');
    for (const m of ['POST', 'PUT', 'DELETE']) {
      expect(() => access.authorize(r(m, '192.0.2.7', { cookie }))).toThrow(
        expect.objectContaining({ statusCode: 401, message: expect.stringMatching(/reads only/) }),
      );
    }
    expect(() => access.authorize(r('GET', '192.0.2.7', { cookie: 'coral_admin=v1.1.x' }))).toThrow(
      expect.objectContaining({ statusCode: 401 }),
    );
  });

  it('refuses mutating requests that a browser says another site sent', () => {
    const ok = { host: '127.0.0.1:8092' };
    expect(() => access.checkSameOrigin(r('POST', '127.0.0.1', ok))).not.toThrow();
    expect(() =>
      access.checkSameOrigin(r('POST', '127.0.0.1', { ...ok, origin: 'http://127.0.0.1:8092' })),
    ).not.toThrow();
    expect(() =>
      access.checkSameOrigin(r('GET', '127.0.0.1', { ...ok, 'sec-fetch-site': 'cross-site' })),
    ).not.toThrow();
    for (const h of [
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
      { origin: 'http://evil.example' },
      { origin: 'http://127.0.0.1:9999' },
      { origin: 'null' },
      { origin: 'not a url' },
    ] as Record<string, string>[]) {
      expect(
        () => access.checkSameOrigin(r('POST', '127.0.0.1', { ...ok, ...h })),
        JSON.stringify(h),
      ).toThrow(expect.objectContaining({ statusCode: 403, code: 'CORAL_ERR_ADMIN_FORBIDDEN' }));
    }
  });
});
