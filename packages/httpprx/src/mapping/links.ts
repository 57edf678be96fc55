/**
 * Staying on the CDN (pure functions): what the proxy does to an origin's response fields that
 * name URLs or scope state, so that a client that starts on a Coralized URL stays on the CDN and
 * one site's answer never acts on the whole zone.
 *
 * - `Location` and `Content-Location` (RFC 9110 §10.2.2, §8.7): an absolute http(s) URL of a
 *   Coralizable origin becomes its Coralized URL (./coral-name.ts, `@coral/names`):
 *   - `https://…` → the one-label https name, when the proxy has a TLS listener; without one it is
 *     left alone (the client leaves the CDN for the origin over https rather than being
 *     downgraded to http);
 *   - `http://…` → the one-label name over https (`---h` tag) for a client that came over TLS
 *     (the legacy name when the host has no one-label name); the legacy http name for a client
 *     on plain http (CoralCDN's form).
 *   Relative references and URLs with no Coralized form are left alone.
 * - Fields whose meaning is bound to the origin's own endpoints or keys are never stored or passed
 *   on for Coralized names (`ORIGIN_BOUND_FIELDS`, dropped from a response and from a 304's fields
 *   before they are merged, ../fetch/response.ts `dropUnkept`): `Alt-Svc` (RFC 7838: it would
 *   send the client to the origin's alternative services under the Coralized name),
 *   `Public-Key-Pins[-Report-Only]` (RFC 7469: pins of the origin's keys on a name served with
 *   ours) and `Expect-CT`.
 * - `Set-Cookie` (RFC 6265): never reaches a client on a Coralized name (Coral's rule: cookies are
 *   neither forwarded to origins nor cached). In site mode a cookie is passed only when its
 *   `Domain` attribute is absent or domain-matches the site's host and is neither a Coral zone nor
 *   a parent of one (`cookieForClient`), so a site inside the zone cannot set a cookie for every
 *   Coralized site.
 */
import { coralizeUrl } from '@coral/names';
import type { HeaderRecord } from '../cache/policy.js';

/** What a link is rewritten for: the request's zone and how the client reached the proxy. */
export interface LinkContext {
  mode: 'coral' | 'site';
  /** The Coral zone of the request's Host (Coralized names). */
  zone?: string | undefined;
  /** The client came over TLS. */
  tls: boolean;
  /** The port the client named in Host, if any. */
  clientPort?: number | undefined;
  /** The proxy's public TLS port when it has a TLS listener; undefined when TLS is off. */
  tlsPort?: number | undefined;
  /** The proxy's plain-http port. */
  httpPort: number;
}

/** Response fields dropped on Coralized names (see the module comment). */
export const ORIGIN_BOUND_FIELDS: readonly string[] = [
  'alt-svc',
  'public-key-pins',
  'public-key-pins-report-only',
  'expect-ct',
];

/** The Coralized form of an absolute link for this client, or undefined to leave it alone. */
export function coralLink(link: string, ctx: LinkContext): string | undefined {
  if (ctx.mode !== 'coral' || ctx.zone === undefined) return undefined;
  const scheme = /^(https?):\/\//i.exec(link)?.[1]?.toLowerCase();
  if (scheme === undefined) return undefined;
  try {
    if (scheme === 'https') {
      if (ctx.tlsPort === undefined) return undefined;
      const port = ctx.tls ? (ctx.clientPort ?? 443) : ctx.tlsPort;
      return coralizeUrl(link, ctx.zone, { tlsPort: port });
    }
    if (ctx.tls) {
      return coralizeUrl(link, ctx.zone, {
        form: 'one-label',
        fallback: 'legacy',
        tlsPort: ctx.clientPort ?? 443,
        httpPort: ctx.httpPort,
      });
    }
    return coralizeUrl(link, ctx.zone, { httpPort: ctx.clientPort ?? 80 });
  } catch {
    return undefined; // no Coralized form (IPv6 literal, too long, inside the zone...)
  }
}

/**
 * Rewrite `Location` / `Content-Location` in place. (The origin-bound fields are not here: they
 * never reach a stored or in-flight head.)
 */
export function rewriteLinks(ctx: LinkContext, h: HeaderRecord): void {
  if (ctx.mode !== 'coral') return;
  for (const f of ['location', 'content-location']) {
    const v = h[f];
    if (v === undefined) continue;
    const c = coralLink(v, ctx);
    if (c !== undefined) h[f] = c;
  }
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * The https URL an http origin's redirect upgrades the same URL to (same host, path and query;
 * the port may change with the scheme), or undefined when `status`/`location` is anything else.
 */
export function sameUrlUpgrade(
  url: string,
  status: number,
  location: string | undefined,
): string | undefined {
  if (!REDIRECTS.has(status) || location === undefined) return undefined;
  let from: URL;
  let to: URL;
  try {
    from = new URL(url);
    to = new URL(location, url);
  } catch {
    return undefined;
  }
  if (from.protocol !== 'http:' || to.protocol !== 'https:') return undefined;
  if (to.username !== '' || to.password !== '') return undefined;
  if (to.hostname !== from.hostname) return undefined;
  if (to.pathname !== from.pathname || to.search !== from.search) return undefined;
  to.hash = '';
  return to.href;
}

function domainMatches(host: string, domain: string): boolean {
  return host === domain || host.endsWith('.' + domain);
}

/**
 * A `Set-Cookie` value as the client may get it in site mode, or undefined to drop it: a `Domain`
 * attribute (RFC 6265 §5.2.3: the last one counts, a leading dot ignored) must domain-match
 * `host` (§5.1.3, as the user agent would require, §5.3 step 6) and must not be a Coral zone or a
 * parent of one, where it would reach every Coralized site.
 */
export function cookieForClient(
  setCookie: string,
  host: string,
  zones: readonly string[],
): string | undefined {
  let domain: string | undefined;
  for (const part of setCookie.split(';').slice(1)) {
    const eq = part.indexOf('=');
    const name = (eq < 0 ? part : part.slice(0, eq)).trim().toLowerCase();
    if (name !== 'domain') continue;
    let v = (eq < 0 ? '' : part.slice(eq + 1)).trim().toLowerCase();
    if (v.startsWith('.')) v = v.slice(1);
    if (v.endsWith('.')) v = v.slice(0, -1);
    if (v !== '') domain = v;
  }
  if (domain === undefined) return setCookie; // host-only cookie: this site alone
  const h = host.toLowerCase();
  if (!domainMatches(h, domain)) return undefined;
  for (const z0 of zones) {
    const z = z0.toLowerCase().replace(/^\.|\.$/g, '');
    if (domainMatches(z, domain)) return undefined; // the zone itself or a parent of it
  }
  return setCookie;
}

/** Every `Set-Cookie` of an upstream response that may reach a site-mode client. */
export function cookiesForClient(
  raw: string | string[] | undefined,
  host: string,
  zones: readonly string[],
): string[] | undefined {
  if (raw === undefined) return undefined;
  const out: string[] = [];
  for (const c of Array.isArray(raw) ? raw : [raw]) {
    const ok = cookieForClient(c, host, zones);
    if (ok !== undefined) out.push(ok);
  }
  return out;
}
