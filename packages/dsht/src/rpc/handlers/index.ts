/**
 * One handler per message type; `dispatch` routes a decoded request to its handler, and
 * `NodeHandlers` is what a node's RPC layer is given as its `handler`: failure detection answers
 * its own messages (PING, PING_REQ, LEAVE) while it runs, `dispatch` every other request.
 */
import type { Clock } from '@coral/runtime';
import type { Address, Contact } from '../../contact.js';
import type { FailureDetector } from '../../membership/failure-detector.js';
import { WireErrorCode, type Request, type Response } from '../../wire/messages.js';
import type { RequestHandler } from '../rpc.js';
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

export interface NodeHandlersComponents {
  clock: Clock;
  /** The tables and the store the handlers read and change. */
  context: HandlerContext;
  /** Failure detection, when the node runs it. */
  detector?: FailureDetector;
}

export class NodeHandlers implements RequestHandler {
  readonly #clock: Clock;
  readonly #ctx: HandlerContext;
  readonly #detector: FailureDetector | undefined;

  constructor(components: NodeHandlersComponents) {
    this.#clock = components.clock;
    this.#ctx = components.context;
    this.#detector = components.detector;
  }

  handle(
    req: Request,
    sender: Contact,
    from: Address,
    source: RequestSource,
  ): Response | Promise<Response> {
    return (
      this.#detector?.handle(req, sender, from, source) ??
      dispatch(this.#ctx, req, sender, this.#clock.now(), source)
    );
  }
}
