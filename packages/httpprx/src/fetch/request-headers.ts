/**
 * The request fields a node sends upstream (origins and peers): an allow-list, never a deny-list,
 * because a cache keys a response on its URL and the fields its `Vary` names only (RFC 9111 §4.1).
 * A request field that changes the origin's answer without the origin saying so in `Vary` lets the
 * first client choose what every later client gets — web cache poisoning (`X-Forwarded-Host:
 * evil.example` to a framework that builds its links from it). So:
 *
 * - Cacheable requests (GET and HEAD, both modes) carry only the fields of `FORWARDED_FIELDS`:
 *   the proactive-negotiation fields RFC 9110 §12.5.1 names (Accept, Accept-Charset,
 *   Accept-Encoding, Accept-Language, User-Agent) — an origin whose answer depends on them must
 *   list them in `Vary` (§12.5.5), and `Vary` is part of this cache's key, so an attacker's value
 *   only ever fills the attacker's own variant; the request's cache directives (Cache-Control,
 *   Pragma: RFC 9111 §5.2 says a proxy MUST pass them on); Authorization (such responses are not
 *   shared unless the response says they may be, §3.5); Origin (CORS: a response that names one
 *   origin in Access-Control-Allow-Origin without `Vary: Origin` is served to that client only,
 *   ../fetch/response.ts); and Cookie in site mode only (the operator's own site; a response
 *   setting a cookie is not stored). Conditionals and Range are the cache's own (it validates
 *   and slices what it stores); Referer, client hints, `X-*` and everything else stay here.
 * - Site mode's other methods (never cached, ../site/site.ts) carry every end-to-end field (an
 *   application's form posts need their Content-Type, CSRF tokens, ...) except the forwarding and
 *   override family below, which no client may set on any request.
 * - The forwarding family (`FORWARDING_FIELDS`: `X-Forwarded-*`, `Forwarded`, `X-Real-IP`,
 *   `X-Original-URL`, `X-HTTP-Method-Override`, ...) is never copied from a client. The node sets
 *   `X-Forwarded-For` / `Forwarded: for=` to the client's address (a verified member's ask
 *   extends the chain its asker set), and `X-Forwarded-Host`, `X-Forwarded-Proto` and the
 *   `host=`/`proto=` of `Forwarded` to the object's canonical public URL on the CDN — a function
 *   of the cache key and the node's configuration, not of the request: the Host the client typed
 *   (any port, any of several zones, legacy or one-label form) and the scheme it came over would
 *   each make the origin build different links into one shared object.
 */
import type { HeaderRecord } from '../cache/policy.js';
import { coralize } from '../mapping/coral-name.js';
import { splitHostHeader } from '../mapping/host.js';
import type { ProxyCore, RequestCtx } from '../kit/core.js';
import { NOT_FORWARDED_COMMON, appendVia } from '../kit/headers.js';

/** The request fields a cacheable request (GET, HEAD) carries upstream, in both modes. */
export const FORWARDED_FIELDS: ReadonlySet<string> = new Set([
  'accept',
  'accept-charset',
  'accept-encoding',
  'accept-language',
  'user-agent',
  'cache-control',
  'pragma',
  'authorization',
  'origin',
]);

/** Site mode adds the client's cookies (Coralized names never forward them). */
const SITE_FORWARDED_FIELDS: ReadonlySet<string> = new Set([...FORWARDED_FIELDS, 'cookie']);

/**
 * Fields that say who the client is, which host or scheme it asked for, or which URL or method
 * it "really" meant: never taken from a client, on any request. The node sets the first four
 * itself (`forwardingFields`).
 */
export const FORWARDING_FIELDS: ReadonlySet<string> = new Set([
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-forwarded-port',
  'x-forwarded-scheme',
  'x-forwarded-server',
  'x-forwarded-prefix',
  'x-forwarded-ssl',
  'x-forwarded-uri',
  'x-forwarded-path',
  'x-forwarded-protocol',
  'x-url-scheme',
  'front-end-https',
  'x-real-ip',
  'x-client-ip',
  'client-ip',
  'true-client-ip',
  'x-cluster-client-ip',
  'cf-connecting-ip',
  'fastly-client-ip',
  'x-originating-ip',
  'x-remote-ip',
  'x-remote-addr',
  'x-host',
  'x-original-host',
  'x-original-url',
  'x-rewrite-url',
  'x-original-uri',
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
]);

