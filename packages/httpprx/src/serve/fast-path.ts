/**
 * The fast path: a plain GET or HEAD whose raw Host and target were routed to a fresh hot object
 * (../hot/hot-cache.ts) is answered from memory with the precomputed header block — no target parsing,
 * no URL hashing, no metadata lookup. Anything that could change the answer (conditionals, Range,
 * request cache directives, credentials, a peer marker, a Via, a repeated Host) takes the full
 * path instead. The request's fields are read from `rawHeaders` in one pass: `req.headers` is built
 * by Node only when first read, and a hit need not pay for it. The response goes out as bytes
 * prepared on the entry (../hot/prepared.ts) when node:http keeps the connection alive, else through
 * `writeHead`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { noteOf } from '@coral/accesslog';
import { PEER_HEADER } from '../constants.js';
import { currentAge } from '../cache/policy.js';
import type { ProxyCore } from '../kit/core.js';
import { siteOf } from '../site-control/opt-outs.js';
import { domainOf } from '../fairness/domain.js';
import { HotCache } from '../hot/hot-cache.js';
import { preparedConnection, sendPrepared } from '../hot/prepared.js';

/** LRU refreshes (hot cache and store) from the fast path, at most one per object per this many ms. */
const TOUCH_EVERY_MS = 1000;

/** Request fields that could change the answer: such a request takes the full path. */
const FULL_PATH_FIELDS = new Set([
  'via',
  'range',
  'if-none-match',
  'if-modified-since',
  'cache-control',
  'pragma',
  'authorization',
  PEER_HEADER,
]);
/** Lengths of 'host' and of those names: other names are skipped without lowercasing them. */
const NAME_LENGTHS = new Set(['host', ...FULL_PATH_FIELDS].map((n) => n.length));

/**
 * The one Host value of a request the fast path may answer, from its raw field lines (names in
 * any case); undefined when Host is missing or repeated or a field in FULL_PATH_FIELDS is present.
 */
export function fastPathHost(rawHeaders: readonly string[]): string | undefined {
  let host: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const k = rawHeaders[i]!;
    if (!NAME_LENGTHS.has(k.length)) continue;
    const name = k.toLowerCase();
    if (name === 'host') {
      if (host !== undefined) return undefined;
      host = rawHeaders[i + 1]!;
    } else if (FULL_PATH_FIELDS.has(name)) return undefined;
  }
  return host;
}

/** Answered from a hot object? `now`: the clock as read for this request. */
export function fastHit(
  core: ProxyCore,
  req: IncomingMessage,
  res: ServerResponse,
  now: number,
): boolean {
  const method = req.method;
  if (method !== 'GET' && method !== 'HEAD') return false;
  const host = fastPathHost(req.rawHeaders);
  if (host === undefined) return false;
  const r = core.hot.route(host, req.url ?? '');
  if (!r) return false;
  const e = r.entry;
  if (!e.fast) return false;
  const age = currentAge(e.meta.facts, now);
  if (age >= e.lifetime) return false;
  // A Coralized name whose origin opted out, or whose opt-out state is to be read from the index:
  // the full path. A configured site's origin is the operator's own: no opt-out (as on the full
  // path, ../proxy/coral-proxy.ts), so its hits stay here.
  if (r.optOut && core.optOuts.mustCheck((e.site ??= siteOf(e.meta.url)), now)) return false;
  // The served-bytes share: a hit that would have to wait takes the full path, which waits.
  const bytes = method === 'HEAD' ? 0 : e.body.length;
  if (bytes > 0 && !core.bandwidth.served.tryTake((e.domain ??= domainOf(e.meta.url)), bytes)) {
    return false;
  }
  if (now - e.touchedAt >= TOUCH_EVERY_MS) {
    e.touchedAt = now;
    core.hot.touch(e);
    core.store.touch(e.meta.key);
  }
  const connection = e.head === undefined ? undefined : preparedConnection(res);
  if (connection !== undefined) {
    // The bytes node:http would write, prepared on the entry (../hot/prepared.ts).
    const get = method === 'GET';
    const wire = HotCache.wire(e, age, connection, get);
    sendPrepared(res, e.meta.status, wire, get && e.bodyText === undefined ? e.body : undefined);
  } else {
    res.writeHead(e.meta.status, HotCache.block(e, age));
    res.end(method === 'HEAD' ? undefined : e.body);
  }
  const metrics = core.metrics;
  if (metrics) {
    metrics.request('hit', method, e.meta.status, res);
    metrics.fastHit?.();
  }
  const note = noteOf(res);
  if (note) note.originUrl = e.meta.url;
  return true;
}
