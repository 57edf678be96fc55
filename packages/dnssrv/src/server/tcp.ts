/**
 * DNS over TCP (RFC 7766): two-byte length framing with pipelining, and the limits that keep one
 * source from holding the port (RFC 7766 §10: "limit the number of simultaneous connections per
 * client, and overall; close idle connections"). Admission, shedding and the idle clock are a
 * connection budget's (@coral/connguard, listener `dns-tcp`): in a node, the same node-wide
 * ceiling as the proxy's listeners.
 *
 * - **per source**: at most `maxConnectionsPerSource` (16) connections from one source — an IPv4
 *   address (`ipv4PrefixLength` 32) or an IPv6 /64 (`ipv6PrefixLength` 64, one host's subnet); a
 *   further connection from it is closed at once;
 * - **overall**: at most `maxConnections` (256). When full, a new connection takes the place of
 *   the connection that has been idle longest — no answer owed to it, longest since its last
 *   answer — which is closed (RFC 7766 §6.2.3 lets a server close idle connections under load;
 *   clients reconnect). Only when every connection is owed an answer is the new one closed. The
 *   node's ceiling works the same way across its listeners;
 * - **idle**: `idleTimeoutMs` (10 s) without a complete query, from the connection or from the
 *   last answer, closes a connection; trickled bytes of an incomplete query do not count;
 * - `maxMessageBytes` (4096): a larger length prefix closes the connection;
 *   `maxQueriesPerConnection` (1000): then the connection is closed after its answers;
 * - a client that does not read its answers stops being read from (`sock.pause()`) once 64 KiB
 *   of answers are waiting for it, until they drain.
 *
 * So idle connections from one source, however many, cannot keep another source from being
 * answered: the first 16 fill that source's share, the rest are closed on arrival, and a full
 * table gives way to newcomers.
 */
import type net from 'node:net';
import type { GuardedConnection, ListenerBudget, ListenerLimits } from '@coral/connguard';
import type { Peer } from '../answer/meta.js';

export const DEFAULT_TCP_MAX_CONNECTIONS_PER_SOURCE = 16;
export const DEFAULT_TCP_IPV4_PREFIX = 32;
export const DEFAULT_TCP_IPV6_PREFIX = 64;
/** Answers buffered for a connection before we stop reading its queries. */
const MAX_BUFFERED_BYTES = 64 * 1024;

/** What framing itself bounds; admission and idle time are the budget's ({@link tcpBudgetLimits}). */
export interface TcpConnectionLimits {
  maxMessageBytes: number;
  maxQueriesPerConnection: number;
}

/** The `dns-tcp` listener's limits for the server's `tcp` options. */
export function tcpBudgetLimits(o: {
  idleTimeoutMs: number;
  maxConnections: number;
  maxConnectionsPerSource: number;
  ipv4PrefixLength: number;
  ipv6PrefixLength: number;
}): ListenerLimits {
  return {
    perAddress: o.maxConnectionsPerSource,
    perPrefix: 0,
    maxConnections: o.maxConnections,
    // One clock for a query: from the connection or the last answer, complete within it.
    idleTimeoutMs: o.idleTimeoutMs,
    keepAliveTimeoutMs: o.idleTimeoutMs,
    headerTimeoutMs: o.idleTimeoutMs,
    bodyTimeoutMs: 0,
    addressBits: { ipv4: o.ipv4PrefixLength, ipv6: o.ipv6PrefixLength },
  };
}

export interface TcpComponents {
  /** The `dns-tcp` listener of a connection budget (the node's, or the server's own). */
  listener: ListenerBudget;
  /** The address of a socket's peer, as the pipeline wants it. */
  peerOf(address: string, port: number): Peer;
  /** Answer one framed query: the answer's bytes, null for none, or a promise of either. */
  respond(frame: Buffer, peer: Peer): Buffer | null | Promise<Buffer | null>;
  /** An exception or rejection from `respond` (logged and counted by the server). */
  internalError(err: unknown): void;
}

interface Conn {
  sock: net.Socket;
  guard: GuardedConnection;
}

export class TcpConnections {
  readonly #components: TcpComponents;
  readonly #limits: TcpConnectionLimits;
  readonly #listener: ListenerBudget;
  readonly #conns = new Set<Conn>();
  #oversize = 0;

