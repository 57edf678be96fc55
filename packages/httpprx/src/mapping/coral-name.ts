/**
 * The proxy's side of Coralized names. The codec itself is `@coral/names` (shared with the DNS
 * server and `coral-node coralize`); this module adapts it to the request path:
 *
 *   www-example-com.nyud.net          → https://www.example.com      (one-label)
 *   www-example-com---8443.nyud.net   → https://www.example.com:8443
 *   www-example-com---h.nyud.net      → http://www.example.com
 *   www.example.com.8080.nyud.net     → http://www.example.com:8080  (legacy)
 *
 * and owns what the codec does not: the cache and index key of an origin URL (`urlKey`), whose
 * scheme is part of it, so `http://` and `https://` of one host are different objects.
 */
import { createHash } from 'node:crypto';
import { coralizeUrl, isNamesError, parseCoralName } from '@coral/names';
import type { Form, Scheme } from '@coral/names';
import { ProxyError } from '../errors.js';
import { splitHostHeader } from './host.js';
import { canonicalPath, upstreamUrl } from './target.js';

export { splitHostHeader };

export interface CoralTarget {
  /** Origin scheme: one-label names say it; legacy names are always http. */
  scheme: Scheme;
  /** Origin host name (canonical: lowercase, A-labels, no trailing dot). */
  originHost: string;
  /** Origin TCP port. */
  originPort: number;
  /** The zone the name was found in. */
  zone: string;
  /** Which spelling named it. */
  form: Form;
}

/**
 * Map a Host header to its origin. Returns `undefined` when the name is not a Coralized origin
 * name (outside every zone, the zone apex, `_acme-challenge`); throws `CORAL_BAD_HOST` when it is
 * inside a zone but names no origin (the `@coral/names` code and reason are in the message).
 */
export function parseCoralHost(host: string, zones: readonly string[]): CoralTarget | undefined {
  const { name } = splitHostHeader(host);
  const r = parseCoralName(name, zones);
  switch (r.kind) {
    case 'origin':
      return {
        scheme: r.scheme,
        originHost: r.host,
        originPort: r.port,
        zone: r.zone,
        form: r.form,
      };
    case 'invalid':
      throw new ProxyError('CORAL_BAD_HOST', `${name} names no origin: ${r.code}: ${r.reason}`);
    default:
      return undefined;
  }
}

/**
 * Normalize an absolute http(s) URL for keying: lowercase scheme and host, default port dropped,
 * empty path as `/`, fragment removed. Throws `CORAL_BAD_URL` for anything but http(s).
 */
export function normalizeUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new ProxyError('CORAL_BAD_URL', `not a URL: ${JSON.stringify(url)}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new ProxyError('CORAL_BAD_URL', `not an http URL: ${JSON.stringify(url)}`);
  }
  u.hash = '';
  return u.href;
}

/**
 * The index and cache key of a URL: SHA-1 of `"url:" + normalizeUrl(url)` (20 bytes). The scheme
 * is part of the URL, so `http://a.com/x` and `https://a.com/x` never share a key.
 */
export function urlKey(url: string): Uint8Array {
  return new Uint8Array(
    createHash('sha1')
      .update('url:' + normalizeUrl(url))
      .digest(),
  );
}

/**
 * The Coralized form of an http(s) URL (`@coral/names` `coralizeUrl`): an http URL gets the
 * legacy name (`http://www.example.com.8080.nyud.net/x`), an https URL the one-label name served
 * over TLS (`https://www-example-com.nyud.net/x`). `proxyPort`, when given, is the port clients
 * use to reach the proxy for that scheme (80 / 443 are left out; default: none written).
 * Throws `CORAL_BAD_URL` with the names code for URLs that have no Coralized form.
 */
export function coralize(url: string, zone: string, proxyPort?: number): string {
  try {
    return coralizeUrl(url, zone, { httpPort: proxyPort ?? 80, tlsPort: proxyPort ?? 443 });
  } catch (e) {
    if (isNamesError(e)) {
      throw new ProxyError('CORAL_BAD_URL', `${url} cannot be Coralized: ${e.code}: ${e.message}`);
    }
    throw e;
  }
}

/**
 * The origin URL a request to a Coralized name stands for. `pathAndQuery` stays a path on the
 * origin: a path that could name another authority (`//h/x`, `/\h/x`) or climbs above the root
 * throws `CORAL_BAD_TARGET` (see ./target.ts).
 */
export function originUrl(target: CoralTarget, pathAndQuery: string): string {
  const path = pathAndQuery.startsWith('/') ? pathAndQuery : '/' + pathAndQuery;
  return upstreamUrl(
    { protocol: `${target.scheme}:`, hostname: target.originHost, port: target.originPort },
    canonicalPath(path),
  );
}
