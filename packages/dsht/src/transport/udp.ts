/** UDP transport over node:dgram, IPv4 or IPv6 by the bind address. */
import dgram from 'node:dgram';
import { isIPv6 } from 'node:net';
import type { Address } from '../contact.js';
import { TransportError } from '../errors.js';
import type { DatagramHandler, Transport } from './transport.js';

export interface UdpTransportOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
}

export class UdpTransport implements Transport {
  #socket: dgram.Socket | undefined;
  #handler: DatagramHandler | undefined;
  #address: Address;
  /** Datagrams that failed to send (socket errors), for diagnostics. */
  sendErrors = 0;

  constructor(_components: object, options: UdpTransportOptions) {
    this.#address = { ip: options.host, port: options.port };
  }

  get address(): Address {
    return this.#address;
  }

  onDatagram(handler: DatagramHandler): void {
    this.#handler = handler;
  }

  async start(): Promise<void> {
    const socket = dgram.createSocket({ type: isIPv6(this.#address.ip) ? 'udp6' : 'udp4' });
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error): void =>
        reject(
          new TransportError(
            `cannot bind ${this.#address.ip}:${this.#address.port}: ${err.message}`,
            { cause: err },
          ),
        );
      socket.once('error', onError);
      socket.bind(this.#address.port, this.#address.ip, () => {
        socket.off('error', onError);
        resolve();
      });
    });
    socket.on('error', () => {
      this.sendErrors++;
    });
    socket.on('message', (msg, rinfo) => {
      this.#handler?.(new Uint8Array(msg.buffer, msg.byteOffset, msg.byteLength), {
        ip: rinfo.address,
        port: rinfo.port,
      });
    });
    this.#address = { ip: this.#address.ip, port: socket.address().port };
    this.#socket = socket;
  }

  send(data: Uint8Array, to: Address): void {
    const s = this.#socket;
    if (!s) return;
    s.send(data, to.port, to.ip, (err) => {
      if (err) this.sendErrors++;
    });
  }

  async close(): Promise<void> {
    const s = this.#socket;
    this.#socket = undefined;
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  }
}
