/**
 * The UDP side of the server: one socket bound to the DNS port, a large receive buffer to absorb
 * bursts, replies sent to the address a datagram came from. Answering is the pipeline's job; this
 * only moves datagrams.
 */
import dgram from 'node:dgram';
import dns from 'node:dns';
import { once } from 'node:events';
import net from 'node:net';
import type { DnsLogger } from './types.js';

export interface UdpComponents {
  logger: DnsLogger;
  /** One datagram arrived. */
  onMessage: (msg: Buffer, rinfo: dgram.RemoteInfo) => void;
}

export class UdpListener {
  readonly #logger: DnsLogger;
  readonly #onMessage: UdpComponents['onMessage'];
  #sock: dgram.Socket | undefined;

  constructor(components: UdpComponents) {
    this.#logger = components.logger;
    this.#onMessage = components.onMessage;
  }

  /**
   * Bind to `port` (0 = any) on `host`; resolves with the port bound. Rejects with the bind error.
   * With `reusePort`, SO_REUSEPORT: other sockets of this user bind the same port and the kernel
   * spreads datagrams over them by a hash of the source address and port (a node's workers).
   */
  async bind(
    port: number,
    host: string,
    receiveBufferBytes: number,
    reusePort = false,
  ): Promise<number> {
    const sock = dgram.createSocket({
      type: host.includes(':') ? 'udp6' : 'udp4',
      lookup: lookupLiteral,
      ...(reusePort ? { reusePort: true } : {}),
    });
    // Listen first: with lookupLiteral, bind() can emit 'listening' before it returns.
    const listening = once(sock, 'listening'); // rejects with the bind error
    sock.bind(port, host);
    await listening;
    try {
      sock.setRecvBufferSize(receiveBufferBytes);
    } catch (err) {
      this.#logger.warn({ component: 'dnssrv', err }, 'cannot set the UDP receive buffer');
    }
    sock.on('error', (err) => this.#logger.warn({ err }, 'udp socket error'));
    sock.on('message', this.#onMessage);
    this.#sock = sock;
    return sock.address().port;
  }

  /**
   * Queue an answer; the queue is sent once the datagrams already read in this turn of the event
   * loop have been answered (setImmediate runs right after the poll phase). Under load libuv reads
   * up to 32 datagrams per turn, and their answers then go out back to back: a client blocked in
   * its receive call is woken once for the batch, not once per answer (on loopback the sender's
   * send call does the receiver's wake-up, which is most of its cost). A lone query waits for
   * nothing but that hop.
   */
  send(b: Buffer, rinfo: dgram.RemoteInfo): void {
    this.#queue.push(b, rinfo);
    if (!this.#flushing) {
      this.#flushing = true;
      setImmediate(this.#flush);
    }
  }

  readonly #queue: (Buffer | dgram.RemoteInfo)[] = [];
  #flushing = false;
  readonly #flush = (): void => {
    this.#flushing = false;
    const q = this.#queue;
    const sock = this.#sock;
    for (let i = 0; i < q.length; i += 2) {
      const rinfo = q[i + 1] as dgram.RemoteInfo;
      try {
        // A forged source (port 0, ...) makes send() throw synchronously: never out of the loop.
        sock?.send(q[i] as Buffer, rinfo.port, rinfo.address);
      } catch (err) {
        this.#logger.debug({ component: 'dnssrv', err, peer: rinfo.address }, 'udp send failed');
      }
    }
    q.length = 0;
  };

  async close(): Promise<void> {
    const sock = this.#sock;
    this.#sock = undefined;
    if (sock) await new Promise<void>((r) => sock.close(() => r()));
  }
}

/**
 * The socket's address lookup. Replies go to the address a datagram came from, always an IP
 * literal: hand it back at once, where dns.lookup would answer it on the next tick (a closure and
 * a tick per reply). Anything else still goes through dns.lookup.
 */
const lookupLiteral = ((
  hostname: string,
  options: number | dns.LookupOneOptions,
  callback: (err: NodeJS.ErrnoException | null, address: string, family: number) => void,
): void => {
  const family = net.isIP(hostname);
  if (family !== 0) callback(null, hostname, family);
  else dns.lookup(hostname, typeof options === 'number' ? { family: options } : options, callback);
}) as dgram.SocketOptions['lookup'];
