/**
 * Turning one node:http request/response exchange into an `AccessRecord`, for a server that
 * calls `start` first thing in its request handler (the proxy does, when given `onAccess`).
 *
 * What the socket and node:http know is read when the response closes (it has ended, or the
 * client left first: `aborted`): client, method, Host, target, protocol, status, the TLS version,
 * Referer and User-Agent (from `rawHeaders`, one pass: `req.headers` is built only when read, and
 * a fast-path hit need not pay for it), the bytes the connection took for the response, and the
 * Cache-Status member in the header block as written (`cacheFacts`). What only the server knows
 * it notes on the exchange as it goes (`noteOf(res)`): the cache kind and the moment the head was
 * written (`head`), the origin URL, where the body came from, the forward request's time.
 *
 * Per exchange this keeps one small note object on the response, under a symbol of this module,
 * and two listeners: `prefinish` (the bytes) and `close` (a transfer the client abandons has no
 * `finish`, and its line matters).
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Clock } from '@coral/runtime';
import { cacheFacts } from '../cache-status.js';
import type { AccessRecord, ServedBy } from '../record.js';

/** A monotonic clock in milliseconds (`performance` by default; tests pass a manual one). */
export interface MonotonicClock {
  now(): number;
}

/** What the server notes on an exchange while it serves it. */
export interface AccessNote {
  /** Monotonic time the request was taken (`start`). */
  readonly startedAt: number;
  /** Wall time the request was taken (epoch ms). */
  readonly time: number;
  /** Bytes the connection had taken before this response (read when it gets the socket). */
  bytesBefore: number;
  /** Bytes the connection had taken once this response was all handed to it. */
  bytesAfter?: number;
  /** Monotonic time the head was handed to node:http (`head`). */
  headAt?: number;
  /** The server's name for the response's cache outcome (`hit`, `miss`, `peer`, `error`...). */
  kind?: string;
  /** The origin URL the request maps to. */
  originUrl?: string;
  /** Where the body came from, when the server knows better than the Cache-Status says. */
  served?: ServedBy;
  /** The forward request's time to its response head (ms). */
  upstreamMs?: number;
}

const NOTE = Symbol('coral.access.note');
type Noted = ServerResponse & { [NOTE]?: AccessNote };

/** The note of an exchange `start` took, if any. */
export function noteOf(res: ServerResponse): AccessNote | undefined {
  return (res as Noted)[NOTE];
}

/** node:http's serialized status line and header block, once the head is written. */
function headerBlock(res: ServerResponse): string | undefined {
  // `_header` is node:http's own field for the head as written (set by writeHead, or by the
  // proxy's prepared hot-cache heads): the one place every response's fields are, whichever way
  // they were given (`writeHead` with a flat array stores none of them for `getHeader`).
  const h = (res as ServerResponse & { _header?: unknown })._header;
  return typeof h === 'string' ? h : undefined;
}

/** The value of field `name` (lower case) in a serialized header block. */
function fieldOf(block: string | undefined, name: string): string | undefined {
  if (block === undefined) return undefined;
  // The proxy writes its field names in lower case: looked for as they are first, in any case
  // only when not found so.
  let at = block.indexOf(`\r\n${name}:`);
  if (at < 0) at = block.slice(0, 16384).toLowerCase().indexOf(`\r\n${name}:`);
  if (at < 0) return undefined;
  const from = at + name.length + 3;
  const end = block.indexOf('\r\n', from);
  return block.slice(from, end < 0 ? undefined : end).trim();
}

/** Host, Referer and User-Agent from raw field lines (the first of each). */
function requestFields(raw: readonly string[]): {
  host?: string;
  referer?: string;
  userAgent?: string;
} {
  const out: { host?: string; referer?: string; userAgent?: string } = {};
  for (let i = 0; i < raw.length; i += 2) {
    const k = raw[i]!;
    const n = k.length;
    if (n !== 4 && n !== 7 && n !== 10) continue;
    const name = k.toLowerCase();
    if (name === 'host') out.host ??= raw[i + 1]!;
    else if (name === 'referer') out.referer ??= raw[i + 1]!;
    else if (name === 'user-agent') out.userAgent ??= raw[i + 1]!;
  }
  return out;
}

/** A Host value without its port, lower case (IPv6 literals keep their brackets off). */
function hostName(host: string): string {
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    return (end > 0 ? host.slice(1, end) : host).toLowerCase();
  }
  const colon = host.indexOf(':');
  return (colon >= 0 ? host.slice(0, colon) : host).toLowerCase();
}

