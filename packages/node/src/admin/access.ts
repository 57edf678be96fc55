/**
 * Who may use the admin API, and from where:
 *
 * - a loopback client, when it addresses the node by IP address or `localhost` (a request whose
 *   Host is any other name is what a DNS-rebinding page in a local browser sends);
 * - anyone with the configured bearer token (`Authorization: Bearer <token>`);
 * - a browser holding a session cookie (admin/session.ts), for reads (GET, HEAD) only;
 * - nobody else, and nobody but loopback when no token is configured.
 *
 * Mutating requests (anything but GET and HEAD) are also refused when a browser says another
 * site's page sent them (`Sec-Fetch-Site`, `Origin`): with the session cookie reads-only and JSON
 * bodies required (server.ts), a page elsewhere cannot make the API act, even through a browser on
 * the node's own machine.
 */
import { timingSafeEqual, createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { systemClock, type Clock } from '@coral/runtime';
import { AdminAuthError } from '../errors.js';
import { AdminSessions, SESSION_COOKIE, readCookie } from './session.js';

/** 127.0.0.0/8, ::1, and IPv4-mapped loopback (::ffff:127.x.y.z). */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.toLowerCase();
  if (a === '::1') return true;
  const v4 = a.startsWith('::ffff:') ? a.slice(7) : a;
  return isIP(v4) === 4 && v4.startsWith('127.');
}

/**
 * True when a Host header names an IP address or `localhost` (`127.0.0.1:8092`, `[::1]:8092`,
 * `localhost`), or is absent (HTTP/1.0): names a DNS-rebinding attacker cannot point at loopback.
 */
export function isAddressHost(host: string | undefined): boolean {
  if (host === undefined) return true;
  const h = host.trim().toLowerCase();
  const v6 = /^\[([0-9a-f:.]+)\](?::[0-9]{1,5})?$/.exec(h);
  if (v6) return isIP(v6[1]!) === 6;
  const name = h.replace(/:[0-9]{1,5}$/, '');
  return isIP(name) === 4 || name === 'localhost' || name.endsWith('.localhost');
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/** How a request was let in. */
export type AccessGrant = 'loopback' | 'bearer' | 'session';

export interface AccessRequest {
  method: string;
  remoteAddress: string | undefined;
  headers: Record<string, string | string[] | undefined>;
}

function header(req: AccessRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD']);

export class AdminAccess {
  readonly #token: string | undefined;
  /** Browser sessions; undefined when no token is configured (loopback only). */
  readonly sessions: AdminSessions | undefined;
  /** Name of the session cookie (the admin API adds its port once it listens). */
  cookieName: string;

  constructor(
    components: { clock?: Clock } = {},
    options: { token?: string; cookieName?: string; sessionTtlSeconds?: number } = {},
  ) {
    this.#token = options.token;
    this.cookieName = options.cookieName ?? SESSION_COOKIE;
    this.sessions =
      options.token === undefined
        ? undefined
        : new AdminSessions(
            { clock: components.clock ?? systemClock },
            {
              token: options.token,
              ...(options.sessionTtlSeconds ? { ttlSeconds: options.sessionTtlSeconds } : {}),
            },
          );
  }

  /** True when `candidate` is the configured token (constant time in its content). */
  tokenMatches(candidate: string): boolean {
    // Compare digests, so the comparison takes the same time whatever the lengths.
    return this.#token !== undefined && timingSafeEqual(digest(candidate), digest(this.#token));
  }

  /** Throws {@link AdminAuthError} (401 or 403) unless the request may proceed; says how it may. */
  authorize(req: AccessRequest): AccessGrant {
    const auth = header(req, 'authorization');
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(auth ?? '')?.[1];
    if (bearer !== undefined && this.tokenMatches(bearer)) return 'bearer';
    const loopback = isLoopback(req.remoteAddress);
    const host = header(req, 'host');
    if (loopback && isAddressHost(host)) return 'loopback';
    const rebinding =
      `Host ${JSON.stringify(host)} is a name: loopback clients are served when they address ` +
      'the node by IP address or localhost (a defence against DNS rebinding)';
    if (this.#token === undefined) {
      throw new AdminAuthError(
        loopback
          ? rebinding
          : 'the admin API only answers loopback clients unless admin.token is configured',
        403,
      );
    }
    if (this.sessions!.verify(readCookie(header(req, 'cookie'), this.cookieName))) {
      if (SAFE_METHODS.has(req.method)) return 'session';
      throw new AdminAuthError(
        `the session cookie authenticates reads only: send Authorization: Bearer <token> with ${req.method}`,
        401,
      );
    }
    if (bearer !== undefined || auth !== undefined) {
      throw new AdminAuthError('wrong bearer token', 401);
    }
    throw new AdminAuthError(
      loopback
        ? `${rebinding}, or with the bearer token`
        : 'a bearer token is required from this address',
      401,
    );
  }

  /**
   * Throws 403 when a browser reports that another site's page sent this mutating request
   * (`Sec-Fetch-Site: cross-site | same-site`, or an `Origin` other than the Host asked for).
   */
  checkSameOrigin(req: AccessRequest): void {
    if (SAFE_METHODS.has(req.method)) return;
    const site = header(req, 'sec-fetch-site')?.toLowerCase();
    if (site === 'cross-site' || site === 'same-site') {
      throw new AdminAuthError(
        `${req.method} from another site's page (Sec-Fetch-Site: ${site})`,
        403,
      );
    }
    const origin = header(req, 'origin');
    if (origin === undefined) return;
    let originHost: string | undefined;
    try {
      originHost = origin === 'null' ? undefined : new URL(origin).host;
    } catch {
      originHost = undefined;
    }
    const host = header(req, 'host')?.trim().toLowerCase();
    if (originHost === undefined || host === undefined || originHost.toLowerCase() !== host) {
      throw new AdminAuthError(`${req.method} from another origin (Origin: ${origin})`, 403);
    }
  }
}

/**
 * The bearer/loopback rule for one request with no Host, cookie or method to weigh (kept for
 * callers that only have these three). Throws {@link AdminAuthError} (401 or 403).
 */
export function checkAccess(
  remoteAddress: string | undefined,
  authorization: string | undefined,
  token: string | undefined,
): void {
  new AdminAccess({}, token === undefined ? {} : { token }).authorize({
    method: 'GET',
    remoteAddress,
    headers: { authorization },
  });
}
