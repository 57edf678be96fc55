/**
 * What a Coral client does, for tests and benchmarks: resolve a Coralized name through a node's
 * DNS server with Node's own stub resolver, then fetch through the proxy it was given.
 */
import { Resolver } from 'node:dns/promises';
import { request, type Agent } from 'node:http';

/** A records of `name` from the DNS server at `server` (Node's stub resolver, setServers). */
export async function resolveThrough(
  server: { ip: string; port: number },
  name: string,
  opts: { timeoutMs?: number; tries?: number; localAddress?: string } = {},
): Promise<string[]> {
  const resolver = new Resolver({ timeout: opts.timeoutMs ?? 2_000, tries: opts.tries ?? 3 });
  resolver.setServers([`${server.ip}:${server.port}`]);
  // Each client its own source address: the server sees (and rate-limits) separate resolvers.
  if (opts.localAddress) resolver.setLocalAddress(opts.localAddress);
  return resolver.resolve4(name);
}

export interface FetchResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** The `Cache-Status` header (RFC 9211), '' when absent. */
  cacheStatus: string;
}

/** GET `path` from the proxy at `proxy` with `Host: host`. */
export function fetchVia(
  proxy: { ip: string; port: number },
  host: string,
  path: string,
  opts: {
    agent?: Agent;
    timeoutMs?: number;
    headers?: Record<string, string>;
    localAddress?: string;
  } = {},
): Promise<FetchResult> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: proxy.ip,
        port: proxy.port,
        path,
        method: 'GET',
        headers: { host, ...opts.headers },
        agent: opts.agent,
        localAddress: opts.localAddress,
        timeout: opts.timeoutMs ?? 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const cs = res.headers['cache-status'];
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
            cacheStatus: Array.isArray(cs) ? cs.join(', ') : (cs ?? ''),
          });
        });
      },
    );
    req.on('timeout', () =>
      req.destroy(new Error(`request to ${proxy.ip}:${proxy.port}${path} timed out`)),
    );
    req.on('error', reject);
    req.end();
  });
}
