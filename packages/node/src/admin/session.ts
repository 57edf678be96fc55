/**
 * Browser sessions of the admin API. A browser cannot send `Authorization: Bearer`, so it gives
 * the token once (the login form or `/?token=`) and gets a cookie instead:
 *
 *   coral_admin=v1.<expires, unix s>.<HMAC-SHA-256(token, "coral-admin-session:v1:" + expires)>
 *
 * HttpOnly (scripts never see it), SameSite=Strict (never sent with a request another site
 * starts), no Domain (this host only), Path=/, Max-Age = the session's lifetime. The value holds
 * no secret and proves knowledge of the token until it expires; changing `admin.token` ends every
 * session at once. The cookie authenticates reads only (GET, HEAD): every mutating request needs
 * the bearer token itself (or loopback), so a forged cross-site request cannot use it.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Clock } from '@coral/runtime';

/** Lifetime of a browser session (s). */
export const SESSION_TTL_SECONDS = 12 * 60 * 60;
export const SESSION_COOKIE = 'coral_admin';
const VERSION = 'v1';
/** A cookie value longer than this is not even parsed. */
const MAX_VALUE_LENGTH = 128;

export class AdminSessions {
  readonly #token: string;
  readonly #clock: Clock;
  readonly ttlSeconds: number;

  constructor(components: { clock: Clock }, options: { token: string; ttlSeconds?: number }) {
    this.#clock = components.clock;
    this.#token = options.token;
    this.ttlSeconds = options.ttlSeconds ?? SESSION_TTL_SECONDS;
  }

  #mac(expires: number): Buffer {
    return createHmac('sha256', this.#token)
      .update(`coral-admin-session:${VERSION}:${expires}`)
      .digest();
  }

  /** A fresh session cookie value. */
  issue(): string {
    const expires = Math.floor(this.#clock.now() / 1000) + this.ttlSeconds;
    return `${VERSION}.${expires}.${this.#mac(expires).toString('base64url')}`;
  }

  /** True when `value` is a session this token issued and it has not expired. */
  verify(value: string | undefined): boolean {
    if (!value || value.length > MAX_VALUE_LENGTH) return false;
    const m = /^v1\.([0-9]{1,12})\.([A-Za-z0-9_-]{43})$/.exec(value);
    if (!m) return false;
    const expires = Number(m[1]);
    if (expires * 1000 <= this.#clock.now()) return false;
    const given = Buffer.from(m[2]!, 'base64url');
    const want = this.#mac(expires);
    return given.length === want.length && timingSafeEqual(given, want);
  }

  /** `Set-Cookie` for a new session (`secure` when the admin API is served over TLS). */
  setCookie(name: string, secure = false): string {
    return cookie(name, this.issue(), this.ttlSeconds, secure);
  }
}

/** `Set-Cookie` that ends the session in the browser. */
export function clearCookie(name: string, secure = false): string {
  return cookie(name, '', 0, secure);
}

function cookie(name: string, value: string, maxAge: number, secure: boolean): string {
  return (
    `${name}=${value}; Path=/; Max-Age=${maxAge}; HttpOnly; SameSite=Strict` +
    (secure ? '; Secure' : '')
  );
}

/** The value of cookie `name` in a `Cookie` header (the first one), or undefined. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
