/**
 * Attacks over real loopback sockets on an `http.Server` guarded by a budget on a manual clock:
 * an idle flood from several addresses while a legitimate client is served, slowloris, the
 * ceiling reached (the longest-waiting connection shed for a newcomer), and a failed accept.
 * The clock never moves unless a test says so: whatever a victim gets, it gets with no timer run.
 */
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock, waitFor } from '@coral/testkit';
import { ConnectionBudget, guardHttpServer, type ListenerLimits } from '../src/index.js';

let server: http.Server | undefined;
const clients: net.Socket[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.destroy();
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r) ?? r(undefined));
  server = undefined;
});

async function start(limits: ListenerLimits, ceiling = 0) {
  const clock = new ManualClock();
  const budget = new ConnectionBudget({ clock }, { ceiling });
  const listener = budget.listener('http', limits);
  const warnings: object[] = [];
  // `/slow` is never answered: its connection stays in a request.
  server = http.createServer((req, res) => {
    if (req.url !== '/slow') res.end('ok');
  });
  const accepted: net.Socket[] = [];
  server.on('connection', (s: net.Socket) => accepted.push(s));
  guardHttpServer(server, listener, { clock, logger: { warn: (o) => warnings.push(o) } });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as net.AddressInfo).port;
  return { clock, budget, listener, port, accepted, warnings };
}

/** A connection from `from`; resolves once connected (the server may close it right after). */
async function connect(port: number, from: string): Promise<net.Socket> {
  const s = net.connect({ port, host: '127.0.0.1', localAddress: from });
  s.on('error', () => {});
  clients.push(s);
  await once(s, 'connect');
  return s;
}

/** One GET over a new connection from `from`: the status, or the error. */
async function get(port: number, from: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = http.get(
      { host: '127.0.0.1', port, localAddress: from, path: '/', agent: false },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
}

const closed = (s: net.Socket) => s.destroyed || s.readableEnded;

describe('guardHttpServer over real sockets', () => {
  it('an idle flood from four addresses of one /24 and one of another: caps refuse the excess, a client is served', async () => {
    const { listener, port } = await start({ perAddress: 8, perPrefix: 20 });
    const flood: net.Socket[] = [];
    for (const from of ['127.0.3.1', '127.0.3.2', '127.0.3.3', '127.0.3.4', '127.0.4.1']) {
      for (let i = 0; i < 12; i++) flood.push(await connect(port, from));
    }
    // 127.0.3.0/24: 8 + 8 + 4 admitted (the /24 holds 20), the rest refused; 127.0.4.1: 8 of 12.
    await waitFor(() => listener.counters.admitted + sum(listener.counters.refused) === 60);
    expect(listener.counters.admitted).toBe(28);
    expect(listener.counters.refused).toMatchObject({
      'per-address': 4 + 4 + 4,
      'per-prefix': 8 + 12,
    });
    await waitFor(() => flood.filter(closed).length === 32, { what: 'refused sockets closed' });
    // A legitimate client from elsewhere gets its answer while the 28 idle connections stay open.
    expect(await get(port, '127.0.5.1')).toBe(200);
    expect(listener.open).toBeGreaterThanOrEqual(28);
  });

  it('slowloris: a header line trickled before each check is closed at the header timeout', async () => {
    const { clock, listener, port, accepted } = await start({
      idleTimeoutMs: 2_000,
      headerTimeoutMs: 10_000,
    });
    const loris = await connect(port, '127.0.6.1');
    loris.write('GET / HTTP/1.1\r\nHost: x\r\n');
    await waitFor(() => accepted[0]?.bytesRead === 25);
    let sent = 25;
    for (let t = 0; t < 9; t++) {
      const line = `X-a-${t}: ${'b'.repeat(10)}\r\n`;
      loris.write(line);
      sent += line.length;
      await waitFor(() => accepted[0]!.bytesRead === sent);
      await clock.advance(1_000);
      expect(closed(loris) || loris.closed, `closed after ${t + 1} s`).toBe(false);
    }
    await clock.advance(1_000);
    await waitFor(() => loris.closed, { what: 'the slowloris connection closed' });
    expect(listener.counters.closed['header-timeout']).toBe(1);
    expect(listener.open).toBe(0);
  });

  it('at the ceiling, a newcomer sheds the oldest idle connection; one in a request is kept', async () => {
    const { clock, budget, listener, port } = await start({ perAddress: 0, perPrefix: 0 }, 4);
    const busy = await connect(port, '127.0.7.1');
    const idle: net.Socket[] = [];
    for (let i = 2; i <= 4; i++) {
      await clock.advance(10);
      idle.push(await connect(port, `127.0.7.${i}`));
    }
    await waitFor(() => listener.open === 4);
    // The first connection's request is in progress (its handler has not answered yet).
    busy.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
    await waitFor(() => budget.stats().waiting === 3);
    expect(await get(port, '127.0.8.1')).toBe(200);
    await waitFor(() => idle[0]!.closed, { what: 'the oldest idle connection shed' });
    expect(idle.slice(1).some((s) => s.closed)).toBe(false);
    expect(busy.closed).toBe(false);
    expect(listener.counters.closed.shed).toBe(1);
  });

  it('a failed accept is counted and logged; the listener goes on', async () => {
    const { listener, port, warnings } = await start({});
    const err = Object.assign(new Error('accept EMFILE'), { code: 'EMFILE', syscall: 'accept' });
    server!.emit('error', err);
    server!.emit('error', err);
    expect(listener.counters.acceptErrors).toBe(2);
    expect(warnings).toHaveLength(1); // one line per interval
    expect(await get(port, '127.0.9.1')).toBe(200);
  });
});

function sum(r: Record<string, number>): number {
  return Object.values(r).reduce((a, b) => a + b, 0);
}
