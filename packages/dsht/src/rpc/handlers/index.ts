/** One handler per message type; `dispatch` routes a decoded request to its handler. */
import type { Contact } from '../../contact.js';
import { WireErrorCode, type Request, type Response } from '../../wire/messages.js';
import type { HandlerContext, RequestSource } from './context.js';
import { handleFindNode } from './find-node.js';
import { handleGet } from './get.js';
import { handlePing } from './ping.js';
import { handleStore } from './store.js';
import { handleStoreProbe } from './store-probe.js';

export type { HandlerContext, RequestSource } from './context.js';

export function dispatch(
  ctx: HandlerContext,
  req: Request,
  sender: Contact,
  now: number,
  from: RequestSource,
): Response {
  switch (req.type) {
    case 'PING':
      return handlePing();
    case 'FIND_NODE':
      return handleFindNode(ctx, req, sender);
    case 'GET':
      return handleGet(ctx, req, sender, now);
    case 'STORE_PROBE':
      return handleStoreProbe(ctx, req, sender);
    case 'STORE':
      return handleStore(ctx, req, sender, from);
    case 'PING_REQ':
    case 'LEAVE':
      // Failure detection answers these; a node that does not run it takes no part.
      return { type: 'ERROR', code: WireErrorCode.BAD_REQUEST, message: 'failure detection off' };
  }
}
