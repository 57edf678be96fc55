/**
 * A hot hit handed to node:http as the bytes node:http would have written itself.
 *
 * For every response, `writeHead(status, fields)` validates each field name and value and
 * serializes them (node:http's `_storeHeader`), and `end(body)` then writes the head string, the
 * body and an empty chunk as one `writev`. For a hot object those bytes are the same on every hit
 * but for Age, Cache-Status's ttl and node:http's own Connection and Keep-Alive fields. Here they
 * are prepared once: the status line and the fields are checked (the same checks as node:http's)
 * and serialized when the entry is made hot; Age and Cache-Status are appended once per age second;
 * and a small body is kept as a one-byte string after the head, so that a hit is a single string
 * write on the socket. A larger body is written after the prepared head as `end(body)` writes it.
 *
 * This sets fields of node:http's `ServerResponse` that are not its public API: `_header` and
 * `_headerSent` (the head `writeHead` would have stored), and reads the ones `writeHead` reads to
 * choose the connection fields. It does so only in the one case it prepares: a response on a
 * connection node:http keeps alive, with Content-Length and Date among the stored fields, to which
 * node:http would add exactly `Connection: keep-alive` and `Keep-Alive: timeout=N[, max=M]`. Every
 * other case — a client asking to close, HTTP/1.0 without keep-alive, the last request allowed on a
 * connection, an expectation, fields already set on the response, a runtime whose
 * `ServerResponse` lacks these fields — goes through `writeHead` as before.
 * test/hot/prepared.spec.ts compares the bytes of both ways on real sockets.
 */
import { IncomingMessage, STATUS_CODES, ServerResponse } from 'node:http';
import { Socket } from 'node:net';

/** Bodies up to this size are kept as a one-byte string after the head (one write per hit). */
export const INLINE_BODY_MAX_BYTES = 16 * 1024;

/** The state node:http's `writeHead` and `_storeHeader` read and leave on a ServerResponse. */
interface NodeResponseState {
  statusCode: number;
  _header: string | null;
  _headerSent: boolean;
  _hasBody: boolean;
  shouldKeepAlive: boolean;
  maxRequestsOnConnectionReached: boolean;
  _removedConnection: boolean;
  _defaultKeepAlive: boolean;
  _keepAliveTimeout: number;
  _maxRequestsPerSocket: number | undefined;
  _expect_continue: boolean;
  chunkedEncoding: boolean;
}

/**
 * The one view of a ServerResponse as node:http's internal state (see the file's comment): the
 * only `as unknown as` in the project's sources, since these fields are not in node:http's types.
 */
function internals(res: ServerResponse): NodeResponseState & Record<string | symbol, unknown> {
  return res as unknown as NodeResponseState & Record<string | symbol, unknown>;
}

/** node:http's symbol for fields set with `setHeader` (undefined if this runtime has none). */
const OUT_HEADERS = probe();

/**
 * Does this runtime's ServerResponse carry the fields this module reads and sets? Checked once on
 * a response that is never sent; undefined (never prepared) when it does not.
 */
function probe(): symbol | undefined {
  try {
    const req = new IncomingMessage(new Socket());
    req.method = 'GET';
    req.httpVersionMajor = 1;
    req.httpVersionMinor = 1;
    const res = internals(new ServerResponse(req));
    const fields = [
      '_header',
      '_headerSent',
      '_hasBody',
      'shouldKeepAlive',
      'maxRequestsOnConnectionReached',
      '_removedConnection',
      '_defaultKeepAlive',
      '_expect_continue',
      'chunkedEncoding',
    ];
    const proto = internals(ServerResponse.prototype as ServerResponse);
    if (!fields.every((f) => f in res) || res._header !== null || res._headerSent !== false)
      return undefined;
    if (typeof proto._storeHeader !== 'function' || typeof proto._send !== 'function')
      return undefined;
    return Object.getOwnPropertySymbols(res).find((s) => s.description === 'kOutHeaders');
  } catch {
    return undefined;
  }
}

/** node:http's checks of a field name (a token) and value (no CTLs but HTAB), RFC 9110 §5. */
const TOKEN = /^[\^_`a-zA-Z\-0-9!#$%&'*+.|~]+$/;
const INVALID_VALUE_CHAR = /[^\t\x20-\x7e\x80-\xff]/;
/** Fields node:http would act on itself: an entry carrying one is not prepared. */
const NODE_OWNED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'trailer', 'expect']);

/**
 * The status line and fields of a header block (flat [name, value, ...], without Age and
 * Cache-Status), serialized as `writeHead` would, or undefined when the block is one this module
 * does not prepare (a field node:http would reject or act on, no Content-Length or no Date, a
 * status without a body).
 */
export function serializeHead(status: number, flat: readonly string[]): string | undefined {
  if (status < 200 || status > 999 || status === 204 || status === 304) return undefined;
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'unknown'}\r\n`;
  let length = false;
  let date = false;
  for (let i = 0; i < flat.length; i += 2) {
    const name = flat[i]!;
    const value = flat[i + 1]!;
    if (!TOKEN.test(name) || INVALID_VALUE_CHAR.test(value)) return undefined;
    const lower = name.toLowerCase();
    if (NODE_OWNED.has(lower)) return undefined;
    if (lower === 'content-length') length = true;
    else if (lower === 'date') date = true;
    head += `${name}: ${value}\r\n`;
  }
  return length && date ? head : undefined;
}

/** The connection fields node:http would add (cached: they change only with the server's settings). */
let lastTimeout = -1;
let lastMax: number | undefined = -1;
let lastFields = '';

function keepAliveFields(r: NodeResponseState): string {
  const timeout = r._defaultKeepAlive ? r._keepAliveTimeout : 0;
  const max = r._maxRequestsPerSocket;
  if (timeout !== lastTimeout || max !== lastMax) {
    lastTimeout = timeout;
    lastMax = max;
    lastFields = 'Connection: keep-alive\r\n';
    if (timeout) {
      const m = ~~(max ?? 0) > 0 ? `, max=${max}` : '';
      lastFields += `Keep-Alive: timeout=${Math.floor(timeout / 1000)}${m}\r\n`;
    }
  }
  return lastFields;
}

/**
 * The connection fields for `res` if it is a response this module may send (see the file's
 * comment), else undefined.
 */
export function preparedConnection(res: ServerResponse): string | undefined {
  if (OUT_HEADERS === undefined) return undefined;
  const r = internals(res);
  if (
    r._header !== null ||
    !r.shouldKeepAlive ||
    r.maxRequestsOnConnectionReached ||
    r._removedConnection ||
    r._expect_continue ||
    r.chunkedEncoding ||
    r[OUT_HEADERS] != null
  )
    return undefined;
  return keepAliveFields(r);
}

/**
 * Send a prepared response on `res` (one for which `preparedConnection` gave the connection fields
 * `wire` carries): `wire` is the head up to its blank line, followed by the body as a one-byte
 * string when `body` is undefined; else `body` follows it. A HEAD's `wire` is the head alone.
 */
export function sendPrepared(
  res: ServerResponse,
  status: number,
  wire: string,
  body?: Buffer,
): void {
  const r = internals(res);
  r.statusCode = status;
  r._header = wire;
  r._headerSent = false;
  if (body === undefined) res.end();
  else res.end(body);
}
