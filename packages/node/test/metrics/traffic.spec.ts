/**
 * The observer of the proxy's responses: which origin URL a request stands for (pure), and, over
 * real sockets, that it counts the bytes a client received from the proxy's server only, puts
 * client requests (not peers') in the hottest-URL sketch, and stops when told.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { CoralMetrics } from '../../src/metrics/metrics.js';
import { ProxyTrafficObserver, rawField, requestOriginUrl } from '../../src/metrics/traffic.js';

describe('requestOriginUrl', () => {
  const zones = ['nyud.net'];
  it('maps Coralized names, ports, absolute-form targets and sites to origin URLs', () => {
    expect(requestOriginUrl('www.example.com.nyud.net', '/a.jpg?x=1', zones)).toBe(
      'http://www.example.com/a.jpg?x=1',
    );
    expect(requestOriginUrl('WWW.Example.com.8080.nyud.net:8090', '/a', zones)).toBe(
      'http://www.example.com:8080/a',
    );
    expect(requestOriginUrl(undefined, 'http://www.example.com.nyud.net/b', zones)).toBe(
      'http://www.example.com/b',
    );
    const sites = { 'static.example.org': 'http://10.0.0.5:8080' };
    expect(requestOriginUrl('static.example.org:8090', '/c', zones, sites)).toBe(
      'http://10.0.0.5:8080/c',
    );
  });
  it('names nothing for hosts outside the zones, malformed names and odd targets', () => {
    expect(requestOriginUrl('www.example.com', '/', zones)).toBeUndefined();
    expect(requestOriginUrl('bad_label-.nyud.net', '/', zones)).toBeUndefined();
    expect(requestOriginUrl('x.99999.nyud.net', '/', zones)).toBeUndefined();
    expect(requestOriginUrl(undefined, '/', zones)).toBeUndefined();
    expect(requestOriginUrl('www.example.com.nyud.net', '*', zones)).toBeUndefined();
    expect(requestOriginUrl('__proto__', '/', zones, {})).toBeUndefined();
  });
});

describe('rawField', () => {
  it("reads a field's first value from raw field lines, names in any case", () => {
    const raw = ['HOST', 'a.nyud.net', 'X-Coral-Peer', '1', 'host', 'b.nyud.net', 'Hostx', 'c'];
    expect(rawField(raw, 'host')).toBe('a.nyud.net');
    expect(rawField(raw, 'x-coral-peer')).toBe('1');
    expect(rawField(raw, 'via')).toBeUndefined();
    expect(rawField([], 'host')).toBeUndefined();
  });
});

describe('ProxyTrafficObserver over real sockets', () => {
  const servers: Server[] = [];
  let observer: ProxyTrafficObserver | undefined;
  afterEach(async () => {
    observer?.stop();
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });

  /** Requests whose `req.headers` something read (Node builds that object on first use). */
  let headersRead = 0;

  async function serve(body: string): Promise<{ port: number }> {
    const server = createServer((req, res) => {
      const built = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(req), 'headers')!;
      Object.defineProperty(req, 'headers', {
        get() {
          headersRead++;
          return built.get!.call(req) as unknown;
        },
      });
      res.writeHead(200, ['content-type', 'text/plain', 'content-length', String(body.length)]);
      res.end(req.method === 'HEAD' ? undefined : body);
    });
    servers.push(server);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return { port: (server.address() as AddressInfo).port };
  }

  /** A raw HTTP/1.1 exchange; resolves to the bytes the client received. */
  async function exchange(port: number, head: string): Promise<number> {
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    let received = 0;
    socket.on('data', (c: Buffer) => (received += c.length));
    socket.end(head + '\r\n');
    await once(socket, 'close');
    return received;
  }

  it('counts what the proxy sends, by client or peer, and the URLs clients ask for', async () => {
    const proxy = await serve('x'.repeat(1000));
    const other = await serve('other server');
    const metrics = new CoralMetrics({ defaultMetrics: false });
    observer = new ProxyTrafficObserver(
      { sink: metrics.traffic },
      { listening: { host: '127.0.0.1', port: proxy.port }, zones: ['nyud.net'] },
    );
    observer.start();
    const ask = (port: number, host: string, extra = '') =>
      exchange(port, `GET /obj/1 HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n${extra}`);
    const a = await ask(proxy.port, 'www.example.com.nyud.net');
    const b = await ask(proxy.port, 'www.example.com.nyud.net');
    const peer = await ask(proxy.port, 'www.example.com.nyud.net', 'X-Coral-Peer: 1\r\n');
    const junk = await ask(proxy.port, 'not-coralized.example');
    await ask(other.port, 'www.example.com.nyud.net'); // not the proxy: not counted
    const r = await metrics.read();
    expect(r['sent.client']).toBe(a + b + junk);
    expect(r['sent.peer']).toBe(peer);
    expect(metrics.hotUrls.top()).toEqual([
      { item: 'http://www.example.com/obj/1', count: 2, error: 0 },
    ]);
    expect(await metrics.text()).toContain(
      `coral_http_response_bytes_total{to="client"} ${a + b + junk}`,
    );

    // Host and the peer marker came from the raw field lines: no request's header object was built.
    expect(headersRead).toBe(0);

    observer.stop();
    await ask(proxy.port, 'www.example.com.nyud.net');
    expect((await metrics.read())['sent.client']).toBe(a + b + junk);
  });

  it('splits the bytes of a kept-alive connection by response, pipelined ones too', async () => {
    const proxy = await serve('y'.repeat(300));
    const metrics = new CoralMetrics({ defaultMetrics: false });
    observer = new ProxyTrafficObserver(
      { sink: metrics.traffic },
      { listening: { host: '127.0.0.1', port: proxy.port }, zones: ['nyud.net'] },
    );
    observer.start();
    const get = (path: string, last = false) =>
      `GET ${path} HTTP/1.1\r\nHost: www.example.com.nyud.net\r\n${last ? 'Connection: close\r\n' : ''}\r\n`;
    // three requests in one write: the server answers them in order on the one connection
    const received = await exchange(
      proxy.port,
      get('/a') + get('/b') + get('/a', true).slice(0, -2),
    );
    expect((await metrics.read())['sent.client']).toBe(received);
    expect(metrics.hotUrls.top()).toEqual([
      { item: 'http://www.example.com/a', count: 2, error: 0 },
      { item: 'http://www.example.com/b', count: 1, error: 0 },
    ]);
  });

  it('cuts long URLs before counting them', async () => {
    const proxy = await serve('ok');
    const metrics = new CoralMetrics({ defaultMetrics: false });
    observer = new ProxyTrafficObserver(
      { sink: metrics.traffic },
      { listening: { host: '0.0.0.0', port: proxy.port }, zones: ['nyud.net'] },
    );
    observer.start();
    const long = '/' + 'a'.repeat(2000);
    await exchange(
      proxy.port,
      `GET ${long} HTTP/1.1\r\nHost: www.example.com.nyud.net\r\nConnection: close\r\n`,
    );
    const [top] = metrics.hotUrls.top();
    expect(top!.item.length).toBe(512);
    expect(top!.item.endsWith('…')).toBe(true);
  });
});
