import { afterEach, describe, expect, it, vi } from 'vitest';
import { ServerResponse, createServer } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { preparedConnection, sendPrepared, serializeHead } from '../../src/hot/prepared.js';
import { waitFor } from '@coral/testkit';
import { httpDate, startScripted } from '../helpers/harness.js';
import type { Origin, ProxyHarness } from '../helpers/harness.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** One parsed response off a raw socket. */
interface RawResponse {
  head: string;
  status: number;
  headers: Map<string, string>;
  body: Buffer;
}

/**
 * Write `request` (one or more requests, pipelined) on a fresh connection and read `n` responses
 * (Content-Length framed; `heads` says which answer a HEAD). `closed`: did the server close?
 */
function raw(
  port: number,
  request: string,
  n: number,
  heads: boolean[] = [],
): Promise<{ responses: RawResponse[]; closed: boolean; bytes: Buffer }> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    const responses: RawResponse[] = [];
    let all = Buffer.alloc(0);
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      s.destroy();
      resolve({ responses, closed, bytes: all });
    };
    s.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      all = Buffer.concat([all, d]);
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) break;
        const head = buf.subarray(0, end + 4).toString('latin1');
        const lines = head.split('\r\n');
        const headers = new Map<string, string>();
        for (const l of lines.slice(1, -2)) {
          const i = l.indexOf(':');
          headers.set(l.slice(0, i).toLowerCase(), l.slice(i + 1).trim());
        }
        const length = heads[responses.length] ? 0 : Number(headers.get('content-length') ?? 0);
        if (buf.length < end + 4 + length) break;
        const status = Number(lines[0]!.split(' ')[1]);
        responses.push({ head, status, headers, body: buf.subarray(end + 4, end + 4 + length) });
        buf = buf.subarray(end + 4 + length);
      }
      // Done at the last answer, unless it says the server closes: then at the close.
      if (responses.length >= n && responses[n - 1]!.headers.get('connection') !== 'close') {
        finish(false);
      }
    });
    s.on('end', () => finish(true));
    s.on('close', () => finish(true));
    s.on('error', reject);
    s.write(request);
  });
}

const FIELDS = [
  'content-type',
  'text/plain',
  'date',
  'Mon, 01 Dec 2025 00:00:00 GMT',
  'content-length',
  '5',
  'age',
  '7',
];

/**
 * Two node:http servers with the same settings: one answers with writeHead(flat) and end(body),
 * the other with the prepared bytes when `preparedConnection` allows it (else writeHead). What
 * each did is recorded.
 */
async function twins(settings: { keepAliveTimeout?: number; maxRequestsPerSocket?: number }) {
  const used: string[] = [];
  const head = serializeHead(200, FIELDS)!;
  const body = Buffer.from('hello');
  const generic = (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(200, FIELDS);
    res.end(_req.method === 'HEAD' ? undefined : body);
  };
  const prepared = (req: IncomingMessage, res: ServerResponse) => {
    const connection = preparedConnection(res);
    used.push(connection === undefined ? 'writeHead' : 'prepared');
    if (connection === undefined) return generic(req, res);
    const wire = `${head}${connection}\r\n`;
    if (req.method === 'HEAD') sendPrepared(res, 200, wire);
    else if (req.url === '/inline') sendPrepared(res, 200, wire + body.toString('latin1'));
    else sendPrepared(res, 200, wire, body);
  };
  const start = async (handler: typeof generic): Promise<number> => {
    const server: Server = createServer(handler);
    if (settings.keepAliveTimeout !== undefined)
      server.keepAliveTimeout = settings.keepAliveTimeout;
    if (settings.maxRequestsPerSocket !== undefined)
      server.maxRequestsPerSocket = settings.maxRequestsPerSocket;
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanups.push(
      () =>
        new Promise<void>((r) => {
          server.closeAllConnections();
          server.close(() => r());
        }),
    );
    return (server.address() as AddressInfo).port;
  };
  return { used, generic: await start(generic), prepared: await start(prepared) };
}

