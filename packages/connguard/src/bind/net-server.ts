/**
 * The thin binding of a `ListenerBudget` to a `net.Server` (or `tls.Server`, `http.Server`,
 * `https.Server`): every accepted socket is admitted or destroyed at once, a closed socket gives
 * its slot back, and a failed accept (EMFILE, ENFILE, ENOMEM: `accept` errors the server emits
 * while it goes on listening) is counted and logged — never an uncaught `error` event.
 */
import type net from 'node:net';
import { systemClock, type Clock } from '@coral/runtime';
import type { GuardedConnection, ListenerBudget } from '../budget.js';

/** Where accept errors are logged (pino's shape). */
export interface GuardLogger {
  warn(obj: object, msg?: string): void;
}

export interface GuardComponents {
  logger?: GuardLogger;
  /** Rate of the accept-error log line (default the system clock). */
  clock?: Clock;
}

/** One accept-error line per this many ms at most; the others are counted in it. */
export const ACCEPT_ERROR_LOG_INTERVAL_MS = 10_000;

export interface GuardedServer {
  readonly listener: ListenerBudget;
  /** The connection of an accepted socket (the raw one, or a TLS socket over it). */
  connectionOf(socket: net.Socket): GuardedConnection | undefined;
}

const keyOf = (s: net.Socket): string => `${s.remoteAddress ?? ''}|${s.remotePort ?? 0}`;

/**
 * Guard `server` with `listener`. Call before `listen()`. With TLS (`tls: true`) the decrypted
 * bytes count from the end of the handshake on (see {@link GuardedConnection.track}).
 */
export function guardServer(
  server: net.Server,
  listener: ListenerBudget,
  components: GuardComponents = {},
  options: { tls?: boolean } = {},
): GuardedServer {
  const bySocket = new WeakMap<net.Socket, GuardedConnection>();
  /** Raw sockets by remote address and port, until their TLS socket is known. */
  const pending = new Map<string, GuardedConnection>();
  server.on('connection', (sock: net.Socket) => {
    const conn = listener.admit(sock.remoteAddress, {
      close: () => sock.destroy(),
      bytesRead: () => sock.bytesRead,
    });
    if (!conn) {
      sock.destroy();
      return;
    }
    bySocket.set(sock, conn);
    const key = keyOf(sock);
    if (options.tls) pending.set(key, conn);
    sock.once('close', () => {
      conn.release();
      if (pending.get(key) === conn) pending.delete(key);
    });
  });
  if (options.tls) {
    server.on('secureConnection', (tlsSock: net.Socket) => {
      const key = keyOf(tlsSock);
      const conn = pending.get(key);
      if (!conn) return;
      pending.delete(key);
      bySocket.set(tlsSock, conn);
      conn.track(() => tlsSock.bytesRead);
    });
  }
  // Accept errors come as 'error' events on a server that keeps listening: without a listener
  // they would be uncaught exceptions. Listen errors (EADDRINUSE) still reach whoever waits on
  // 'listening', since this handler is only added once the server listens.
  const clock = components.clock ?? systemClock;
  let lastLog = -Infinity;
  let unlogged = 0;
  server.once('listening', () => {
    server.on('error', (err: NodeJS.ErrnoException) => {
      listener.acceptError(err.code ?? 'UNKNOWN');
      unlogged++;
      const now = clock.now();
      if (now - lastLog < ACCEPT_ERROR_LOG_INTERVAL_MS) return;
      lastLog = now;
      components.logger?.warn(
        { listener: listener.name, code: err.code, syscall: err.syscall, errors: unlogged },
        `${listener.name}: accepting a connection failed (${err.code ?? err.message}); still listening`,
      );
      unlogged = 0;
    });
  });
  return {
    listener,
    connectionOf: (socket) => bySocket.get(socket),
  };
}
