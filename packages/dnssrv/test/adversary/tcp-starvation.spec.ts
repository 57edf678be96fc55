/**
 * Adversary: idle DNS-over-TCP connections. Before, 256 idle connections from one source filled
 * the server's table and every other client was refused until the idle timeout (10 s) freed slots.
 * Now one source holds at most `tcp.maxConnectionsPerSource` (16) and a full table gives way to a
 * newcomer. The server's clock is manual and never advanced here: no idle timeout fires, so
 * whatever the victim gets, it gets without waiting for one. (The victim's latency under this
 * attack is measured by `npm run bench:dns-attack`, not asserted here.)
 */
import type net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeQuery, fleet, frame, header, node, tcpConnect, waitFor } from '../helpers.js';
import { start, type Started } from '../server/support.js';

let s: Started | undefined;
const open: net.Socket[] = [];
afterEach(async () => {
  for (const c of open.splice(0)) c.destroy();
  await s?.server.close();
  s = undefined;
});

/** Open `n` connections from `from` at once; those the server closes on arrival are left out. */
async function flood(port: number, from: string, n: number): Promise<void> {
  const got = await Promise.allSettled(Array.from({ length: n }, () => tcpConnect(port, from)));
  for (const r of got) if (r.status === 'fulfilled') open.push(r.value);
}

/** One query over a new TCP connection from `from`; resolves with the answer. */
async function ask(port: number, from: string, id: number): Promise<Buffer> {
  const sock = await tcpConnect(port, from);
  open.push(sock);
  const answer = new Promise<Buffer>((resolve, reject) => {
    sock.once('data', (c: Buffer) => resolve(c.subarray(2)));
    sock.once('close', () => reject(new Error('closed without an answer')));
  });
  sock.write(frame(encodeQuery({ name: 'www.example.com.nyud.net', id })));
  return answer;
}

describe('adversary: idle DNS TCP connections', () => {
  it('300 idle connections from one source: another source is answered over TCP at once', async () => {
    s = await start({}, fleet().add(node(2)));
    const t0 = s.clock.now();
    await flood(s.port, '127.66.1.2', 300);
    await waitFor(() => {
      const t = s!.server.stats().tcp;
      return t.connections + t.rejectedPerSource === 300;
    });
    expect(s.server.stats().tcp).toMatchObject({
      connections: 16,
      rejectedPerSource: 284,
      open: 16,
    });

    const answer = await ask(s.port, '127.77.1.3', 77);
    expect(header(answer)).toMatchObject({ id: 77, rcode: 0, an: 2 });
    // Answered while the attacker's 16 connections are still open, and with no timer run.
    expect(s.server.stats().tcp).toMatchObject({ open: 17, idleClosed: 0, evicted: 0 });
    expect(s.clock.now()).toBe(t0);
  });

  it('idle connections from many sources fill the table: newcomers still get in and are answered', async () => {
    s = await start({}, fleet().add(node(2)));
    // 40 sources x 16 connections = 640 > the 256 the table holds.
    for (let i = 1; i <= 40; i++) await flood(s.port, `127.66.2.${i}`, 16);
    await waitFor(() => s!.server.stats().tcp.connections === 640);
    expect(s.server.stats().tcp).toMatchObject({ open: 256, evicted: 640 - 256, rejected: 0 });
    // Five victims, one after another, each answered; each newcomer displaced an idle attacker.
    for (let i = 0; i < 5; i++) {
      const answer = await ask(s.port, `127.77.2.${i + 1}`, 100 + i);
      expect(header(answer)).toMatchObject({ id: 100 + i, an: 2 });
    }
    expect(s.server.stats().tcp).toMatchObject({ open: 256, idleClosed: 0 });
  });
});
