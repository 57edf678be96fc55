import { describe, expect, it } from 'vitest';
import { checkAccess, isLoopback } from '../../src/admin/access.js';

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
