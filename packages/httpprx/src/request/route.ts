/**
 * From a parsed request to a routed one (`RequestCtx`), or a refusal — a value either way: route
 * writes nothing to the response and counts nothing; its caller (../proxy/coral-proxy.ts) answers
 * a refusal and starts the 102 beats of a designated ask. In order: the loop guard on Via,
 * admission (one Host, a target that stays on the origin), peer authentication, the origin of the
 * Host (a configured site, else a Coralized name), the origin gate (`RouteConfig.gate`, e.g. the
 * node's blocklist) and the methods allowed on it. A member's ask of the fetcher designated for
 * its URL (../peer/rendezvous.ts) is seen by the cache as a client's request (it may go to the
 * origin) only when it is authenticated (keyed mode) and this node considers itself designated
 * for the URL; otherwise it stays a peer request (cache only).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { DESIGNATED_HEADER, PEER_AUTH_HEADER, PEER_HEADER } from '../constants.js';
import { cacheRequest } from '../cache/decide.js';
import { ProxyError } from '../errors.js';
import { parseCoralHost, urlKey } from '../mapping/coral-name.js';
import { designatedHere } from '../peer/rendezvous.js';
import { normalizeAcceptEncoding } from '../kit/encoding.js';
import type { ProxyCore, RequestCtx } from '../kit/core.js';
import { toRecord } from '../kit/headers.js';
import type { ErrorAnswer } from '../kit/respond.js';
import type { OriginGate } from '../kit/types.js';
import { admit } from './admission.js';
import { upstreamUrl } from '../mapping/target.js';
import type { OriginBase } from '../mapping/target.js';

export interface RouteConfig {
  zones: readonly string[];
  sites: ReadonlyMap<string, OriginBase>;
  /** Asked with the origin of every request mapped (`ProxyComponents.gate`); absent: none. */
  gate?: OriginGate | undefined;
}

/** What route() reads of the proxy: its Via member, peer checks, membership and addresses. */
export type RouteCore = Pick<ProxyCore, 'via' | 'peerAuth' | 'members' | 'self' | 'links'>;

/** route()'s answer: the routed request, or why it is refused. */
export type Routed =
  | {
      kind: 'routed';
      ctx: RequestCtx;
      /**
       * An authenticated member's ask of this node as the URL's designated fetcher: the caller
       * counts it taken and keeps the asker told with 102 beats (../peer/processing.ts).
       */
      designated: boolean;
    }
  | {
      kind: 'refused';
      /** Answered with the error page (../kit/respond.ts `sendError`). */
      error: ErrorAnswer;
      /** Extra fields of the answer (`Connection: close`, `Allow`). */
      headers?: Record<string, string>;
      /** A peer request whose `Coral-Peer-Auth` did not verify: `PeerAuth.verify`'s reason. */
      peerRejected?: string;
    };

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v;
}

/** What a Host and a canonical path stand for: the origin URL, and how it was named. */
export interface MappedTarget {
  mode: 'coral' | 'site';
  url: string;
  /** The Coral zone of a Coralized name. */
  zone?: string;
}

/**
 * The origin URL that Host `host` (authority name `name`, lowercase) and the canonical path and
 * query `path` stand for: a configured site, else a Coralized name. Throws the ProxyError
 * `CORAL_NOT_CORALIZED` (or `CORAL_BAD_TARGET` for a path that would leave the origin).
 */
export function mapTarget(
  config: RouteConfig,
  host: string,
  name: string,
  path: string,
): MappedTarget {
  const site = config.sites.get(name);
  if (site) return { mode: 'site', url: upstreamUrl(site, path) };
  const target = parseCoralHost(host, config.zones);
  if (!target) {
    const zones = config.zones;
    throw new ProxyError(
      'CORAL_NOT_CORALIZED',
      `${name} is not a Coralized name: this proxy serves only *.${zones.join(', *.')}` +
        ` (for example https://www-example-com.${zones[0] ?? 'nyud.net'}/ for https://www.example.com/)`,
    );
  }
  return {
    mode: 'coral',
    zone: target.zone,
    url: upstreamUrl(
      { protocol: `${target.scheme}:`, hostname: target.originHost, port: target.originPort },
      path,
    ),
  };
}