describe('prepared responses (node:http bytes without writeHead)', () => {
  it('serializes a block as writeHead does, or not at all when node:http would act on it', () => {
    expect(serializeHead(200, FIELDS)).toBe(
      'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ndate: Mon, 01 Dec 2025 00:00:00 GMT\r\n' +
        'content-length: 5\r\nage: 7\r\n',
    );
    expect(serializeHead(404, FIELDS)).toMatch(/^HTTP\/1\.1 404 Not Found\r\n/);
    expect(serializeHead(299, FIELDS)).toMatch(/^HTTP\/1\.1 299 unknown\r\n/);
    // node:http adds Date or Content-Length itself when they are missing: not prepared.
    expect(serializeHead(200, FIELDS.slice(0, 2).concat(FIELDS.slice(4)))).toBeUndefined();
    expect(serializeHead(200, FIELDS.slice(0, 4))).toBeUndefined();
    // Fields node:http acts on, values and names it rejects, statuses without a body.
    for (const [k, v] of [
      ['Connection', 'close'],
      ['transfer-encoding', 'chunked'],
      ['keep-alive', 'timeout=1'],
      ['x', 'a\u0001b'],
      ['bad name', 'x'],
    ])
      expect(serializeHead(200, [...FIELDS, k!, v!])).toBeUndefined();
    expect(serializeHead(204, FIELDS)).toBeUndefined();
    expect(serializeHead(304, FIELDS)).toBeUndefined();
  });

  it('sends the same bytes as writeHead + end on a kept-alive connection, pipelined, GET and HEAD', async () => {
    for (const settings of [{}, { keepAliveTimeout: 0 }, { maxRequestsPerSocket: 10 }]) {
      const t = await twins(settings);
      const req =
        'GET /a HTTP/1.1\r\nHost: x\r\n\r\n' +
        'HEAD /a HTTP/1.1\r\nHost: x\r\n\r\n' +
        'GET /inline HTTP/1.1\r\nHost: x\r\n\r\n';
      const heads = [false, true, false];
      const a = await raw(t.generic, req, 3, heads);
      const b = await raw(t.prepared, req, 3, heads);
      expect(b.responses).toHaveLength(3);
      expect(b.bytes.toString('latin1')).toBe(a.bytes.toString('latin1'));
      expect(b.closed).toBe(false);
      expect(t.used).toEqual(['prepared', 'prepared', 'prepared']);
    }
  });

  it('leaves to writeHead what it does not prepare: close, HTTP/1.0, the last request allowed', async () => {
    // A socket at its last allowed request is closed by the server only when it has been idle for
    // keepAliveTimeout (5 s by default): short here, so the test does not wait 5 s per server.
    const t = await twins({ maxRequestsPerSocket: 2, keepAliveTimeout: 100 });
    const cases: Array<[string, number]> = [
      ['GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 1],
      ['GET /a HTTP/1.0\r\nHost: x\r\n\r\n', 1],
      ['GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /a HTTP/1.1\r\nHost: x\r\n\r\n', 2],
    ];
    for (const [req, n] of cases) {
      const a = await raw(t.generic, req, n);
      const b = await raw(t.prepared, req, n);
      expect(b.bytes.toString('latin1')).toBe(a.bytes.toString('latin1'));
      expect(b.closed).toBe(a.closed);
    }
    // close, 1.0, then the first of two (prepared) and the second, the last allowed.
    expect(t.used).toEqual(['writeHead', 'writeHead', 'prepared', 'writeHead']);
  });
});

describe('the fast path sends prepared hot entries', () => {
  let px: ProxyHarness;
  let origin: Origin;

  async function setup(headers: Record<string, string> = {}) {
    ({ px, origin } = await startScripted(
      {
        '/a': (_req, res, n) => {
          res.writeHead(200, {
            date: httpDate(px.clock.now()),
            'content-type': 'text/plain',
            'cache-control': 'max-age=60',
            etag: '"a1"',
            'content-length': String(`hello ${n}`.length),
            ...headers,
          });
          res.end(`hello ${n}`);
        },
      },
      {},
      cleanups,
    ));
  }
  const GET = () => `GET /a HTTP/1.1\r\nHost: ${origin.coralHost}\r\n\r\n`;

  /** Fill, and serve until the object is hot and routed. */
  async function warm() {
    await waitFor(
      async () => {
        const { responses } = await raw(px.port, GET(), 1);
        return /; hit/.test(responses[0]!.headers.get('cache-status') ?? '');
      },
      { what: 'a hit' },
    );
    await raw(px.port, GET(), 1); // routed after a hit on the full path
  }

  it('Age, Cache-Status and the body on each hit; HEAD without a body; pipelined in order', async () => {
    await setup();
    await warm();
    const writeHead = vi.spyOn(ServerResponse.prototype, 'writeHead');
    const host = origin.coralHost;
    const pipelined =
      GET() +
      `HEAD /a HTTP/1.1\r\nHost: ${host}\r\n\r\n` +
      GET() +
      GET().replace(host, host.toUpperCase());
    const r1 = await raw(px.port, pipelined, 4, [false, true, false, false]);
    expect(r1.responses.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(r1.responses.map((r) => r.body.toString())).toEqual([
      'hello 1',
      '',
      'hello 1',
      'hello 1',
    ]);
    const h = r1.responses[0]!.headers;
    expect(h.get('age')).toBe('0');
    expect(h.get('cache-status')).toBe('Coral; hit; ttl=60');
    expect(h.get('connection')).toBe('keep-alive');
    expect(h.get('content-length')).toBe('7');
    expect(r1.responses[1]!.headers.get('content-length')).toBe('7');
    // Only the spelling the fast path had not seen yet (Host in capitals) went through writeHead.
    expect(writeHead).toHaveBeenCalledTimes(1);
    // Age (RFC 9111 §5.1) and the ttl follow the clock: the prepared bytes are rebuilt.
    await px.clock.advance(25_000);
    const r2 = await raw(px.port, GET(), 1);
    expect(r2.responses[0]!.headers.get('age')).toBe('25');
    expect(r2.responses[0]!.headers.get('cache-status')).toBe('Coral; hit; ttl=35');
    expect(r2.responses[0]!.body.toString()).toBe('hello 1');
    const head = await raw(px.port, `HEAD /a HTTP/1.1\r\nHost: ${host}\r\n\r\n`, 1, [true]);
    expect(head.responses[0]!.headers.get('age')).toBe('25');
    expect(writeHead).toHaveBeenCalledTimes(1);
    expect(origin.hits).toHaveLength(1);
  });

  it('conditionals and a client closing take writeHead; a stale entry is not sent', async () => {
    await setup();
    await warm();
    const writeHead = vi.spyOn(ServerResponse.prototype, 'writeHead');
    const host = origin.coralHost;
    const cond = await raw(
      px.port,
      `GET /a HTTP/1.1\r\nHost: ${host}\r\nIf-None-Match: "a1"\r\n\r\n`,
      1,
    );
    expect(cond.responses[0]!.status).toBe(304);
    const close = await raw(
      px.port,
      `GET /a HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
      1,
    );
    expect(close.responses[0]!.headers.get('connection')).toBe('close');
    expect(close.responses[0]!.body.toString()).toBe('hello 1');
    expect(close.closed).toBe(true);
    expect(writeHead).toHaveBeenCalledTimes(2);
    await px.clock.advance(61_000);
    const stale = await raw(px.port, GET(), 1);
    expect(stale.responses[0]!.body.toString()).toBe('hello 2');
    expect(origin.hits).toHaveLength(2);
  });

  it('a Vary response is never prepared (the fast path does not serve it)', async () => {
    await setup({ vary: 'accept-encoding' });
    await raw(px.port, GET(), 1);
    await waitFor(async () => (await px.proxy.cacheList()).length === 1, { what: 'the commit' });
    const writeHead = vi.spyOn(ServerResponse.prototype, 'writeHead');
    for (let i = 0; i < 3; i++) await raw(px.port, GET(), 1);
    expect(writeHead).toHaveBeenCalledTimes(3);
  });
});
