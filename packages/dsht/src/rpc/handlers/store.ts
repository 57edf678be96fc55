/**
 * STORE(level, key, value, ttl, publisher) → accepted, or refused as full / loaded / over a limit.
 * The publisher field lets path caching copy a value under its original publisher, so the
 * replace rule still holds for the copy.
 */
import type { Request, Response } from '../../wire/messages.js';
import { badLevel, type HandlerContext } from './context.js';

export function handleStore(
  ctx: HandlerContext,
  req: Extract<Request, { type: 'STORE' }>,
): Response {
  if (!ctx.table(req.level)) return badLevel(req.level);
  const status = ctx.store.store(req.level, req.key, req.publisher, req.value, req.ttl);
  return { type: 'STORE_RESULT', status };
}
