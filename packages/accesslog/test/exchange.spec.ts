import { once } from 'node:events';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createTlsServer, request as tlsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { issueCert, makeTestCa, systemClock, waitFor } from '@coral/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { ExchangeTracker, noteOf } from '../src/index.js';
import type { AccessRecord } from '../src/index.js';

type Handler = (req: IncomingMessage, res: ServerResponse, t: ExchangeTracker) => void;

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function serve(
  handler: Handler,
  tls?: { cert: string; key: string },
): Promise<{ port: number; records: AccessRecord[] }> {
  const records: AccessRecord[] = [];
  const tracker = new ExchangeTracker(
    { clock: systemClock, onRecord: (r) => records.push(r) },
    { cacheName: 'Coral', idPrefix: 'test' },
  );
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    tracker.start(req, res);
    handler(req, res, tracker);
  };
  const server = tls ? createTlsServer(tls, onRequest) : createServer(onRequest);
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as AddressInfo).port, records };
}

/** One raw HTTP/1.1 exchange on a fresh connection; resolves with what came back. */
async function raw(port: number, text: string): Promise<string> {
  const s = connect(port, '127.0.0.1');
  s.end(text);
  const chunks: Buffer[] = [];
  for await (const c of s) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('latin1');
}

describe('ExchangeTracker', () => {
  it('records a response written with a flat header array, as a client saw it', async () => {
    const body = Buffer.alloc(1024, 'a');
    const { port, records } = await serve((req, res, t) => {
      noteOf(res)!.originUrl = 'http://www.example.com/a.jpg';
      res.writeHead(200, [
        'content-length',
        String(body.length),
        'cache-status',
        'Coral; hit; ttl=299',
      ]);
      t.head(res, 'hit');
      res.end(body);
    });
    const answer = await raw(
      port,
      'GET /a.jpg?q="x" HTTP/1.1\r\nHost: WWW.Example.com.nyud.net:8090\r\n' +
        'User-Agent: agent/1\r\nReferer: http://ref/\r\nConnection: close\r\n\r\n',
    );
    await waitFor(() => records.length === 1);
    const r = records[0]!;
    expect(r).toMatchObject({
      client: '127.0.0.1',
      method: 'GET',
      host: 'www.example.com.nyud.net',
      url: 'http://WWW.Example.com.nyud.net:8090/a.jpg?q="x"',
      originUrl: 'http://www.example.com/a.jpg',
      protocol: 'HTTP/1.1',
      status: 200,
      bytes: Buffer.byteLength(answer, 'latin1'),
      cache: { result: 'hit', hit: true, ttl: 299 },
      served: { from: 'memory' },
      requestId: 'test-1',
      aborted: false,
      referer: 'http://ref/',
      userAgent: 'agent/1',
    });
    expect(r.clientPort).toBeGreaterThan(0);
    expect(r.ttfbMs).toBeGreaterThanOrEqual(0);
    expect(r.totalMs).toBeGreaterThanOrEqual(r.ttfbMs!);
    expect(r).not.toHaveProperty('tls');
    expect(r).not.toHaveProperty('upstreamMs');
  });

  it('reads a peer fetch from its kind and Cache-Status detail, with the noted upstream time', async () => {
    const { port, records } = await serve((_req, res, t) => {
      noteOf(res)!.upstreamMs = 12.5;
      res.setHeader('cache-status', 'Coral; fwd=peer; fwd-status=200; detail=peer-0123456789ab');
      res.writeHead(200);
      t.head(res, 'peer');
      res.end('x');
    });
    await raw(port, 'GET / HTTP/1.1\r\nHost: a.nyud.net\r\nConnection: close\r\n\r\n');
    await waitFor(() => records.length === 1);
    expect(records[0]).toMatchObject({
      cache: { result: 'miss', fwd: 'peer' },
      served: { from: 'peer', peer: '0123456789ab' },
      upstreamMs: 12.5,
    });
  });

  it('tells origin fetches, node-made errors and what the server noted apart', async () => {
    const answers: Array<[string, (res: ServerResponse) => void]> = [
      ['Coral; fwd=uri-miss; fwd-status=200; stored', () => {}],
      ['Coral; detail=CORAL_ORIGIN_UNREACHABLE', () => {}],
      ['Coral; hit', (res) => (noteOf(res)!.served = { from: 'disk' })],
    ];
    let i = 0;
    const { port, records } = await serve((_req, res) => {
      const [cs, note] = answers[i++]!;
      note(res);
      res.writeHead(cs.includes('detail') ? 502 : 200, ['cache-status', cs]);
      res.end();
    });
    for (let n = 0; n < answers.length; n++) {
      await raw(port, 'GET / HTTP/1.1\r\nHost: a.nyud.net\r\nConnection: close\r\n\r\n');
    }
    await waitFor(() => records.length === 3);
    expect(records.map((r) => [r.cache.result, r.served.from, r.status])).toEqual([
      ['miss', 'origin', 200],
      ['error', 'node', 502],
      ['hit', 'disk', 200],
    ]);
    expect(records.map((r) => r.requestId)).toEqual(['test-1', 'test-2', 'test-3']);
  });

  it('marks a transfer the client abandons mid-body as aborted, with the status sent', async () => {
    const { port, records } = await serve((_req, res, t) => {
      res.writeHead(200, ['content-length', '1000000', 'cache-status', 'Coral; fwd=uri-miss']);
      t.head(res, 'miss');
      res.write(Buffer.alloc(1000));
      // The rest never comes: the client leaves.
    });
    const s = connect(port, '127.0.0.1');
    s.write('GET /big HTTP/1.1\r\nHost: a.nyud.net\r\n\r\n');
    await once(s, 'data');
    s.destroy();
    await waitFor(() => records.length === 1);
    expect(records[0]).toMatchObject({ status: 200, aborted: true, cache: { result: 'miss' } });
    expect(records[0]!.bytes).toBeGreaterThan(1000);
  });

  it('records status 0 when the client leaves before any head', async () => {
    let taken = false;
    const { port, records } = await serve(() => {
      taken = true; // and never answered
    });
    const s = connect(port, '127.0.0.1');
    s.write('GET /slow HTTP/1.1\r\nHost: a.nyud.net\r\n\r\n');
    await waitFor(() => taken);
    s.destroy();
    await waitFor(() => records.length === 1);
    expect(records[0]).toMatchObject({
      status: 0,
      bytes: 0,
      aborted: true,
      cache: { result: 'error' },
      served: { from: 'node' },
    });
    expect(records[0]).not.toHaveProperty('ttfbMs');
  });

  it('records each request of a keep-alive connection with its own bytes', async () => {
    const { port, records } = await serve((req, res) => {
      res.writeHead(200, [
        'cache-status',
        'Coral; hit',
        'content-length',
        req.url === '/a' ? '1' : '3',
      ]);
      res.end(req.url === '/a' ? 'a' : 'bbb');
    });
    const answer = await raw(
      port,
      'GET /a HTTP/1.1\r\nHost: h.nyud.net\r\n\r\n' +
        'GET /b HTTP/1.1\r\nHost: h.nyud.net\r\nConnection: close\r\n\r\n',
    );
    await waitFor(() => records.length === 2);
    const [a, b] = records as [AccessRecord, AccessRecord];
    expect(a.bytes + b.bytes).toBe(Buffer.byteLength(answer, 'latin1'));
    expect(answer.indexOf('HTTP/1.1', 1)).toBe(a.bytes); // the second response starts there
  });

  it('records the TLS version of an HTTPS request and an https URL', async () => {
    const ca = await makeTestCa({ name: 'accesslog test CA' });
    const leaf = await issueCert(ca, { dnsNames: ['a.nyud.net'], ipAddresses: ['127.0.0.1'] });
    const { port, records } = await serve(
      (_req, res) => {
        res.writeHead(200, ['cache-status', 'Coral; hit']);
        res.end('ok');
      },
      { cert: leaf.cert, key: leaf.key },
    );
    await new Promise<void>((resolve, reject) => {
      const req = tlsRequest(
        { host: '127.0.0.1', port, path: '/s', ca: ca.cert, headers: { host: 'a.nyud.net' } },
        (res) => {
          res.resume();
          res.on('end', resolve);
        },
      );
      req.on('error', reject);
      req.end();
    });
    await waitFor(() => records.length === 1);
    expect(records[0]).toMatchObject({ url: 'https://a.nyud.net/s', tls: 'TLSv1.3' });
  });
});
