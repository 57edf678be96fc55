/**
 * Request targets (RFC 9112 §3.2) as pure functions: what a client may ask this proxy for.
 *
 * The proxy fetches from exactly one authority per request: the site's origin (site mode) or the
 * origin a Coralized Host names. The request target only ever contributes a path and a query on
 * that authority. It is never resolved as a URL reference against a base (`new URL(path, base)`
 * turns `//evil/x` and `/\evil/x` into another host); the upstream URL is built from the origin's
 * scheme, host and port and a validated, canonical path, and checked once more after parsing.
 *
 * Refused with 400 `CORAL_BAD_TARGET`:
 * - anything but origin-form (`/p?q`) and absolute-form (`http://host/p?q`): `*`, authority-form,
 *   relative references;
 * - an absolute-form target whose scheme or authority differs from the request's (Host), or that
 *   carries userinfo;
 * - a fragment, a backslash, a control character, space or non-ASCII byte;
 * - dot segments (`.`, `..`, and their `%2e` spellings, which WHATWG URL parsers also remove) that
 *   climb above the root;
 * - a canonical path whose first segment is empty or starts with an encoded slash or backslash
 *   (`//h/x`, `/%2F%2Fh/x`, `/%5Ch/x`): URL parsers and origins read such a path as an authority.
 */
import { ProxyError } from '../errors.js';
import { splitHostHeader } from './host.js';

/** An authority as the request names it: lowercase host name, and the port when one was given. */
export interface Authority {
  name: string;
  port?: number;
}

/** The origin a request is fetched from: `http:` or `https:`, host name (or IP) and port. */
export interface OriginBase {
  protocol: 'http:' | 'https:';
  hostname: string;
  port: number;
}

const DEFAULT_PORT = { 'http:': 80, 'https:': 443 } as const;

function bad(message: string): ProxyError {
  return new ProxyError('CORAL_BAD_TARGET', message);
}

const ABSOLUTE = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)(.*)$/s;

/**
 * The canonical path and query a request target stands for, on the authority `host` (from the
 * Host header) over `protocol` (the connection's). Throws `CORAL_BAD_TARGET` (see the module
 * comment for what is refused).
 */
export function requestTarget(
  raw: string | undefined,
  host: Authority,
  protocol: 'http:' | 'https:' = 'http:',
): string {
  if (raw === undefined || raw.length === 0) throw bad('empty request target');
  if (raw.charCodeAt(0) === 0x2f /* / */) return canonicalPath(raw);
  const m = ABSOLUTE.exec(raw);
  if (!m) {
    throw bad(`request target must be a path or an absolute URL: ${JSON.stringify(raw)}`);
  }
  const authority = absoluteAuthority(m[1]!, m[2]!, protocol);
  if (!sameAuthority(authority, host, protocol)) {
    throw bad(
      `absolute-form target names ${JSON.stringify(m[2])}, not the Host ${formatAuthority(host)}`,
    );
  }
  const rest = m[3]!;
  return canonicalPath(rest === '' ? '/' : rest.startsWith('?') ? '/' + rest : rest);
}

/** The authority of an absolute-form target, checked against the connection's scheme. */
export function absoluteAuthority(
  scheme: string,
  authority: string,
  protocol: 'http:' | 'https:',
): Authority {
  if (`${scheme.toLowerCase()}:` !== protocol) {
    throw bad(`absolute-form target with scheme ${JSON.stringify(scheme)} on a ${protocol} port`);
  }
  if (authority.includes('@')) throw bad('absolute-form target with userinfo');
  try {
    return splitHostHeader(authority);
  } catch {
    throw bad(`malformed authority in absolute-form target: ${JSON.stringify(authority)}`);
  }
}

/** Do two authorities name the same host and (effective) port? */
export function sameAuthority(a: Authority, b: Authority, protocol: 'http:' | 'https:'): boolean {
  const dp = DEFAULT_PORT[protocol];
  return a.name === b.name && (a.port ?? dp) === (b.port ?? dp);
}

function formatAuthority(a: Authority): string {
  return a.port === undefined ? a.name : `${a.name}:${a.port}`;
}

const DOT = /^(?:\.|%2e)$/i;
const DOT_DOT = /^(?:\.|%2e){2}$/i;
/** A first segment that an URL parser or origin may read as the start of an authority. */
const AUTHORITY_LIKE = /^\/(?:\/|%2f|%5c)/i;

/**
 * Check an origin-form target (`/path?query`) and remove its dot segments (RFC 3986 §5.2.4, with
 * `%2e` read as `.` as WHATWG URL does), refusing one that climbs above the root. The query is
 * kept byte for byte.
 */
export function canonicalPath(target: string): string {
  if (target.charCodeAt(0) !== 0x2f) throw bad('request path must start with "/"');
  for (let i = 0; i < target.length; i++) {
    const c = target.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f || c === 0x5c /* \ */ || c === 0x23 /* # */) {
      throw bad(`invalid character ${JSON.stringify(target[i])} in request target`);
    }
  }
  const q = target.indexOf('?');
  let path = q < 0 ? target : target.slice(0, q);
  const query = q < 0 ? '' : target.slice(q);
  if (path.includes('.') || path.includes('%')) {
    const out: string[] = [];
    const segs = path.slice(1).split('/');
    for (let i = 0; i < segs.length; i++) {
      const seg = segs[i]!;
      const last = i === segs.length - 1;
      if (DOT.test(seg)) {
        if (last) out.push('');
      } else if (DOT_DOT.test(seg)) {
        if (out.length === 0) throw bad('dot segments above the root in request path');
        out.pop();
        if (last) out.push('');
      } else {
        out.push(seg);
      }
    }
    path = '/' + out.join('/');
  }
  if (AUTHORITY_LIKE.test(path)) {
    throw bad(`request path ${JSON.stringify(path)} reads as another authority`);
  }
  return path + query;
}

/**
 * The absolute URL of `pathAndQuery` (a result of {@link requestTarget}) on `origin`, built by
 * concatenation and parsed back to make sure the authority did not change.
 */
export function upstreamUrl(origin: OriginBase, pathAndQuery: string): string {
  const host = origin.hostname.includes(':') ? `[${origin.hostname}]` : origin.hostname;
  const port = origin.port === DEFAULT_PORT[origin.protocol] ? '' : `:${origin.port}`;
  const base = `${origin.protocol}//${host}${port}`;
  let u: URL;
  try {
    u = new URL(base + pathAndQuery);
  } catch {
    throw bad(`cannot build a URL from ${JSON.stringify(pathAndQuery)}`);
  }
  if (u.origin !== new URL(base).origin || u.username !== '' || u.password !== '') {
    throw bad(`request path ${JSON.stringify(pathAndQuery)} changes the authority`);
  }
  u.hash = '';
  return u.href;
}

/** The origin base of a site-mode origin URL (its path, if any, is not used). */
export function originBase(url: URL): OriginBase {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ProxyError('CORAL_BAD_URL', `site origin must be http or https: ${url.href}`);
  }
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const port = url.port === '' ? DEFAULT_PORT[url.protocol] : Number(url.port);
  return { protocol: url.protocol, hostname, port };
}