  constructor(components: TcpComponents, limits: TcpConnectionLimits) {
    this.#components = components;
    this.#limits = limits;
    this.#listener = components.listener;
  }

  get open(): number {
    return this.#listener.open;
  }

  /** The server's `stats().tcp` counters, from the budget's and the framing's own. */
  get counters(): {
    connections: number;
    rejected: number;
    rejectedPerSource: number;
    evicted: number;
    oversize: number;
    idleClosed: number;
  } {
    const { admitted, refused, closed } = this.#listener.counters;
    return {
      connections: admitted,
      rejected: refused['listener-full'] + refused.ceiling,
      rejectedPerSource: refused['per-address'] + refused['per-prefix'],
      evicted: closed.shed,
      oversize: this.#oversize,
      idleClosed: closed['idle-timeout'] + closed['keepalive-timeout'] + closed['header-timeout'],
    };
  }

  /** Connections open from the source of `address` (its /32 or /64). */
  openFrom(peer: Peer): number {
    return this.#listener.openFrom(peer.address);
  }

  /** Close every connection (server close). */
  closeAll(): void {
    for (const c of [...this.#conns]) this.#drop(c);
  }

  /** A new connection was accepted. */
  accept(sock: net.Socket): void {
    sock.on('error', () => {});
    const guard = this.#listener.admit(sock.remoteAddress, {
      close: () => sock.destroy(),
      bytesRead: () => sock.bytesRead,
    });
    if (!guard) {
      sock.destroy();
      return;
    }
    const peer = this.#components.peerOf(sock.remoteAddress ?? '0.0.0.0', sock.remotePort ?? 0);
    const conn: Conn = { sock, guard };
    this.#conns.add(conn);
    this.#serve(conn, peer);
  }

  /** Forget a connection and close it (idempotent). */
  #drop(c: Conn): void {
    this.#conns.delete(c);
    c.guard.release();
    c.sock.destroy();
  }

  #serve(conn: Conn, peer: Peer): void {
    const { sock, guard } = conn;
    const limits = this.#limits;
    let buf: Buffer = Buffer.alloc(0);
    let queries = 0;
    let pending = 0;
    let ending = false;
    const write = (b: Buffer | null): void => {
      pending--;
      guard.end();
      if (b && !sock.destroyed && sock.writable) {
        const len = Buffer.allocUnsafe(2);
        len.writeUInt16BE(b.length, 0);
        sock.write(Buffer.concat([len, b]));
        // A client that does not read: stop reading its queries until its answers drain.
        if (sock.writableLength > MAX_BUFFERED_BYTES && !sock.isPaused()) {
          sock.pause();
          sock.once('drain', () => sock.resume());
        }
      }
      if (ending && pending === 0) sock.end();
    };
    sock.on('data', (chunk: Buffer) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      while (buf.length >= 2 && !ending) {
        const len = buf.readUInt16BE(0);
        if (len === 0 || len > limits.maxMessageBytes) {
          this.#oversize++;
          this.#drop(conn);
          return;
        }
        if (buf.length < 2 + len) break;
        const frame = buf.subarray(2, 2 + len);
        buf = buf.subarray(2 + len);
        // Only a complete query counts as activity: trickling bytes cannot hold a slot forever.
        // Owed an answer, the connection is busy (never shed, no idle clock) until it is written.
        guard.begin();
        queries++;
        if (queries >= limits.maxQueriesPerConnection) ending = true;
        pending++;
        let r: Buffer | null | Promise<Buffer | null>;
        try {
          r = this.#components.respond(frame, peer);
        } catch (err) {
          this.#components.internalError(err);
          r = null;
        }
        if (r instanceof Promise) {
          r.then(write, (err) => {
            this.#components.internalError(err);
            write(null);
          });
        } else {
          write(r);
        }
      }
      // A partial frame larger than allowed never completes: close early.
      if (buf.length > 2 + limits.maxMessageBytes) this.#drop(conn);
    });
    sock.on('end', () => {
      ending = true;
      if (pending === 0) sock.end();
    });
    sock.on('close', () => this.#drop(conn));
  }
}
