// A server under test for bench/http.mjs, in a process of its own so the bench can pin it to one
// CPU and read its CPU time from /proc. One IPC message configures it:
//   { role: 'proxy', originPort, dataDir }  a CoralProxy (disk store in dataDir, rate limiter in
//       the path set high enough not to refuse the one benchmark client) in front of the bench's
//       origin on 127.0.0.1:originPort, reached as origin.test.<originPort>.nyud.net
//   { role: 'plain', sizes, headers }  a plain node:http server sending, for GET /<name>, the same
//       body bytes as the origin and the header list `headers[name]` (the proxy's hit headers,
//       captured by the bench) from memory: the baseline of the proxy's hit path
// With `tls: { cert, key }` (PEM) in the message the server also listens over TLS (the proxy with
// its TLS listener, `listenTls`; the plain server with node:https, same handler), and it answers
// { ports: { http, https } }; else { ports: { http } }. The bench's case table picks the https
// rows up from there. The proxy's process also runs the node's heap trim at its default (a trim
// stops the event loop: each is printed on stderr with the time it took).
import { createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { bodyFor } from './lib/bodies.mjs';
import { startHeapTrim } from './lib/heap-trim.mjs';

process.once('disconnect', () => process.exit(0));
const config = await new Promise((resolve) => process.once('message', resolve));

if (config.role === 'proxy') {
  const { CoralProxy, InMemoryContentIndex } = await import('@coral/httpprx');
  const proxy = new CoralProxy(
    { index: new InMemoryContentIndex() },
    {
      allowPrivateOrigins: true,
      hosts: { 'origin.test': ['127.0.0.1'] },
      dataDir: config.dataDir,
      self: { nodeId: 'be'.repeat(20), ip: '127.0.0.1', httpPort: 0 },
      rateLimit: { perSecond: 1e9, burst: 1e9 },
    },
  );
  await startHeapTrim((released, tookMs) =>
    console.error(
      `bench:http proxy: heap trimmed ${(released / 1e6).toFixed(1)} MB in ${tookMs} ms`,
    ),
  );
  const { port } = await proxy.listen(0, '127.0.0.1');
  const ports = { http: port };
  if (config.tls) {
    const tls = await proxy.listenTls({ port: 0, host: '127.0.0.1', ...config.tls });
    ports.https = tls.port;
  }
  process.send({ ports });
} else if (config.role === 'plain') {
  const replies = new Map(
    Object.entries(config.sizes).map(([name, bytes]) => [
      `/${name}`,
      { body: bodyFor(bytes), headers: config.headers[name] },
    ]),
  );
  const handler = (req, res) => {
    const r = replies.get(req.url);
    if (!r) return res.writeHead(404).end();
    res.writeHead(200, r.headers);
    res.end(req.method === 'HEAD' ? undefined : r.body);
  };
  const listen = async (server) => {
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    return server.address().port;
  };
  const ports = { http: await listen(createServer({ keepAliveTimeout: 5_000 }, handler)) };
  if (config.tls) {
    // As the proxy's TLS listener: HTTP/1.1 only (ALPN), the same keep-alive timeout.
    const options = { ...config.tls, ALPNProtocols: ['http/1.1'], keepAliveTimeout: 5_000 };
    ports.https = await listen(createHttpsServer(options, handler));
  }
  process.send({ ports });
} else {
  throw new Error(`unknown role ${config.role}`);
}
