/** Real loopback origins, proxies and a raw HTTP client for the proxy tests. */
import { createServer, request } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Server as NetServer, Socket } from 'node:net';
import { ManualClock, waitFor } from '@coral/testkit';
import { CoralProxy } from '../../src/proxy/coral-proxy.js';
import type { ProxyComponents, ProxyMetrics, ProxyOptions } from '../../src/proxy/types.js';
import { InMemoryContentIndex } from '../../src/memory-index.js';
import type { InMemoryFleetMembers } from '../../src/peer/memory-members.js';

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
      (res) => void readReply(res).then(resolve, reject),
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A response read to its end; rejects when it is cut short. */
export function readReply(res: IncomingMessage): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () =>
      resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
    );
    res.on('error', reject);
    res.on('aborted', () => reject(new Error('aborted')));
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

/** What a proxy reported through its metrics (the optional events, and error statuses). */
export interface MetricLog {
  holderSkipped: string[];
  peerRejected: string[];
  clientError: string[];
  joined: number;
}

/** A `ProxyMetrics` that records the events tests look at. */
export function recordingMetrics(): ProxyMetrics & { log: MetricLog } {
  const log: MetricLog = { holderSkipped: [], peerRejected: [], clientError: [], joined: 0 };
  return {
    log,
    request() {},
    originFetch() {},
    peerFetch() {},
    rateLimited() {},
    holderSkipped: (r) => log.holderSkipped.push(r),
    peerRejected: (r) => log.peerRejected.push(r),
    clientError: (c) => log.clientError.push(c),
    joined: () => log.joined++,
  };
}

export const NODE_A = 'aa'.repeat(20);
export const NODE_B = 'bb'.repeat(20);

export interface Pair {
  clock: ManualClock;
  index: InMemoryContentIndex;
  /** Absent when the pair was started without members (no peer fetch). */
  members: InMemoryFleetMembers | undefined;
  origin: Origin;
  /** Proxy A (node `NODE_A`) on 127.0.0.1 and B (`NODE_B`) on 127.0.0.4, both members. */
  a: ProxyHarness;
  b: ProxyHarness;
  metricsA: MetricLog;
  metricsB: MetricLog;
  /** Origin URL of `path` (the index key's URL). */
  url(path: string): string;
  close(): Promise<void>;
}

/**
 * Two proxies sharing one index and one origin that serves `body` (max-age=600) at every path.
 * `members`: the fleet's members (A and B are added once listening), or undefined for none.
 */
export async function startPair(opts: {
  body: Buffer;
  members: InMemoryFleetMembers | undefined;
  a?: Partial<ProxyComponents>;
  b?: Partial<ProxyComponents>;
  clock?: ManualClock;
}): Promise<Pair> {
  const clock = opts.clock ?? new ManualClock(T0);
  const index = new InMemoryContentIndex({ clock });
  const { members } = opts;
  const origin = await startOrigin((_q, res) => {
    res.writeHead(200, {
      'cache-control': 'max-age=600',
      'content-length': String(opts.body.length),
    });
    res.end(opts.body);
  });
  const ma = recordingMetrics();
  const mb = recordingMetrics();
  const shared = { clock, index, ...(members ? { members } : {}) };
  const a = await startProxy(
    { self: { nodeId: NODE_A, ip: '127.0.0.1', httpPort: 0 } },
    { metrics: ma, ...opts.a, ...shared },
    '127.0.0.1',
  );
  const b = await startProxy(
    { self: { nodeId: NODE_B, ip: '127.0.0.4', httpPort: 0 } },
    { metrics: mb, ...opts.b, ...shared },
    '127.0.0.4',
  );
  members?.set(NODE_A, { ip: '127.0.0.1', httpPort: a.port });
  members?.set(NODE_B, { ip: '127.0.0.4', httpPort: b.port });
  return {
    clock,
    index,
    members,
    origin,
    a,
    b,
    metricsA: ma.log,
    metricsB: mb.log,
    url: (path) => `http://origin.test:${origin.port}${path}`,
    close: async () => {
      await a.close();
      await b.close();
      await origin.close();
    },
  };
}

/** A scripted origin route: `n` counts the requests for its path so far (1 for the first). */
export type Route = (req: IncomingMessage, res: ServerResponse, n: number) => void;

/**
 * A proxy and an origin whose answers are scripted per path (404 for paths without a route); the
 * proxy's clock also dates the origin's responses. Both are closed by `cleanups`.
 */
export async function startScripted(
  routes: Record<string, Route>,
  options: Partial<ProxyOptions>,
  cleanups: Array<() => Promise<void>>,
): Promise<{ px: ProxyHarness; origin: Origin }> {
  const px = await startProxy(options);
  const counts = new Map<string, number>();
  const origin = await startOrigin((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const n = (counts.get(path) ?? 0) + 1;
    counts.set(path, n);
    const h = routes[path];
    if (!h) {
      res.writeHead(404, { date: httpDate(px.clock.now()) });
      res.end('nope');
      return;
    }
    h(req, res, n);
  });
  cleanups.push(
    () => origin.close(),
    () => px.close(),
  );
  return { px, origin };
}
