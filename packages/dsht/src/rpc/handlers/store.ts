/**
 * STORE(level, key, value, ttl, copyOf?) → accepted, or refused as full / loaded / over a limit.
 * Reached only with a valid write token (the RPC layer refuses the rest before any state exists).
 *
 * The publisher is the authenticated sender — never a field of the message — so only a value's
 * own publisher can replace it. A path-cached copy (`copyOf` = the publisher named by the answer
 * it was copied from) is stored as a copy by that sender: it never replaces a first-hand value.
 * Every stored value counts against its sender's host quota.
 */
import type { Contact } from '../../contact.js';
import type { Request, Response } from '../../wire/messages.js';
import { badLevel, type HandlerContext, type RequestSource } from './context.js';

export function handleStore(
  ctx: HandlerContext,
  req: Extract<Request, { type: 'STORE' }>,
  sender: Contact,
  from: RequestSource,
): Response {
  if (!ctx.table(req.level)) return badLevel(req.level);
  const status = req.copyOf
    ? ctx.store.store(req.level, req.key, req.copyOf, req.value, req.ttl, {
        source: from.host,
        copy: true,
        storedBy: sender.id,
      })
    : ctx.store.store(req.level, req.key, sender.id, req.value, req.ttl, { source: from.host });
  return { type: 'STORE_RESULT', status };
}
