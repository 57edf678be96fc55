/**
 * Answers for requests Node's HTTP parser refuses (`clientError`) and for CONNECT, which never
 * reaches a request handler. Both are written straight to the socket as a complete HTTP/1.1
 * response with `Connection: close`, then the socket is ended: after a framing error nothing more
 * on that connection can be trusted (request smuggling), and a CDN node is not a tunnel.
 */
import type { Duplex } from 'node:stream';
import { ProxyError } from '../errors.js';
import type { ErrorCode } from '../errors.js';
import { errorPage } from '../proxy/respond.js';

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