/** Route `req` (module comment): the routed request, or a refusal; `res` is only carried along. */
export function route(
  core: RouteCore,
  config: RouteConfig,
  req: IncomingMessage,
  res: ServerResponse,
): Routed {
  const method = req.method ?? 'GET';
  const refuse = (
    error: ErrorAnswer,
    headers?: Record<string, string>,
    peerRejected?: string,
  ): Routed => ({
    kind: 'refused',
    error,
    ...(headers ? { headers } : {}),
    ...(peerRejected !== undefined ? { peerRejected } : {}),
  });
  const via = req.headers.via;
  if (via !== undefined && String(via).includes(core.via.slice(4))) {
    return refuse(
      new ProxyError('CORAL_LOOP_DETECTED', `request already passed through ${core.via}`),
    );
  }
  let admitted;
  try {
    admitted = admit(req);
  } catch (e) {
    // A bad Host or target: the message may not be what it seems (smuggling, a body we will not
    // read), so the connection is closed after the answer.
    if (e instanceof ProxyError) return refuse(e, { connection: 'close' });
    throw e;
  }
  const { host, authority, path } = admitted;
  const peer = req.headers[PEER_HEADER] !== undefined;
  if (peer && core.peerAuth) {
    const verdict = core.peerAuth.verify({
      method,
      authority: host,
      path: req.url ?? '',
      header: headerValue(req.headers[PEER_AUTH_HEADER]),
    });
    if (verdict !== 'ok') {
      return refuse(
        new ProxyError('CORAL_PEER_UNAUTHORIZED', `peer request not authenticated (${verdict})`),
        undefined,
        verdict,
      );
    }
  }
  let mapped: MappedTarget;
  try {
    mapped = mapTarget(config, host, authority.name, path);
  } catch (e) {
    if (e instanceof ProxyError) return refuse(e);
    throw e;
  }
  const { mode, url, zone } = mapped;
  const u = new URL(url);
  const gated = config.gate?.({ host: u.hostname, url, mode, peer });
  if (gated) return refuse(gated);
  if (mode === 'coral' && method !== 'GET' && method !== 'HEAD') {
    return refuse(
      new ProxyError(
        'CORAL_METHOD_NOT_ALLOWED',
        `${method} is not allowed on Coralized names; only GET and HEAD`,
      ),
      { allow: 'GET, HEAD' },
    );
  }
  const keyBytes = urlKey(url);
  const reqHeaders = toRecord(req.headers);
  // Normalised before it can take part in the cache key or Vary (../kit/encoding.ts).
  const ae = normalizeAcceptEncoding(reqHeaders['accept-encoding']);
  if (ae !== undefined) reqHeaders['accept-encoding'] = ae;
  // Only an authenticated member's ask (keyed mode: its signature was checked above).
  const designated =
    peer &&
    core.peerAuth !== undefined &&
    method === 'GET' &&
    req.headers[DESIGNATED_HEADER] !== undefined &&
    designatedHere(core.members, core.self.nodeId, keyBytes);
  const ctx: RequestCtx = {
    req,
    res,
    method,
    mode,
    ...(zone !== undefined ? { zone } : {}),
    ...(authority.port !== undefined ? { clientPort: authority.port } : {}),
    tls: (req.socket as TLSSocket).encrypted === true,
    ...(core.links.tlsPort !== undefined ? { tlsPort: core.links.tlsPort } : {}),
    httpPort: core.self.httpPort,
    host,
    url,
    domain: u.hostname,
    path: u.pathname + u.search,
    primary: Buffer.from(keyBytes).toString('hex'),
    keyBytes,
    reqHeaders,
    cache: cacheRequest(method, reqHeaders, peer && !designated),
    peer,
  };
  return { kind: 'routed', ctx, designated };
}
