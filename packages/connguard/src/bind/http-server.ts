/**
 * The binding for `http.Server` and `https.Server`: `guardServer`, plus the request cycle — a
 * connection is busy from the end of a request's head (`request`) until its response closes, its
 * body is watched while the handler reads it, and between requests it waits under the keep-alive
 * and header timeouts again. Node's own `headersTimeout` and `requestTimeout` stay as backstops.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { ListenerBudget } from '../budget.js';
import { guardServer, type GuardComponents, type GuardedServer } from './net-server.js';

/** Does a request carry a body to read (Content-Length > 0, or chunked)? */
function hasBody(req: IncomingMessage): boolean {
  const len = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (len !== undefined && len !== '0');
}

/**
 * Guard an HTTP(S) server. Call before `listen()` and before the request handler sees traffic:
 * the budget's `request` listener goes first.
 */
export function guardHttpServer(
  server: Server,
  listener: ListenerBudget,
  components: GuardComponents = {},
  options: { tls?: boolean } = {},
): GuardedServer {
  const guarded = guardServer(server, listener, components, options);
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    const conn = guarded.connectionOf(req.socket);
    if (!conn) return;
    conn.begin();
    if (hasBody(req)) {
      // Reading: the handler consumes the body and has not paused it (backpressure is its own).
      conn.body(() => req.readableFlowing === true && !req.isPaused());
      req.once('end', () => conn.bodyDone());
    }
    res.once('close', () => conn.end());
  });
  return guarded;
}
