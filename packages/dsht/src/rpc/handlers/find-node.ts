/**
 * FIND_NODE(level, target[, count]) → the contacts closest to target in that level's table: k, or
 * fewer when the request asks fewer.
 */
import type { Contact } from '../../contact.js';
import type { Request, Response } from '../../wire/messages.js';
import { badLevel, closerContacts, type HandlerContext } from './context.js';

export function handleFindNode(
  ctx: HandlerContext,
  req: Extract<Request, { type: 'FIND_NODE' }>,
  sender: Contact,
): Response {
  const table = ctx.table(req.level);
  if (!table) return badLevel(req.level);
  return {
    type: 'NODES',
    contacts: closerContacts(table, req.target, sender, Math.min(ctx.k, req.count ?? ctx.k)),
  };
}
