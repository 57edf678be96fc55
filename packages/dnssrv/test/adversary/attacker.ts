/**
 * The attacker in the adversary tests: UDP sockets of its own, bound to its own 127.x addresses
 * (Linux routes all of 127.0.0.0/8 to loopback), sending to the server at 127.0.0.1 and keeping
 * whatever comes back. Every socket made here is closed after each test.
 */
import dgram from 'node:dgram';
import { afterEach } from 'vitest';

export interface UdpAttacker {
  readonly address: string;
  /** Every datagram received, in order. */
  readonly got: Buffer[];
  send(msg: Buffer, port: number): void;
  close(): void;
}

export async function udpAttacker(address: string): Promise<UdpAttacker> {
  const sock = dgram.createSocket('udp4');
  await new Promise<void>((resolve, reject) => {
    sock.once('error', reject);
    sock.bind(0, address, () => resolve());
  });
  const got: Buffer[] = [];
  sock.on('message', (m) => got.push(m));
  const attacker: UdpAttacker = {
    address,
    got,
    send: (msg, port) => sock.send(msg, port, '127.0.0.1'),
    close: () => {
      if (live.delete(attacker)) sock.close();
    },
  };
  live.add(attacker);
  return attacker;
}

const live = new Set<UdpAttacker>();
afterEach(() => {
  for (const a of [...live]) a.close();
});

/** Sockets on many addresses at once (one per entry of `addresses`). */
export function udpAttackers(addresses: string[]): Promise<UdpAttacker[]> {
  return Promise.all(addresses.map((a) => udpAttacker(a)));
}
