/**
 * Who may use the admin API: any loopback client; anyone else only with the configured bearer
 * token (and nobody else at all when no token is configured).
 */
import { timingSafeEqual, createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { AdminAuthError } from '../errors.js';

/** 127.0.0.0/8, ::1, and IPv4-mapped loopback (::ffff:127.x.y.z). */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.toLowerCase();
  if (a === '::1') return true;
  const v4 = a.startsWith('::ffff:') ? a.slice(7) : a;
  return isIP(v4) === 4 && v4.startsWith('127.');
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/** Throws {@link AdminAuthError} (401 or 403) unless the request may proceed. */
export function checkAccess(
  remoteAddress: string | undefined,
  authorization: string | undefined,
  token: string | undefined,
): void {
  if (isLoopback(remoteAddress)) return;
  if (token === undefined) {
    throw new AdminAuthError(
      'the admin API only answers loopback clients unless admin.token is configured',
      403,
    );
  }
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  if (!match) throw new AdminAuthError('a bearer token is required from this address', 401);
  // Compare digests, so the comparison takes the same time whatever the lengths.
  if (!timingSafeEqual(digest(match[1]!), digest(token))) {
    throw new AdminAuthError('wrong bearer token', 401);
  }
}
