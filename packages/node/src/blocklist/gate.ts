/**
 * The blocklist's gate in front of the proxy: the node wraps the proxy's request handler (the one
 * both its listeners call) so a request whose origin is blocked is answered 403
 * `CORAL_ERR_ORIGIN_BLOCKED` before the proxy sees it — no cache lookup, no peer, no origin.
 *
 * The origin is found the way the proxy finds it (httpprx request/route.ts): every `Host` field
 * and an absolute-form target's authority; a configured site name maps to its origin, any other
 * name is decoded with @coral/names (`parseCoralName`: legacy and one-label forms, IDNs). A
 * request that names no origin (malformed, not Coralized) goes on to the proxy, which refuses it.
 * Peer requests come through the same listeners with the Coralized name, so a blocked object is
 * never served to a peer either.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseCoralName, splitHostHeader } from '@coral/names';
import { OriginBlockedError } from '../errors.js';
import type { Blocklist } from './blocklist.js';

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

export interface BlockGateOptions {
  zones: readonly string[];
  /** Site (accelerator) names → origin host name. */
  sites: ReadonlyMap<string, string>;
  /** The current blocklist (swapped on SIGHUP). */
  blocklist: () => Blocklist;
  /** Called for every request refused. */
  onBlocked?: (origin: string, domain: string) => void;
}

const ABSOLUTE = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#]*)/;

/** The origin hosts a request names (see the module comment). */
export function requestOrigins(
  req: Pick<IncomingMessage, 'rawHeaders' | 'url'>,
  zones: readonly string[],
  sites: ReadonlyMap<string, string>,
): string[] {
  const authorities: string[] = [];
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const k = raw[i]!;
    if (k.length === 4 && k.toLowerCase() === 'host') authorities.push(raw[i + 1] ?? '');
  }
  const abs = ABSOLUTE.exec(req.url ?? '');
  if (abs) authorities.push(abs[1]!.replace(/^[^@]*@/, ''));
  const origins: string[] = [];
  for (const a of authorities) {
    let name: string;
    try {
      name = splitHostHeader(a).name;
    } catch {
      continue; // the proxy answers 400
    }
    const site = sites.get(name);
    if (site !== undefined) {
      origins.push(site);
      continue;
    }
    const r = parseCoralName(name, zones);
    if (r.kind === 'origin') origins.push(r.host);
  }
  return origins;
}

/** `inner` behind the blocklist (module comment). */
export function blockGate(inner: RequestHandler, options: BlockGateOptions): RequestHandler {
  return (req, res) => {
    const list = options.blocklist();
    if (list.size > 0) {
      for (const origin of requestOrigins(req, options.zones, options.sites)) {
        const domain = list.match(origin);
        if (domain !== undefined) {
          options.onBlocked?.(origin, domain);
          refuse(req, res, new OriginBlockedError(origin, domain));
          return;
        }
      }
    }
    inner(req, res);
  };
}

function refuse(req: IncomingMessage, res: ServerResponse, err: OriginBlockedError): void {
  req.on('error', () => {});
  res.on('error', () => {});
  const body = Buffer.from(`${err.statusCode} Forbidden: ${err.code}: ${err.message}\n`);
  res.writeHead(err.statusCode, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': String(body.length),
    'cache-control': 'no-store',
    'x-coral-error': err.code,
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}
