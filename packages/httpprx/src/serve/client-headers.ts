/**
 * The header block a client receives for a stored or in-flight response: the stored end-to-end
 * fields, less the targeted cache-control fields this cache consumes (RFC 9213: Coral-Cache-Control
 * and CDN-Cache-Control never reach clients; peers get them, they apply the same policy), plus our
 * Via, with an absolute http Location rewritten to its Coralized form.
 */
import { TARGETED_FIELDS } from '../constants.js';
import { CODED_FIELD } from '../kit/encoding.js';
import type { HeaderRecord } from '../cache/policy.js';
import { rewriteLinks } from '../mapping/links.js';
import type { RequestCtx } from '../kit/core.js';
import { appendVia } from '../kit/headers.js';

const TARGETED = new Set([...TARGETED_FIELDS, CODED_FIELD]);

/** Fields of a stored response never sent to a client (peers excepted): the targeted ones, the coded marker. */
export function forClient(h: HeaderRecord, peer: boolean): HeaderRecord {
  const out: HeaderRecord = {};
  for (const k in h) if (peer || !TARGETED.has(k)) out[k] = h[k]!;
  return out;
}

/**
 * The stored fields as a client sees them, with our Via and Location / Content-Location
 * rewritten for this client (../mapping/links.ts; peers rewrite for their own clients).
 */
export function clientHeaders(
  ctx:
    | Pick<RequestCtx, 'mode' | 'zone' | 'clientPort' | 'peer' | 'tls' | 'tlsPort' | 'httpPort'>
    | undefined,
  stored: HeaderRecord,
  via: string,
): HeaderRecord {
  const out = forClient(stored, ctx?.peer ?? false);
  delete out['transfer-encoding'];
  out['via'] = appendVia(stored['via'], via);
  if (ctx && !ctx.peer) rewriteLinks(ctx, out);
  return out;
}
