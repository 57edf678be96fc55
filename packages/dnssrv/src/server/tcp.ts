/**
 * DNS over TCP (RFC 7766): two-byte length framing with pipelining, and the limits that keep one
 * source from holding the port (RFC 7766 §10: "limit the number of simultaneous connections per
 * client, and overall; close idle connections").
 *
 * - **per source**: at most `maxConnectionsPerSource` (16) connections from one source — an IPv4
 *   address (`ipv4PrefixLength` 32) or an IPv6 /64 (`ipv6PrefixLength` 64, one host's subnet); a
 *   further connection from it is closed at once;
 * - **overall**: at most `maxConnections` (256). When full, a new connection takes the place of
 *   the connection that has been idle longest — no answer owed to it, least recently given a
 *   complete query — which is closed (RFC 7766 §6.2.3 lets a server close idle connections under
 *   load; clients reconnect). Only when every connection is owed an answer is the new one closed;
 * - **idle**: `idleTimeoutMs` (10 s) without a complete query closes a connection; trickled bytes
 *   of an incomplete query do not count as activity;
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
import type { Clock, TimerHandle } from '@coral/runtime';
import type { Peer } from '../answer/meta.js';
import { prefixKey } from '../net/ip.js';

export const DEFAULT_TCP_MAX_CONNECTIONS_PER_SOURCE = 16;
export const DEFAULT_TCP_IPV4_PREFIX = 32;
export const DEFAULT_TCP_IPV6_PREFIX = 64;
/** Answers buffered for a connection before we stop reading its queries. */
const MAX_BUFFERED_BYTES = 64 * 1024;

export interface TcpConnectionLimits {
  idleTimeoutMs: number;
  maxMessageBytes: number;
  maxConnections: number;
  maxConnectionsPerSource: number;
  maxQueriesPerConnection: number;
  ipv4PrefixLength: number;
  ipv6PrefixLength: number;
}

export interface TcpComponents {
  clock: Clock;
  /** The address of a socket's peer, as the pipeline wants it. */
  peerOf(address: string, port: number): Peer;
  /** Answer one framed query: the answer's bytes, null for none, or a promise of either. */
  respond(frame: Buffer, peer: Peer): Buffer | null | Promise<Buffer | null>;
  /** An exception or rejection from `respond` (logged and counted by the server). */
  internalError(err: unknown): void;
}

interface Conn {
  sock: net.Socket;
  source: string;
  /** Answers owed (queries received and not yet written). */
  pending: number;
}

export class TcpConnections {
  readonly #clock: Clock;
  readonly #components: TcpComponents;
  readonly #limits: TcpConnectionLimits;
  /** Open connections, least recently active (given a complete query) first. */
  readonly #conns = new Map<net.Socket, Conn>();
  readonly #perSource = new Map<string, number>();
  readonly counters = {
    connections: 0,
    rejected: 0,
    rejectedPerSource: 0,
    evicted: 0,
    oversize: 0,
    idleClosed: 0,
  };

  constructor(components: TcpComponents, limits: TcpConnectionLimits) {
    this.#clock = components.clock;
    this.#components = components;
    this.#limits = limits;
  }

  get open(): number {
    return this.#conns.size;
  }

  /** Connections open from the source of `address` (its /32 or /64). */
  openFrom(peer: Peer): number {
    return this.#perSource.get(this.#sourceOf(peer)) ?? 0;
  }

  /** Close every connection (server close). */
  closeAll(): void {
    for (const c of [...this.#conns.values()]) this.#drop(c);
  }

  /** A new connection was accepted. */
  accept(sock: net.Socket): void {
    sock.on('error', () => {});
    const peer = this.#components.peerOf(sock.remoteAddress ?? '0.0.0.0', sock.remotePort ?? 0);
    const source = this.#sourceOf(peer);
    const fromSource = this.#perSource.get(source) ?? 0;
    if (fromSource >= this.#limits.maxConnectionsPerSource) {
      this.counters.rejectedPerSource++;
      sock.destroy();
      return;
    }
    if (this.#conns.size >= this.#limits.maxConnections) {
      const victim = this.#idlest();
      if (!victim) {
        this.counters.rejected++;
        sock.destroy();
        return;
      }
      this.counters.evicted++;
      this.#drop(victim);
    }
    this.counters.connections++;
    const conn: Conn = { sock, source, pending: 0 };
    this.#conns.set(sock, conn);
    this.#perSource.set(source, fromSource + 1);
    this.#serve(conn, peer);
  }

  #sourceOf(peer: Peer): string {
    const b = peer.bytes;
    return prefixKey(
      b,
      b.length === 4 ? this.#limits.ipv4PrefixLength : this.#limits.ipv6PrefixLength,
    );
  }

  /** The connection idle longest: owed no answer, least recently given a query. */
  #idlest(): Conn | undefined {
    for (const c of this.#conns.values()) if (c.pending === 0) return c;
    return undefined;
  }

  /** Forget a connection and close it (idempotent). */
  #drop(c: Conn): void {
    if (this.#conns.get(c.sock) === c) {
      this.#conns.delete(c.sock);
      const n = (this.#perSource.get(c.source) ?? 1) - 1;
      if (n > 0) this.#perSource.set(c.source, n);
      else this.#perSource.delete(c.source);
    }
    c.sock.destroy();
  }

  #serve(conn: Conn, peer: Peer): void {
    const { sock } = conn;
    const limits = this.#limits;
    let buf: Buffer = Buffer.alloc(0);
    let queries = 0;
    let ending = false;
    const onIdle = (): void => {
      this.counters.idleClosed++;
      this.#drop(conn);
    };
    let timer: TimerHandle = this.#clock.setTimeout(onIdle, limits.idleTimeoutMs);
    const write = (b: Buffer | null): void => {
      conn.pending--;
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
      if (ending && conn.pending === 0) sock.end();
    };
    sock.on('data', (chunk: Buffer) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      while (buf.length >= 2 && !ending) {
        const len = buf.readUInt16BE(0);
        if (len === 0 || len > limits.maxMessageBytes) {
          this.counters.oversize++;
          this.#drop(conn);
          return;
        }
        if (buf.length < 2 + len) break;
        const frame = buf.subarray(2, 2 + len);
        buf = buf.subarray(2 + len);
        // Only a complete query counts as activity: trickling bytes cannot hold a slot forever.
        timer.cancel();
        timer = this.#clock.setTimeout(onIdle, limits.idleTimeoutMs);
        if (this.#conns.get(sock) === conn) {
          this.#conns.delete(sock); // most recently active last: evicted last
          this.#conns.set(sock, conn);
        }
        queries++;
        if (queries >= limits.maxQueriesPerConnection) ending = true;
        conn.pending++;
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
      if (conn.pending === 0) sock.end();
    });
    sock.on('close', () => {
      timer.cancel();
      this.#drop(conn);
    });
  }
}
