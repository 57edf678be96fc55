// The server under test of bench/workers-design.mjs, in every shape a Node.js 24 node can take to
// use more than one core. The bench forks this file (with an IPC channel, pinned or not) and sends
// one message, the configuration:
//   { proto: 'http', topology, workers, reusePort, port, tlsPort?, tls?: { cert, key }, sizes }
//       node:http (and node:https on tlsPort when tls is given) answering GET /<name> for each
//       `sizes` entry (name → bytes) with that many bytes of bench/lib/bodies.mjs from memory and a
//       cache hit's headers (see HIT_HEADERS), as bench/http.mjs's plain baseline does;
//   { proto: 'udp', topology, workers, reusePort, port }
//       a UDP socket answering every datagram with the same 60-byte DNS answer (the query's id
//       copied in), sent as bench:dns's echo server sends: queued, then together after the
//       datagrams read in this turn of the event loop — the runtime's own ceiling, no DNS work.
// `topology`:
//   'process'  this process serves (with `reusePort`, two of them make the reusePort row);
//   'cluster'  this process is a cluster primary with `workers` workers serving; `scheduling`
//              'rr' (cluster.SCHED_RR, the primary accepts and hands each connection to a worker)
//              or 'none' (cluster.SCHED_NONE: the workers accept on one shared listen socket);
//   'threads'  this process runs `workers` worker_threads, each with its own listener on the same
//              port (`reusePort`, SO_REUSEPORT).
// It answers { ready: true, pids } once every listener is up (pids: this process and any worker
// processes, for the bench's CPU and memory accounting). Then 'stats' answers { served: [n, ...] }:
// requests (or datagrams) answered so far by each worker, in worker order. It exits when the
// bench goes away.
import cluster from 'node:cluster';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { bodyFor } from './bodies.mjs';

/**
 * The header list of a cache hit (as a proxy in front of a static origin sends it): node:http adds
 * Date, Connection and Keep-Alive.
 */
export const HIT_HEADERS = [
  ['content-type', 'application/octet-stream'],
  ['cache-control', 'public, max-age=3600'],
  ['last-modified', 'Mon, 01 Dec 2025 00:00:00 GMT'],
  ['accept-ranges', 'bytes'],
  ['age', '12'],
  ['via', '1.1 coral (Coral/0.1)'],
  ['cache-status', 'coral; hit; ttl=3588'],
];

/** The fixed UDP answer: a DNS response with one A record, 60 bytes (the id is the query's). */
export const UDP_REPLY = (() => {
  const b = Buffer.alloc(60);
  b.writeUInt16BE(0x8400, 2); // QR, AA
  b.writeUInt16BE(1, 4); // QDCOUNT
  b.writeUInt16BE(1, 6); // ANCOUNT
  // Question: "w1.nyud.net" A IN (17 bytes), then the answer: a name pointer, A IN, TTL 30, 4 bytes.
  let p = 12;
  for (const label of ['w1', 'nyud', 'net']) {
    b[p++] = label.length;
    p += b.write(label, p, 'latin1');
  }
  b[p++] = 0;
  p = b.writeUInt16BE(1, p);
  p = b.writeUInt16BE(1, p);
  p = b.writeUInt16BE(0xc00c, p);
  p = b.writeUInt16BE(1, p);
  p = b.writeUInt16BE(1, p);
  p = b.writeUInt32BE(30, p);
  p = b.writeUInt16BE(4, p);
  b.set([127, 0, 0, 1], p); // ends at byte 56; the last 4 bytes are padding
  return b;
})();

