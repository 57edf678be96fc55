/**
 * TcpConnections with a fake socket: what real sockets on loopback cannot show deterministically
 * (a client that never reads fills the kernel's buffers only after megabytes).
 */
import { EventEmitter } from 'node:events';
import type net from 'node:net';
import { describe, expect, it } from 'vitest';
import { ConnectionBudget } from '@coral/connguard';
import { ManualClock } from '@coral/testkit';
import { parseIp } from '../../src/net/ip.js';
import { TcpConnections, tcpBudgetLimits } from '../../src/server/tcp.js';
import { frame } from '../helpers.js';

class FakeSocket extends EventEmitter {
  remoteAddress = '192.0.2.7';
  remotePort = 5555;
  bytesRead = 0;
  writableLength = 0;
  writable = true;
  destroyed = false;
  paused = false;
  written: Buffer[] = [];
  write(b: Buffer): boolean {
    this.written.push(b);
    this.writableLength += b.length;
    return false;
  }
  pause(): this {
    this.paused = true;
    return this;
  }
  resume(): this {
    this.paused = false;
    return this;
  }
  isPaused(): boolean {
    return this.paused;
  }
  end(): this {
    return this;
  }
  destroy(): this {
    if (!this.destroyed) {
      this.destroyed = true;
      this.emit('close');
    }
    return this;
  }
}

function connections(answer: Buffer) {
  const clock = new ManualClock();
  const errors: unknown[] = [];
  const listener = new ConnectionBudget({ clock }).listener(
    'dns-tcp',
    tcpBudgetLimits({
      idleTimeoutMs: 10_000,
      maxConnections: 10,
      maxConnectionsPerSource: 2,
      ipv4PrefixLength: 32,
      ipv6PrefixLength: 64,
    }),
  );
  const tcp = new TcpConnections(
    {
      listener,
      peerOf: (address, port) => ({ address, port, bytes: parseIp(address)! }),
      respond: () => answer,
      internalError: (err) => errors.push(err),
    },
    { maxMessageBytes: 4096, maxQueriesPerConnection: 1000 },
  );
  return { tcp, clock, errors };
}

describe('TcpConnections', () => {
  it('stops reading from a client that does not read its answers, until they drain', () => {
    const { tcp } = connections(Buffer.alloc(1000));
    const sock = new FakeSocket();
    tcp.accept(sock as unknown as net.Socket);
    const q = frame(Buffer.alloc(20));
    for (let i = 0; i < 65; i++) sock.emit('data', q);
    expect(sock.paused).toBe(false); // 65 x 1002 bytes = 65,130 ≤ 64 KiB
    sock.emit('data', q);
    expect(sock.paused).toBe(true);
    sock.writableLength = 0;
    sock.emit('drain');
    expect(sock.paused).toBe(false);
    expect(sock.written).toHaveLength(66);
  });

  it('per-source cap by IPv6 /64; a closed connection frees its slot', () => {
    const { tcp } = connections(Buffer.alloc(10));
    const from = (address: string) => {
      const s = new FakeSocket();
      s.remoteAddress = address;
      tcp.accept(s as unknown as net.Socket);
      return s;
    };
    const a = from('2001:db8:0:1::1');
    from('2001:db8:0:1::2');
    const c = from('2001:db8:0:1:ffff::3'); // same /64: over the cap of 2
    expect(c.destroyed).toBe(true);
    expect(from('2001:db8:0:2::1').destroyed).toBe(false); // next /64
    a.destroy();
    expect(from('2001:db8:0:1::9').destroyed).toBe(false);
    expect(tcp.counters).toMatchObject({ connections: 4, rejectedPerSource: 1 });
    expect(tcp.open).toBe(3);
  });
});
