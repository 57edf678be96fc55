/**
 * STORE_PROBE(level, key, ttl) → { full, loaded } for the sender as publisher, plus closer contacts:
 * the forward phase of a put asks this at every hop.
 */
import type { Contact } from '../../contact.js';
import type { Request, Response } from '../../wire/messages.js';
import { badLevel, closerContacts, type HandlerContext } from './context.js';

export function handleStoreProbe(
  ctx: HandlerContext,
  req: Extract<Request, { type: 'STORE_PROBE' }>,
  sender: Contact,
): Response {
  const table = ctx.table(req.level);
  if (!table) return badLevel(req.level);
  const { full, loaded } = ctx.store.probe(req.level, req.key, req.ttl, sender.id);
  return {
    type: 'PROBE_RESULT',
    full,
    loaded,
    contacts: closerContacts(table, req.key, sender, ctx.walkContacts),
  };
}
