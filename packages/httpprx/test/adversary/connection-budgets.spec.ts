/**
 * Adversary: strangers holding the proxy's connections (issue 31). Before, the proxy port had no
 * per-client limit, a connection that sent nothing was kept 75 s and a header line every 2 s kept
 * a slowloris connection forever. Now both listeners (http, https) run under a connection budget
 * (@coral/connguard). Its clock is manual here and moves only where a test says so: a victim
 * served during a flood is served with no timeout run.
 */
import { once } from 'node:events';
import net from 'node:net';
import tls from 'node:tls';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'node:http';
import { ConnectionBudget, type ListenerBudget } from '@coral/connguard';
import { ManualClock, waitFor } from '@coral/testkit';
import { readReply, startOrigin, startProxy } from '../helpers/harness.js';
import type { Reply } from '../helpers/harness.js';
import type { Origin, ProxyHarness } from '../helpers/harness.js';
import { listenTls, makePki } from '../helpers/tls.js';
import type { TestPki } from '../helpers/tls.js';

let origin: Origin | undefined;
let px: ProxyHarness | undefined;
const sockets: net.Socket[] = [];
let pki: TestPki;
beforeAll(async () => {
  pki = await makePki();
});
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await px?.close();
  await origin?.close();
  px = origin = undefined;
});

async function setup(limits: Record<string, number>) {
  origin = await startOrigin((_req, res) => {
    res.setHeader('cache-control', 'max-age=60');
    res.end('hello');
  });
  const clock = new ManualClock();
  const budget = new ConnectionBudget({ clock });
  px = await startProxy({ connections: limits }, { connections: budget });
  return { clock, budget, host: origin.coralHost };
}

async function connect(port: number, from: string): Promise<net.Socket> {
  const s = net.connect({ port, host: '127.0.0.1', localAddress: from });
  s.on('error', () => {});
  sockets.push(s);
  await once(s, 'connect');
  return s;
}

describe('adversary: connection budgets on the proxy listeners', () => {
  it('idle flood from four addresses of a /24 and one outside it: capped, counted, a client served', async () => {
    const { budget, host } = await setup({ perAddress: 6, perPrefix: 16 });
    const port = px!.port;
    for (const from of ['127.0.20.1', '127.0.20.2', '127.0.20.3', '127.0.20.4', '127.0.21.1']) {
      for (let i = 0; i < 10; i++) await connect(port, from);
    }
    const http = () => budget.stats().listeners.http!;
    await waitFor(() => http().counters.admitted + sumOf(http().counters.refused) === 50);
    // The /24: 6 + 6 + 4 (its 16), then only refusals; 127.0.21.1: 6 of 10.
    expect(http().counters.admitted).toBe(22);
    expect(http().counters.refused).toMatchObject({
      'per-address': 4 + 4 + 4,
      'per-prefix': 6 + 10,
    });
    const reply = await getFrom(port, host, '127.0.22.1');
    expect(reply.status).toBe(200);
    expect(reply.body.toString()).toBe('hello');
    expect(http().open).toBeGreaterThanOrEqual(22);
  });

  it('slowloris over http: a header line before every check, closed at the header timeout', async () => {
    const { clock, budget } = await setup({ idleTimeoutMs: 1_000, headerTimeoutMs: 8_000 });
    const loris = await connect(px!.port, '127.0.23.1');
    await trickle(loris, clock, 7, budget.get('http')!);
    expect(loris.closed).toBe(false);
    await clock.advance(1_000);
    await waitFor(() => loris.closed, { what: 'slowloris closed' });
    expect(budget.stats().listeners.http!.counters.closed['header-timeout']).toBe(1);
  });

  it('slowloris over https: the handshake is no request, the trickled head is closed all the same', async () => {
    const { clock, budget } = await setup({ idleTimeoutMs: 1_000, headerTimeoutMs: 8_000 });
    const tlsPort = await listenTls(px!, pki);
    const raw = await connect(tlsPort, '127.0.24.1');
    const loris = tls.connect({
      socket: raw,
      servername: 'x.nyud.net',
      ca: [pki.zoneCa.cert],
      ALPNProtocols: ['http/1.1'],
    });
    loris.on('error', () => {});
    await once(loris, 'secureConnect');
    await trickle(loris, clock, 7, budget.get('https')!);
    expect(loris.closed).toBe(false);
    await clock.advance(1_000);
    await waitFor(() => loris.closed, { what: 'TLS slowloris closed' });
    expect(budget.stats().listeners.https!.counters.closed['header-timeout']).toBe(1);
  });

  it('a connection that never sends a byte is closed at the idle timeout', async () => {
    const { clock, budget } = await setup({ idleTimeoutMs: 1_000 });
    const idle = await connect(px!.port, '127.0.25.1');
    await waitFor(() => budget.stats().listeners.http!.open === 1);
    await clock.advance(1_000);
    await waitFor(() => idle.closed, { what: 'idle connection closed' });
    expect(budget.stats().listeners.http!.counters.closed['idle-timeout']).toBe(1);
  });
});

/**
 * The start of a request, then one header line per second of the budget's clock for `seconds`,
 * each one read by the server before the clock moves.
 */
async function trickle(
  s: net.Socket,
  clock: ManualClock,
  seconds: number,
  listener: ListenerBudget,
): Promise<void> {
  const conn = await waitFor(() => listener.connections()[0]);
  let sent = 0;
  const send = async (text: string) => {
    s.write(text);
    sent += text.length;
    await waitFor(() => conn.bytesRead === sent, { what: 'the server to read the line' });
  };
  await send('GET / HTTP/1.1\r\nHost: a.nyud.net\r\n');
  for (let t = 0; t < seconds; t++) {
    await clock.advance(1_000);
    await send(`X-Slow-${t}: ${'x'.repeat(16)}\r\n`);
  }
}

/** A GET through the proxy from the local address `from`. */
function getFrom(port: number, host: string, from: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/page',
        headers: { host },
        localAddress: from,
        agent: false,
      },
      (res) => void readReply(res).then(resolve, reject),
    );
    req.on('error', reject);
    req.end();
  });
}

function sumOf(r: Record<string, number>): number {
  return Object.values(r).reduce((a, b) => a + b, 0);
}
