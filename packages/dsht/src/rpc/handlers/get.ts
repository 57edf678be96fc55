/**
 * GET(level, key, max) → a random subset (≤ max) of this node's live values for the key at that
 * level, or — when it has none — the k closest contacts so the walk can go on.
 */
import type { Contact } from '../../contact.js';
import { toWireValue } from '../../store/value-store.js';
import type { Request, Response } from '../../wire/messages.js';
import { badLevel, closerContacts, type HandlerContext } from './context.js';

export function handleGet(
  ctx: HandlerContext,
  req: Extract<Request, { type: 'GET' }>,
  sender: Contact,
  now: number,
): Response {
  const table = ctx.table(req.level);
  if (!table) return badLevel(req.level);
  const found = ctx.store.get(req.level, req.key, req.max);
  if (found.length > 0) {
    return {
      type: 'VALUES',
      values: found.map((v) => toWireValue(v, now)),
      contacts: [],
    };
  }
  return {
    type: 'VALUES',
    values: [],
    contacts: closerContacts(table, req.key, sender, ctx.walkContacts),
  };
}
