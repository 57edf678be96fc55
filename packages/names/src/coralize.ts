/** Origin → Coralized name and URL. Pure; throws `NamesError` with a stable code. */
import {
  DEFAULT_PORTS,
  DEFAULT_PROXY_HTTP_PORT,
  DEFAULT_PROXY_TLS_PORT,
  MAX_NAME_OCTETS,
} from './constants.js';
import { NamesError, type NamesErrorCode } from './errors.js';
import { encodeLegacy } from './forms/legacy.js';
import { encodeOneLabel } from './forms/one-label.js';
import { checkHost, isInZone } from './host.js';
import { hostToUnicode } from './idna.js';
import type { Checked, Form, Origin } from './types.js';
import { fail, ok } from './types.js';
import { normalizeZone } from './zone.js';

export interface CoralizeHostOptions {
  /** Which spelling: `'one-label'` (default; any scheme) or `'legacy'` (http origins only). */
  form?: Form;
}

/** Check an origin and return it canonical (host canonical, port checked). */
function checkOrigin(origin: Origin): Checked<Origin> {
  if (origin.scheme !== 'http' && origin.scheme !== 'https') {
    return fail(
      'NAMES_ERR_BAD_SCHEME',
      `scheme ${JSON.stringify(origin.scheme)} is not http or https`,
    );
  }
  if (!Number.isInteger(origin.port) || origin.port < 1 || origin.port > 65535) {
    return fail('NAMES_ERR_BAD_PORT', `port ${String(origin.port)} is not 1 to 65535`);
  }
  const host = checkHost(origin.host);
  if (!host.ok) return host;
  return ok({ scheme: origin.scheme, host: host.value, port: origin.port });
}

/** Name in `zone` for a canonical origin, or the reason it has none in that form. */
function nameOf(origin: Origin, zone: string, form: Form): Checked<string> {
  if (isInZone(origin.host, zone)) {
    return fail(
      'NAMES_ERR_ORIGIN_IN_ZONE',
      `origin ${origin.host} is inside the Coral zone ${zone}`,
    );
  }
  const prefix = form === 'legacy' ? encodeLegacy(origin) : encodeOneLabel(origin);
  if (!prefix.ok) return prefix;
  const name = `${prefix.value}.${zone}`;
  if (name.length > MAX_NAME_OCTETS) {
    return fail(
      'NAMES_ERR_NAME_TOO_LONG',
      `${name} is ${name.length} octets, over ${MAX_NAME_OCTETS}`,
    );
  }
  // A browser refuses a whole name that breaks the Bidi rule (e.g. a right-to-left host before
  // a numeric port label, or before a zone label that begins with a digit): never hand one out.
  if (name.includes('xn--') && hostToUnicode(name) === null) {
    return fail(
      'NAMES_ERR_BAD_IDN',
      `${name} would break the IDNA Bidi rule (RFC 5893) as a whole name, so browsers would refuse it`,
    );
  }
  return ok(name);
}

/**
 * The Coralized name of an origin in `zone`:
 *
 *   coralizeHost({ scheme: 'https', host: 'www.example.com', port: 443 }, 'nyud.net')
 *     → 'www-example-com.nyud.net'
 *   coralizeHost({ scheme: 'http', host: 'www.example.com', port: 8080 }, 'nyud.net', { form: 'legacy' })
 *     → 'www.example.com.8080.nyud.net'
 *
 * The host may be given with U-labels or A-labels, in any case, with a trailing dot.
 */
export function coralizeHost(origin: Origin, zone: string, opts: CoralizeHostOptions = {}): string {
  const z = normalizeZone(zone);
  const o = checkOrigin(origin);
  if (!o.ok) throw new NamesError(o.code, o.reason);
  const name = nameOf(o.value, z, opts.form ?? 'one-label');
  if (!name.ok) throw new NamesError(name.code, name.reason);
  return name.value;
}

export interface CoralizeUrlOptions {
  /**
   * Form for http origins: `'legacy'` (default: `http://www.example.com.nyud.net:8090/`) or
   * `'one-label'`. https origins always get the one-label form (`'legacy'` throws).
   */
  form?: Form;
  /** Port of the proxy's plain-http listener in legacy URLs. Default 8090; 80 is left out. */
  httpPort?: number;
  /** Port of the proxy's TLS listener in one-label URLs. Default 8443; 443 is left out. */
  tlsPort?: number;
  /** One-label URLs use https on `tlsPort` (default true); false: http on `httpPort`. */
  tls?: boolean;
  /**
   * When an http origin asked for in the one-label form has none (too long, invalid label):
   * `'legacy'` falls back to the legacy form and says so in `fallback`; `'none'` (default) throws.
   * https origins have no fallback: the legacy form cannot name them.
   */
  fallback?: 'legacy' | 'none';
}

