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
  onMessage(msg: Buffer, rinfo: dgram.RemoteInfo): void;
}

export class UdpListener {
  readonly #logger: DnsLogger;
  readonly #onMessage: UdpComponents['onMessage'];
  #sock: dgram.Socket | undefined;

  constructor(components: UdpComponents) {
    this.#logger = components.logger;
    this.#onMessage = components.onMessage;
  }

  /** Bind to `port` (0 = any) on `host`; resolves with the port bound. Rejects with the bind error. */
  async bind(port: number, host: string, receiveBufferBytes: number): Promise<number> {
    const sock = dgram.createSocket({
      type: host.includes(':') ? 'udp6' : 'udp4',
      lookup: lookupLiteral,
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

  send(b: Buffer, rinfo: dgram.RemoteInfo): void {
    try {
      // A forged source (port 0, ...) makes send() throw synchronously: never out of the loop.
      this.#sock?.send(b, rinfo.port, rinfo.address);
    } catch (err) {
      this.#logger.debug({ component: 'dnssrv', err, peer: rinfo.address }, 'udp send failed');
    }
  }

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
