/** Real loopback origins, proxies and a raw HTTP client for the proxy tests. */
import { createServer, request } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Server as NetServer, Socket } from 'node:net';
import { ManualClock, waitFor } from '@coral/testkit';
import { CoralProxy } from '../../src/proxy/coral-proxy.js';
import type { ProxyOptions, ProxyComponents } from '../../src/proxy/types.js';
import { InMemoryContentIndex } from '../../src/memory-index.js';

export const T0 = Date.UTC(2026, 0, 1);

export interface OriginHit {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface Origin {
  ip: string;
  port: number;
  /** Coralized host for this origin: `origin.test.<port>.nyud.net`. */
  coralHost: string;
  hits: OriginHit[];
  server: Server;
  close(): Promise<void>;
}

export type OriginHandler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void;

export async function startOrigin(
  handler: OriginHandler,
  ip = '127.0.0.2',
  port = 0,
): Promise<Origin> {
  const hits: OriginHit[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      hits.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res, body);
    });
  });
  const close = closer(server);
  await new Promise<void>((r) => server.listen(port, ip, r));
  const p = (server.address() as AddressInfo).port;
  return { ip, port: p, coralHost: `origin.test.${p}.nyud.net`, hits, server, close };
}

/** Track a server's connections; the returned function destroys them and closes the server. */
export function closer(server: NetServer): () => Promise<void> {
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  return () =>
    new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    });
}

export interface ProxyHarness {
  proxy: CoralProxy;
  port: number;
  clock: ManualClock;
  index: InMemoryContentIndex;
  close(): Promise<void>;
}

export async function startProxy(
  options: Partial<ProxyOptions> = {},
  components: Partial<ProxyComponents> & { clock?: ManualClock } = {},
  ip = '127.0.0.1',
): Promise<ProxyHarness> {
  const clock = components.clock ?? new ManualClock(T0);
  const index =
    (components.index as InMemoryContentIndex | undefined) ?? new InMemoryContentIndex({ clock });
  const self = options.self ?? { nodeId: 'a1'.repeat(20), ip, httpPort: 0 };
  const proxy = new CoralProxy(
    // Each proxy sees the shared index through its own node's view (withdraw is per node).
    { ...components, index: index.forNode(self.nodeId), clock },
    {
      allowPrivateOrigins: true,
      hosts: { 'origin.test': ['127.0.0.2'], 'other.test': ['127.0.0.3'] },
      self,
      rateLimit: { perSecond: 0 },
      ...options,
    },
  );
  const { port } = await proxy.listen(0, ip);
  return { proxy, port, clock, index, close: () => proxy.close() };
}

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** One request to the proxy with an explicit Host header. Rejects when the response is cut short. */
export function get(
  port: number,
  host: string,
  path = '/',
  headers: Record<string, string> = {},
  method = 'GET',
  ip = '127.0.0.1',
  body?: Buffer,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: ip, port, path, method, headers: { host, ...headers }, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
          }),
        );
        res.on('error', reject);
        res.on('aborted', () => reject(new Error('aborted')));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

export function httpDate(ms: number): string {
  return new Date(ms).toUTCString();
}

/** Wait (on real time, bounded) until `cond` holds — for events in other sockets, not durations. */
export async function until(
  cond: () => boolean | Promise<boolean>,
  what = 'condition',
  limitMs = 10_000,
): Promise<void> {
  await waitFor(cond, { what, limitMs, everyMs: 2 });
}
