/**
 * The header block a client receives for a stored or in-flight response: the stored end-to-end
 * fields, less the targeted cache-control fields this cache consumes (RFC 9213: Coral-Cache-Control
 * and CDN-Cache-Control never reach clients; peers get them, they apply the same policy), plus our
 * Via, with an absolute http Location rewritten to its Coralized form.
 */
import { TARGETED_FIELDS } from '../constants.js';
import type { HeaderRecord } from '../cache/policy.js';
import { coralize } from '../mapping/coral-name.js';
import type { RequestCtx } from '../proxy/core.js';
import { appendVia } from '../proxy/headers.js';

const TARGETED = new Set(TARGETED_FIELDS);

/** Fields of a stored response never sent to a client (peers excepted). */
export function forClient(h: HeaderRecord, peer: boolean): HeaderRecord {
  const out: HeaderRecord = {};
  for (const k in h) if (peer || !TARGETED.has(k)) out[k] = h[k]!;
  return out;
}

/** The stored fields as a client sees them, with our Via and the Location rewritten. */
export function clientHeaders(
  ctx: Pick<RequestCtx, 'mode' | 'zone' | 'clientPort' | 'peer'> | undefined,
  stored: HeaderRecord,
  via: string,
): HeaderRecord {
  const out = forClient(stored, ctx?.peer ?? false);
  delete out['transfer-encoding'];
  out['via'] = appendVia(stored['via'], via);
  if (ctx) rewriteLocation(ctx, out);
  return out;
}

/** An absolute http Location becomes its Coralized form, with the port the client used. */
export function rewriteLocation(
  ctx: Pick<RequestCtx, 'mode' | 'zone' | 'clientPort'>,
  h: HeaderRecord,
): void {
  const loc = h['location'];
  if (ctx.mode !== 'coral' || !loc || !/^http:\/\//i.test(loc) || !ctx.zone) return;
  try {
    h['location'] = coralize(loc, ctx.zone, ctx.clientPort);
  } catch {
    /* leave unrewritable locations alone */
  }
}