/** The URL as requested: an absolute-form target as sent, else scheme, Host and target. */
function urlOf(tls: boolean, host: string, target: string): string {
  if (!target.startsWith('/') && target.includes('://')) return target;
  return `${tls ? 'https' : 'http'}://${host}${target}`;
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;

/** A member's node id prefix from a Cache-Status detail (`peer-0123456789ab`). */
function peerOf(detail: string | undefined): string | undefined {
  const m = detail === undefined ? null : /(?:^|\s)peer-([0-9a-f]+)/.exec(detail);
  return m ? m[1] : undefined;
}

export interface ExchangeTrackerComponents {
  /** Wall time of `AccessRecord.time`. */
  clock: Clock;
  /** Durations (default `performance`). */
  monotonic?: MonotonicClock;
  /** Receives each record as its response closes. */
  onRecord: (record: AccessRecord) => void;
}

export interface ExchangeTrackerOptions {
  /** The name this cache gives its Cache-Status member (the proxy's `Coral`). */
  cacheName: string;
  /** Prefix of request ids (default: 8 random hex digits, one per tracker). */
  idPrefix?: string;
}

export class ExchangeTracker {
  readonly #clock: Clock;
  readonly #mono: MonotonicClock;
  readonly #onRecord: (record: AccessRecord) => void;
  readonly #cacheName: string;
  readonly #prefix: string;
  #seq = 0;

  constructor(components: ExchangeTrackerComponents, options: ExchangeTrackerOptions) {
    this.#clock = components.clock;
    this.#mono = components.monotonic ?? performance;
    this.#onRecord = components.onRecord;
    this.#cacheName = options.cacheName;
    this.#prefix = options.idPrefix ?? randomBytes(4).toString('hex');
  }

  /** Take the exchange: called first in the request handler. */
  start(req: IncomingMessage, res: ServerResponse): void {
    const note: AccessNote = {
      startedAt: this.#mono.now(),
      time: this.#clock.now(),
      bytesBefore: req.socket.bytesWritten,
    };
    (res as Noted)[NOTE] = note;
    // A pipelined request's response waits for the one before it: its bytes start when node:http
    // hands it the socket. They end at 'prefinish' (all of it is on the socket), before node:http
    // gives the socket to the next response ('finish' and 'close' come after that).
    if (!res.socket) res.once('socket', () => (note.bytesBefore = req.socket.bytesWritten));
    res.once('prefinish', () => (note.bytesAfter = req.socket.bytesWritten));
    res.once('close', () => this.#done(req, res, note));
  }

  /** The head of `res` is written: its cache kind, and the time to first byte. */
  head(res: ServerResponse, kind: string): void {
    const note = (res as Noted)[NOTE];
    if (note === undefined || note.headAt !== undefined) return;
    note.headAt = this.#mono.now();
    note.kind = kind;
  }

  #done(req: IncomingMessage, res: ServerResponse, note: AccessNote): void {
    const end = this.#mono.now();
    const socket = req.socket;
    const tls = (socket as TLSSocket).encrypted === true;
    const fields = requestFields(req.rawHeaders);
    const hostHeader = fields.host ?? '';
    const sent = res.headersSent;
    const block = sent ? headerBlock(res) : undefined;
    const cache = cacheFacts(fieldOf(block, 'cache-status'), this.#cacheName);
    const r: AccessRecord = {
      time: note.time,
      client: socket.remoteAddress ?? '',
      method: req.method ?? '',
      host: hostName(hostHeader),
      url: urlOf(tls, hostHeader, req.url ?? ''),
      protocol: `HTTP/${req.httpVersion}`,
      status: sent ? res.statusCode : 0,
      bytes: Math.max(0, (note.bytesAfter ?? socket.bytesWritten) - note.bytesBefore),
      cache,
      served: note.served ?? this.#served(note, cache),
      totalMs: round(end - note.startedAt),
      requestId: `${this.#prefix}-${(++this.#seq).toString(36)}`,
      aborted: !res.writableFinished,
    };
    if (socket.remotePort !== undefined) r.clientPort = socket.remotePort;
    if (note.originUrl !== undefined) r.originUrl = note.originUrl;
    if (note.upstreamMs !== undefined) r.upstreamMs = round(note.upstreamMs);
    if (note.headAt !== undefined) r.ttfbMs = round(note.headAt - note.startedAt);
    if (tls) {
      const v = (socket as TLSSocket).getProtocol?.();
      if (v) r.tls = v;
    }
    if (fields.referer !== undefined) r.referer = fields.referer;
    if (fields.userAgent !== undefined) r.userAgent = fields.userAgent;
    this.#onRecord(r);
  }

  /** Where the body came from when the server did not say: from its kind and Cache-Status. */
  #served(note: AccessNote, cache: AccessRecord['cache']): ServedBy {
    if (note.kind === 'peer' || cache.fwd === 'peer') {
      const peer = peerOf(cache.detail);
      return peer === undefined ? { from: 'peer' } : { from: 'peer', peer };
    }
    switch (cache.result) {
      case 'hit':
      case 'stale':
      case 'revalidated':
        return { from: 'memory' };
      case 'error':
        return { from: 'node' };
      default:
        return { from: cache.fwd === undefined ? 'node' : 'origin' };
    }
  }
}
