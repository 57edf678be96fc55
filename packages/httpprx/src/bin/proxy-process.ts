#!/usr/bin/env node
/**
 * A stand-alone proxy process with an in-memory index: `node dist/bin/proxy-process.js '<json>'`,
 * where the JSON is a `ProxyOptions` object plus optional `port` and `host`, and optional `tls`
 * (`{ port?, cert, key, ticketKeys? }`: PEM strings, the ticket keys as 96 hex digits) for the
 * TLS listener too. Prints one JSON line `{"port":N}` (with `"tlsPort":M` when `tls` is given)
 * once it listens; SIGTERM/SIGINT close it gracefully. Used by the crash test (which SIGKILLs it),
 * the TLS ticket test (a listener in another process) and handy for trying the proxy by hand.
 */
import { CoralProxy } from '../proxy/coral-proxy.js';
import type { ProxyOptions } from '../proxy/types.js';
import { InMemoryContentIndex } from '../memory-index.js';

async function main(): Promise<void> {
  const raw = process.argv[2] ?? process.env['CORAL_PROXY_CONFIG'] ?? '{}';
  let config: Partial<ProxyOptions> & {
    port?: number;
    host?: string;
    tls?: { port?: number; cert: string; key: string; ticketKeys?: string };
  };
  try {
    config = JSON.parse(raw) as typeof config;
  } catch (e) {
    process.stderr.write(`proxy-process: config is not JSON: ${String(e)}\n`);
    process.exit(2);
  }
  const proxy = new CoralProxy(
    { index: new InMemoryContentIndex() },
    {
      ...config,
      self: config.self ?? { nodeId: '00'.repeat(20), ip: config.host ?? '127.0.0.1', httpPort: 0 },
    },
  );
  const { port } = await proxy.listen(config.port ?? 0, config.host ?? '127.0.0.1');
  const tls = config.tls
    ? await proxy.listenTls({
        port: config.tls.port ?? 0,
        host: config.host ?? '127.0.0.1',
        cert: config.tls.cert,
        key: config.tls.key,
        ...(config.tls.ticketKeys ? { ticketKeys: Buffer.from(config.tls.ticketKeys, 'hex') } : {}),
      })
    : undefined;
  process.stdout.write(JSON.stringify({ port, ...(tls ? { tlsPort: tls.port } : {}) }) + '\n');
  const stop = () => {
    proxy.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((e: unknown) => {
  process.stderr.write(`proxy-process: ${String(e)}\n`);
  process.exit(1);
});
