/**
 * Answers for requests Node's HTTP parser refuses (`clientError`) and for CONNECT, which never
 * reaches a request handler. Both are written straight to the socket as a complete HTTP/1.1
 * response with `Connection: close`, then the socket is ended: after a framing error nothing more
 * on that connection can be trusted (request smuggling), and a CDN node is not a tunnel.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { ProxyError } from '../errors.js';
import type { ErrorCode } from '../errors.js';
import { errorPage } from '../kit/respond.js';

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
};

/** The proxy error a parser failure is answered with. */
export function clientErrorOf(err: Error & { code?: string }): ProxyError {
  const code = err.code ?? '';
  let c: ErrorCode = 'CORAL_BAD_REQUEST';
  if (code === 'HPE_HEADER_OVERFLOW') {
    c = 'CORAL_HEADERS_TOO_LARGE';
  } else if (code === 'ERR_HTTP_REQUEST_TIMEOUT' || code === 'ERR_HTTP_HEADERS_TIMEOUT') {
    c = 'CORAL_REQUEST_TIMEOUT';
  }
  return new ProxyError(c, `malformed request (${code || 'parse error'})`);
}

/** A complete `Connection: close` response for `err`, as bytes. */
export function rawErrorResponse(
  err: ProxyError,
  via: string,
  extra: Record<string, string> = {},
): Buffer {
  const { headers, body } = errorPage(err, via, { ...extra, connection: 'close' });
  let head = `HTTP/1.1 ${err.status} ${REASONS[err.status] ?? 'Error'}\r\n`;
  head += `date: ${new Date().toUTCString()}\r\n`;
  for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
  return Buffer.concat([Buffer.from(head + '\r\n', 'latin1'), body]);
}

type ResponseLike = { once(event: 'close', f: () => void): unknown };

/**
 * Run `then` once no response is being written on `socket`. `_httpMessage` is the
 * ServerResponse Node has attached to the socket (it also answers a pipelined request queued
 * before the bad one); after it closes, Node attaches the next queued one, if any.
 */
function whenIdle(socket: Duplex, then: () => void): void {
  const current = (socket as { _httpMessage?: ResponseLike | null })._httpMessage;
  if (!current) return then();
  current.once('close', () => setImmediate(() => whenIdle(socket, then)));
}

/**
 * Requests whose handler waits for their body (site mode's other methods stream it upstream,
 * ../site/site.ts), and requests whose body failed to parse before their handler got that far.
 */
const readingBody = new WeakSet<IncomingMessage>();
const badBody = new WeakMap<IncomingMessage, ProxyError>();

/**
 * `req`'s answer is about to wait for its body: returns the framing error already found in that
 * body, if any (then answer it at once, Connection: close); a later one is answered by
 * `answerClientError` at once.
 */
export function awaitsBody(req: IncomingMessage): ProxyError | undefined {
  readingBody.add(req);
  return badBody.get(req);
}

/** Answer the request being handled with `e` and close (it owes nothing more). */
function answerInPlace(socket: Duplex, res: ServerResponse, e: ProxyError, via: string): void {
  if (res.headersSent) {
    // Its answer has already begun: all that can be done is to cut it.
    socket.destroy();
    return;
  }
  const { headers, body } = errorPage(e, via, { connection: 'close' });
  res.writeHead(e.status, headers);
  res.end(body);
}

/** Answer a body framing error found by `awaitsBody` (node:http closes after the answer). */
export function answerBadBody(res: ServerResponse, e: ProxyError, via: string): void {
  answerInPlace(res.socket ?? res.req.socket, res, e, via);
}

/**
 * `server.on('clientError', …)`: answer 400 / 408 / 431 and close. Responses to requests that
 * came before the bad one on the same connection are finished first (our bytes never land in the
 * middle of one); nothing after the bad bytes is read. Returns the error answered (for counting),
 * or undefined when the peer is gone and the socket was only destroyed.
 */
export function answerClientError(
  err: Error & { code?: string },
  socket: Duplex,
  via: string,
): ProxyError | undefined {
  socket.on('error', () => {});
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return undefined;
  }
  const e = clientErrorOf(err);
  // HTTP/1.1 is parsed one message at a time: bytes that fail while the request being answered
  // is incomplete are its body's (a malformed chunk, a chunk size that overflows).
  const current = (socket as { _httpMessage?: ServerResponse | null })._httpMessage;
  const req = current?.req;
  if (current && req && !req.complete) {
    if (readingBody.has(req)) {
      // Its handler waits for a body that will never end (streaming it to a site's origin,
      // which waits too): answer now. node:http closes the socket once it is written, which
      // ends the upstream request.
      answerInPlace(socket, current, e, via);
      return e;
    }
    // Its handler has not reached the body yet: it answers when it does (`awaitsBody`); one
    // that never reads it (a GET) finishes its answer, then gets the 400 below.
    badBody.set(req, e);
  }
  whenIdle(socket, () => {
    if (socket.writable) socket.end(rawErrorResponse(e, via));
    else socket.destroy();
  });
  return e;
}

/** `server.on('connect', …)`: CONNECT (authority-form) is refused with 405; only GET/HEAD here. */
export function refuseConnect(socket: Duplex, via: string, allow: string): void {
  socket.on('error', () => {});
  const e = new ProxyError('CORAL_METHOD_NOT_ALLOWED', 'CONNECT is not supported: not a tunnel');
  socket.end(rawErrorResponse(e, via, { allow }));
}
