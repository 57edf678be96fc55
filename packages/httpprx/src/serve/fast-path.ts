/**
 * The fast path: a plain GET or HEAD whose raw Host and target were routed to a fresh hot object
 * (./hot-cache.ts) is answered from memory with the precomputed header block — no target parsing,
 * no URL hashing, no metadata lookup. Anything that could change the answer (conditionals, Range,
 * request cache directives, credentials, a peer marker, a Via, a repeated Host) takes the full
 * path instead.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PEER_HEADER } from '../constants.js';
import { currentAge } from '../cache/policy.js';
import type { ProxyCore } from '../proxy/core.js';
import { singleHost } from '../request/admission.js';
import { HotCache } from './hot-cache.js';

/** Store LRU refreshes from the fast path, at most one per object per this many ms. */
const TOUCH_EVERY_MS = 1000;

/** Answered from a hot object? */
export function fastHit(core: ProxyCore, req: IncomingMessage, res: ServerResponse): boolean {
  const method = req.method;
  if (method !== 'GET' && method !== 'HEAD') return false;
  const h = req.headers;
  const host = h.host;
  if (
    host === undefined ||
    h.via !== undefined ||
    h.range !== undefined ||
    h['if-none-match'] !== undefined ||
    h['if-modified-since'] !== undefined ||
    h['cache-control'] !== undefined ||
    h.pragma !== undefined ||
    h.authorization !== undefined ||
    h[PEER_HEADER] !== undefined
  ) {
    return false;
  }
  const e = core.hot.route(host, req.url ?? '');
  if (!e || !e.fast || !singleHost(req.rawHeaders)) return false;
  const now = core.clock.now();
  const age = currentAge(e.meta.facts, now);
  if (age >= e.lifetime) return false;
  if (now - e.touchedAt >= TOUCH_EVERY_MS) {
    e.touchedAt = now;
    core.store.touch(e.meta.key);
  }
  res.writeHead(e.meta.status, HotCache.block(e, age));
  res.end(method === 'HEAD' ? undefined : e.body);
  core.metrics?.request('hit', method, e.meta.status);
  return true;
}
