/** The TCP-connect prober against real loopback sockets: accepted and refused both give an RTT. */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { TcpConnectProber } from '../../src/index.js';

describe('TcpConnectProber', () => {
  it('an accepted connection gives an RTT', async () => {
    const server = net.createServer((c) => c.destroy());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as net.AddressInfo).port;
    const rtt = await new TcpConnectProber({}, { port }).probe('127.0.0.1');
    expect(typeof rtt).toBe('number');
    expect(rtt!).toBeGreaterThanOrEqual(0);
    server.close();
  });

  it('a refused connection (RST) gives an RTT too', async () => {
    const server = net.createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as net.AddressInfo).port;
    await new Promise<void>((r) => server.close(() => r())); // nothing listens there now
    const rtt = await new TcpConnectProber({}, { port }).probe('127.0.0.1');
    expect(typeof rtt).toBe('number');
  });

  it('a timeout means unreachable (null); so does an abort', async () => {
    const clock = new ManualClock();
    // A socket that never connects (the network swallowed the SYN).
    const prober = new TcpConnectProber(
      { clock, connect: () => new net.Socket() },
      { timeoutMs: 1000 },
    );
    const p = prober.probe('192.0.2.1');
    await clock.advance(999);
    let settled = false;
    void p.then(() => (settled = true));
    await clock.advance(0);
    expect(settled).toBe(false);
    await clock.advance(1);
    expect(await p).toBeNull();
    const ac = new AbortController();
    const q = prober.probe('192.0.2.1', { signal: ac.signal });
    ac.abort();
    expect(await q).toBeNull();
  });
});