/** Start this worker's listeners; resolves to a function that counts what it answered. */
async function serve(config) {
  if (config.proto === 'udp') return serveUdp(config);
  let served = 0;
  const replies = new Map(
    Object.entries(config.sizes).map(([name, bytes]) => {
      const body = bodyFor(bytes);
      const headers = [...HIT_HEADERS, ['etag', `"${name}-v1"`]].flat();
      return [`/${name}`, { body, headers }];
    }),
  );
  const handler = (req, res) => {
    served++;
    const r = replies.get(req.url);
    if (!r) return res.writeHead(404).end();
    res.writeHead(200, r.headers);
    res.end(req.method === 'HEAD' ? undefined : r.body);
  };
  const listen = async (server, port) => {
    server.listen({ port, host: '127.0.0.1', reusePort: config.reusePort });
    await once(server, 'listening');
  };
  await listen(createServer({ keepAliveTimeout: 5_000 }, handler), config.port);
  if (config.tls) {
    const options = { ...config.tls, ALPNProtocols: ['http/1.1'], keepAliveTimeout: 5_000 };
    await listen(createHttpsServer(options, handler), config.tlsPort);
  }
  return () => served;
}

async function serveUdp(config) {
  let served = 0;
  const socket = dgram.createSocket({ type: 'udp4', reusePort: config.reusePort });
  const queue = [];
  const flush = () => {
    for (let i = 0; i < queue.length; i += 2) {
      const query = queue[i];
      const reply = Buffer.allocUnsafe(UDP_REPLY.length);
      UDP_REPLY.copy(reply);
      reply[0] = query[0];
      reply[1] = query[1];
      socket.send(reply, queue[i + 1].port, queue[i + 1].address);
    }
    queue.length = 0;
  };
  socket.on('message', (m, r) => {
    if (m.length < 12) return;
    served++;
    if (queue.push(m, r) === 2) setImmediate(flush);
  });
  socket.bind(config.port, '127.0.0.1');
  await once(socket, 'listening');
  return () => served;
}

if (!isMainThread) {
  // A worker thread of the 'threads' topology.
  const served = await serve(workerData);
  parentPort.on('message', (m) => {
    if (m === 'stats') parentPort.postMessage({ served: served() });
  });
  parentPort.postMessage('ready');
} else if (cluster.isWorker) {
  // A worker process of the 'cluster' topology (its configuration in the environment).
  const served = await serve(JSON.parse(process.env.CORAL_BENCH_WORKER_CONFIG));
  process.on('message', (m) => {
    if (m === 'stats') process.send({ served: served() });
  });
  process.send('ready');
} else {
  // The process the bench forked.
  process.once('disconnect', () => process.exit(0));
  const [config] = await once(process, 'message');
  /** Each worker: ask() resolves to its count. */
  let workers;
  const pids = [process.pid];
  if (config.topology === 'process') {
    const served = await serve(config);
    workers = [{ ask: async () => served() }];
  } else if (config.topology === 'cluster') {
    cluster.schedulingPolicy = config.scheduling === 'none' ? cluster.SCHED_NONE : cluster.SCHED_RR;
    cluster.setupPrimary({ exec: new URL(import.meta.url).pathname, silent: false });
    const env = { CORAL_BENCH_WORKER_CONFIG: JSON.stringify({ ...config, reusePort: false }) };
    const forked = Array.from({ length: config.workers }, () => cluster.fork(env));
    await Promise.all(forked.map((w) => once(w, 'message')));
    pids.push(...forked.map((w) => w.process.pid));
    workers = forked.map((w) => ({
      ask: async () => {
        w.send('stats');
        const [m] = await once(w, 'message');
        return m.served;
      },
    }));
  } else if (config.topology === 'threads') {
    const threads = Array.from(
      { length: config.workers },
      () => new Worker(new URL(import.meta.url), { workerData: config }),
    );
    await Promise.all(threads.map((t) => once(t, 'message')));
    workers = threads.map((t) => ({
      ask: async () => {
        t.postMessage('stats');
        const [m] = await once(t, 'message');
        return m.served;
      },
    }));
  } else {
    throw new Error(`unknown topology ${config.topology}`);
  }
  process.on('message', (m) => {
    if (m !== 'stats') return;
    void Promise.all(workers.map((w) => w.ask())).then((served) => process.send({ served }));
  });
  process.send({ ready: true, pids });
}
