/**
 * Coralized names — a pure codec between origin URLs and names inside a Coral zone.
 *
 *   http://www.example.com/a.jpg        ⇄  http://www.example.com.nyud.net/a.jpg
 *   http://www.example.com:8080/a.jpg   ⇄  http://www.example.com.8080.nyud.net/a.jpg
 *
 * A numeric label right before the zone is the origin port (top-level domains are never
 * all-numeric, so this is unambiguous), except that a name whose labels form exactly an IPv4
 * address keeps them as the address: `10.1.2.3.nyud.net` is port 80 of 10.1.2.3, and
 * `10.1.2.3.8080.nyud.net` port 8080.
 */
import { createHash } from 'node:crypto';
import { ProxyError } from '../errors.js';
import { splitHostHeader } from '../request/host.js';
import { canonicalPath, upstreamUrl } from '../request/target.js';

export { splitHostHeader };

export interface CoralTarget {
  /** Origin host name (lowercase, no trailing dot). */
  originHost: string;
  /** Origin TCP port. */
  originPort: number;
  /** The zone the name was found in. */
  zone: string;
}

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;
const NUMERIC = /^[0-9]{1,5}$/;

function normalizeZone(zone: string): string {
  let z = zone.trim().toLowerCase();
  if (z.startsWith('.')) z = z.slice(1);
  if (z.endsWith('.')) z = z.slice(0, -1);
  return z;
}

function isPort(label: string): boolean {
  if (!NUMERIC.test(label)) return false;
  const n = Number(label);
  return n >= 1 && n <= 65535 && String(n) === label;
}

function isIPv4Labels(labels: readonly string[]): boolean {
  return (
    labels.length === 4 &&
    labels.every((l) => /^[0-9]{1,3}$/.test(l) && Number(l) <= 255 && String(Number(l)) === l)
  );
}

/**
 * Map a Host header to its origin. Returns `undefined` when the name is not inside any zone;
 * throws `CORAL_BAD_HOST` when it is inside a zone but malformed (bad label, bad port, empty).
 */
export function parseCoralHost(host: string, zones: readonly string[]): CoralTarget | undefined {
  const { name } = splitHostHeader(host);
  let zone: string | undefined;
  for (const z of zones) {
    const nz = normalizeZone(z);
    if (name.endsWith('.' + nz) && (zone === undefined || nz.length > zone.length)) zone = nz;
  }
  if (zone === undefined) return undefined;
  const labels = name.slice(0, name.length - zone.length - 1).split('.');
  for (const l of labels) {
    if (!LABEL.test(l)) {
      throw new ProxyError('CORAL_BAD_HOST', `malformed label ${JSON.stringify(l)} in ${name}`);
    }
  }
  let port = 80;
  let hostLabels = labels;
  if (!isIPv4Labels(labels) && labels.length > 1 && NUMERIC.test(labels[labels.length - 1]!)) {
    const last = labels[labels.length - 1]!;
    if (!isPort(last)) throw new ProxyError('CORAL_BAD_HOST', `bad port label ${last} in ${name}`);
    port = Number(last);
    hostLabels = labels.slice(0, -1);
  } else if (labels.length === 1 && NUMERIC.test(labels[0]!)) {
    throw new ProxyError('CORAL_BAD_HOST', `no origin host in ${name}`);
  }
  return { originHost: hostLabels.join('.'), originPort: port, zone };
}

/**
 * Normalize an absolute http URL for keying: lowercase scheme and host, default port dropped,
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

/** The index key of a URL: SHA-1 of `"url:" + normalizeUrl(url)` (20 bytes). */
export function urlKey(url: string): Uint8Array {
  return new Uint8Array(
    createHash('sha1')
      .update('url:' + normalizeUrl(url))
      .digest(),
  );
}

/**
 * The Coralized form of an http URL: `http://www.example.com:8080/x` → `http://www.example.com.8080.nyud.net/x`.
 * `proxyPort`, when given, is appended as the port clients use to reach the proxy (e.g. 8090).
 */
export function coralize(url: string, zone: string, proxyPort?: number): string {
  const u = new URL(normalizeUrl(url));
  if (u.protocol !== 'http:') {
    throw new ProxyError('CORAL_BAD_URL', `only http URLs can be coralized: ${url}`);
  }
  if (u.username || u.password) {
    throw new ProxyError('CORAL_BAD_URL', `URLs with credentials cannot be coralized: ${url}`);
  }
  const host = u.hostname;
  if (host.startsWith('['))
    throw new ProxyError('CORAL_BAD_URL', `IPv6 origins cannot be coralized: ${url}`);
  const port = u.port === '' ? '' : `.${u.port}`;
  const suffix = proxyPort === undefined || proxyPort === 80 ? '' : `:${proxyPort}`;
  return `http://${host}${port}.${normalizeZone(zone)}${suffix}${u.pathname}${u.search}`;
}

/**
 * The origin URL a request to a Coralized name stands for. `pathAndQuery` stays a path on the
 * origin: a path that could name another authority (`//h/x`, `/\h/x`) or climbs above the root
 * throws `CORAL_BAD_TARGET` (see request/target.ts).
 */
export function originUrl(target: CoralTarget, pathAndQuery: string): string {
  const path = pathAndQuery.startsWith('/') ? pathAndQuery : '/' + pathAndQuery;
  return upstreamUrl(
    { protocol: 'http:', hostname: target.originHost, port: target.originPort },
    canonicalPath(path),
  );
}