export interface CoralizedUrl {
  /** The Coralized URL. */
  url: string;
  /** Its host name. */
  name: string;
  /** Which form the name is in. */
  form: Form;
  /** The origin it stands for (canonical). */
  origin: Origin;
  /** Set when the one-label form was asked for and the legacy form given instead. */
  fallback?: { code: NamesErrorCode; reason: string };
}

/** Parse an absolute http(s) URL into its canonical origin; throws `NamesError`. */
export function originOfUrl(url: string): { origin: Origin; rest: string } {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new NamesError('NAMES_ERR_BAD_URL', `not an absolute URL: ${JSON.stringify(url)}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new NamesError(
      'NAMES_ERR_BAD_SCHEME',
      `not an http or https URL: ${JSON.stringify(url)}`,
    );
  }
  if (u.username !== '' || u.password !== '') {
    throw new NamesError(
      'NAMES_ERR_BAD_URL',
      `URLs with credentials cannot be Coralized: ${JSON.stringify(url)}`,
    );
  }
  const scheme = u.protocol === 'https:' ? 'https' : 'http';
  const port = u.port === '' ? DEFAULT_PORTS[scheme] : Number(u.port);
  const o = checkOrigin({ scheme, host: u.hostname, port });
  if (!o.ok) throw new NamesError(o.code, `${o.reason} (in ${JSON.stringify(url)})`);
  return { origin: o.value, rest: u.pathname + u.search + u.hash };
}

function checkPort(port: number, what: string): number {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new NamesError('NAMES_ERR_BAD_PORT', `${what} ${String(port)} is not 1 to 65535`);
  }
  return port;
}

/**
 * The Coralized form of an absolute http(s) URL, with what it was made from. Path, query and
 * fragment are kept (a `Location` may carry a fragment, RFC 9110 §10.2.2).
 */
export function coralizeUrlDetailed(
  url: string,
  zone: string,
  opts: CoralizeUrlOptions = {},
): CoralizedUrl {
  const z = normalizeZone(zone);
  const httpPort = checkPort(opts.httpPort ?? DEFAULT_PROXY_HTTP_PORT, 'httpPort');
  const tlsPort = checkPort(opts.tlsPort ?? DEFAULT_PROXY_TLS_PORT, 'tlsPort');
  const { origin, rest } = originOfUrl(url);
  let form: Form = origin.scheme === 'https' ? 'one-label' : (opts.form ?? 'legacy');
  if (origin.scheme === 'https' && opts.form === 'legacy') {
    throw new NamesError(
      'NAMES_ERR_LEGACY_HTTPS',
      `the legacy multi-label form stands for http origins only, not ${url}`,
    );
  }
  let name = nameOf(origin, z, form);
  let fallback: CoralizedUrl['fallback'];
  if (!name.ok && form === 'one-label' && isUnfit(name.code)) {
    if (origin.scheme === 'http' && opts.fallback === 'legacy') {
      fallback = { code: name.code, reason: name.reason };
      form = 'legacy';
      name = nameOf(origin, z, form);
    } else if (origin.scheme === 'https') {
      throw new NamesError(
        name.code,
        `${name.reason}; the legacy multi-label form cannot name an https origin (the http URL of the same host has one, served over http and not covered by the wildcard certificate)`,
      );
    }
  }
  if (!name.ok) throw new NamesError(name.code, name.reason);
  const useTls = form === 'one-label' && opts.tls !== false;
  const scheme = useTls ? 'https' : 'http';
  const port = useTls ? tlsPort : httpPort;
  const authority = port === DEFAULT_PORTS[scheme] ? name.value : `${name.value}:${port}`;
  return {
    url: `${scheme}://${authority}${rest}`,
    name: name.value,
    form,
    origin,
    ...(fallback === undefined ? {} : { fallback }),
  };
}

/** Codes meaning "this origin has no one-label name", where a fallback can help. */
function isUnfit(code: NamesErrorCode): boolean {
  return (
    code === 'NAMES_ERR_LABEL_TOO_LONG' ||
    code === 'NAMES_ERR_LABEL_INVALID' ||
    code === 'NAMES_ERR_NAME_TOO_LONG' ||
    code === 'NAMES_ERR_BAD_IDN'
  );
}

/**
 * The Coralized URL of an absolute http(s) URL:
 *
 *   coralizeUrl('https://www.example.com/a.jpg', 'nyud.net')
 *     → 'https://www-example-com.nyud.net:8443/a.jpg'
 *   coralizeUrl('http://www.example.com:8080/a.jpg', 'nyud.net')
 *     → 'http://www.example.com.8080.nyud.net:8090/a.jpg'
 *   coralizeUrl('http://www.example.com/', 'nyud.net', { form: 'one-label', tlsPort: 443 })
 *     → 'https://www-example-com---h.nyud.net/'
 */
export function coralizeUrl(url: string, zone: string, opts: CoralizeUrlOptions = {}): string {
  return coralizeUrlDetailed(url, zone, opts).url;
}