/** The address as `X-Forwarded-For` writes it (an IPv4-mapped IPv6 address as IPv4). */
function clientAddress(ctx: RequestCtx): string {
  const a = ctx.req.socket.remoteAddress ?? '';
  return a.startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a;
}

/** A `Forwarded` node (RFC 7239 §6): IPv6 in quoted brackets. */
function forwardedNode(ip: string): string {
  return ip.includes(':') ? `"[${ip}]"` : ip;
}

/**
 * The object's canonical public authority and scheme on the CDN: the Coralized name of its origin
 * URL in this node's first zone (site mode: the site's name), on the port clients use for that
 * scheme. Undefined when the URL has no Coralized form.
 */
export function publicAuthority(
  core: ProxyCore,
  ctx: RequestCtx,
): { host: string; proto: 'http' | 'https' } | undefined {
  const tlsPort = core.links.tlsPort;
  let name: string;
  let proto: 'http' | 'https';
  if (ctx.mode === 'site') {
    name = splitHostHeader(ctx.host).name;
    proto = tlsPort !== undefined ? 'https' : 'http';
  } else {
    const zone = core.zones[0];
    if (zone === undefined) return undefined;
    try {
      name = new URL(coralize(ctx.url, zone)).hostname;
    } catch {
      return undefined;
    }
    // An https origin's one-label name is served over TLS when the node has a TLS listener.
    proto = ctx.url.startsWith('https:') && tlsPort !== undefined ? 'https' : 'http';
  }
  const port = proto === 'https' ? tlsPort : core.self.httpPort;
  const dflt = proto === 'https' ? 443 : 80;
  return { host: port === undefined || port === dflt ? name : `${name}:${port}`, proto };
}

/**
 * The forwarding fields the node sets: the client's address (a verified member's ask — signed,
 * keyed mode — keeps the chain its asker set and adds the asker), the canonical host and scheme.
 */
export function forwardingFields(core: ProxyCore, ctx: RequestCtx): Record<string, string> {
  const ip = clientAddress(ctx);
  const trustedChain = ctx.peer && core.peerAuth !== undefined;
  const pub = publicAuthority(core, ctx);
  const out: Record<string, string> = {};
  const xff = trustedChain ? ctx.reqHeaders['x-forwarded-for'] : undefined;
  out['x-forwarded-for'] = xff ? `${xff}, ${ip}` : ip;
  let element = `for=${forwardedNode(ip)}`;
  if (pub) {
    out['x-forwarded-host'] = pub.host;
    out['x-forwarded-proto'] = pub.proto;
    element += `;host="${pub.host}";proto=${pub.proto}`;
  }
  const fwd = trustedChain ? ctx.reqHeaders['forwarded'] : undefined;
  out['forwarded'] = fwd ? `${fwd}, ${element}` : element;
  return out;
}

/**
 * The request fields sent upstream for `ctx`: the allow-list (GET, HEAD) or the end-to-end fields
 * less the forwarding family (site mode's other methods), then the node's own forwarding fields
 * and Via.
 */
export function forwardHeaders(core: ProxyCore, ctx: RequestCtx): Record<string, string> {
  const out: Record<string, string> = {};
  const cacheable = ctx.method === 'GET' || ctx.method === 'HEAD';
  const allowed = ctx.mode === 'site' ? SITE_FORWARDED_FIELDS : FORWARDED_FIELDS;
  const h: HeaderRecord = ctx.reqHeaders;
  for (const [k, v] of Object.entries(h)) {
    const keep = cacheable
      ? allowed.has(k)
      : !FORWARDING_FIELDS.has(k) && !NOT_FORWARDED_COMMON.has(k);
    if (keep) out[k] = v;
  }
  Object.assign(out, forwardingFields(core, ctx));
  out['via'] = appendVia(h['via'], core.via);
  return out;
}
