// The server side of bench/dns.mjs, in a child process of its own so the bench can pin it to a
// CPU (taskset) apart from, or together with, the load generator. One IPC message configures it
// ({ kind: 'workers', workers: N, directory }: a node's DNS on N worker threads, see below), or:
//   { kind: 'dns', cache: true|false, directory }  a DnsServer (RRL off: one source) locating
//     proxies through directory 'memory' (an InMemoryNodeDirectory of 20) or 'dsht' (a
//     DshtDirectory over node 0 of a 200-node simulated fleet, as a real coral-node does)
//   { kind: 'echo' }                    a UDP echo server: the same sockets and the same batched
//     sends as the DNS server, no DNS work at all
// It answers { port } once bound. Then 'mark' starts a measurement window and 'report' ends it with
// what the server spent in it: CPU time per answer, GC pauses (from perf_hooks 'gc' entries) and
// the answer cache's counters. 'stats' answers { stats: server.stats() }. 'exit' closes the server and ends the process. (No timers run in
// here while measuring: an event-loop delay monitor would wake the server every millisecond.)
import dgram from 'node:dgram';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { DshtDirectory } from '../packages/node/dist/adapters/node-directory.js';
import { SimFleet } from '../packages/sim/dist/index.js';

// Another build of dnssrv may be measured (bench/dns.mjs --dist <its dist/index.js>): an A/B.
const { DnsServer, InMemoryNodeDirectory } = await import(
  process.env.CORAL_DNSSRV_DIST
    ? pathToFileURL(process.env.CORAL_DNSSRV_DIST).href
    : '../packages/dnssrv/dist/index.js'
);

// If the bench goes away (killed, interrupted), so does this server.
process.once('disconnect', () => process.exit(0));
const config = await new Promise((resolve) => process.once('message', resolve));

function fleet() {
  const hex = (i) => i.toString(16).padStart(40, '0');
  const dir = new InMemoryNodeDirectory(
    {},
    { self: { id: hex(1), ipv4: '10.0.0.1', httpPort: 8090 } },
  );
  for (let i = 2; i <= 20; i++) {
    dir.add(
      { id: hex(i), ipv4: `10.0.0.${i}`, httpPort: 8090 },
      { clusters: i < 6 ? [1, 2] : [1] },
    );
  }
  return dir;
}

/** A real DSHT directory: node 0 of a simulated fleet, every node a proxy (its clock stands still). */
async function dshtDirectory() {
  const fleet = new SimFleet({
    nodes: 200,
    seed: 7,
    dsht: { hints: false, service: { httpPort: 8090, region: 'r1' } },
  });
  await fleet.start();
  return new DshtDirectory({ dsht: fleet.nodes[0] });
}

let answered; // () => answers so far
let close;
let cacheStats = () => undefined;
let serverStats = () => undefined;
/** Brings the counters up to date before they are read (the workers' reports lag by up to 1 s). */
let refresh = async () => {};
if (config.kind === 'workers') {
  // A node's DNS with `workers: N` (bench/dns.mjs --workers): the owner (this thread, holding the
  // directory) and N worker threads of packages/node/dist/workers/worker-main.js, each a DnsServer
  // on the same port with reusePort. Its own config: RRL off (one source sends everything).
  const { DnsWorkers } = await import('../packages/node/dist/workers/dns-workers.js');
  const { loadConfig } = await import('../packages/node/dist/config/index.js');
  const directory = config.directory === 'dsht' ? await dshtDirectory() : fleet();
  const quiet = { info() {}, warn() {}, error: (o, m) => console.error(m, o) };
  const server = new DnsWorkers(
    { directory, clock: { now: Date.now, setTimeout: unrefTimeout }, logger: quiet },
    {
      config: loadConfig({
        overrides: {
          workers: config.workers,
          dns: {
            host: '127.0.0.1',
            rateLimitPerSecond: 0,
            nameservers: [{ name: 'ns1.nyud.net', ip: '127.0.0.1' }],
          },
          log: { level: 'warn' },
        },
      }),
    },
  );
  const { port } = await server.listen({ port: 0, host: '127.0.0.1' });
  refresh = () => server.refreshStats();
  answered = () => server.stats().responses;
  cacheStats = () => server.stats().cache;
  serverStats = () => server.stats();
  close = () => server.close();
  process.send({ port });
} else if (config.kind === 'dns') {
  const directory = config.directory === 'dsht' ? await dshtDirectory() : fleet();
  const server = new DnsServer(
    { directory },
    {
      nameservers: [{ name: 'ns1.nyud.net', ipv4: '127.0.0.1' }],
      rrl: { responsesPerSecond: 0 }, // one source sends everything: RRL would (rightly) drop it
      answerCache: { enabled: config.cache },
    },
  );
  const { port } = await server.listen({ port: 0, host: '127.0.0.1' });
  answered = () => server.stats().responses;
  cacheStats = () => server.stats().cache;
  serverStats = () => server.stats();
  close = () => server.close();
  process.send({ port });
} else {
  const echo = dgram.createSocket('udp4');
  let n = 0;
  // Sent as the DNS server sends its answers (packages/dnssrv/src/server/udp.ts): queued, then
  // together after the datagrams read in this turn of the event loop.
  const queue = [];
  const flush = () => {
    for (let i = 0; i < queue.length; i += 2) {
      echo.send(queue[i], queue[i + 1].port, queue[i + 1].address);
    }
    queue.length = 0;
  };
  echo.on('message', (m, r) => {
    n++;
    if (queue.push(m, r) === 2) setImmediate(flush);
  });
  await new Promise((r) => echo.bind(0, '127.0.0.1', r));
  answered = () => n;
  close = () => new Promise((r) => echo.close(r));
  process.send({ port: echo.address().port });
}

let window;
const gc = new PerformanceObserver((list) => {
  if (!window) return;
  for (const e of list.getEntries()) {
    const kind = e.detail?.kind;
    const g =
      kind === constants.NODE_PERFORMANCE_GC_MINOR
        ? window.minor
        : kind === constants.NODE_PERFORMANCE_GC_MAJOR
          ? window.major
          : undefined; // incremental marking steps and weak callbacks are not pauses of their own
    if (!g) continue;
    g.count++;
    g.totalMs += e.duration;
    g.maxMs = Math.max(g.maxMs, e.duration);
  }
});
gc.observe({ entryTypes: ['gc'] });

function unrefTimeout(fn, ms) {
  const t = setTimeout(fn, ms);
  t.unref();
  return { cancel: () => clearTimeout(t) };
}

process.on('message', async (msg) => {
  if (msg === 'mark' || msg === 'report' || msg === 'stats') await refresh();
  if (msg === 'mark') {
    window = {
      cpu: process.cpuUsage(),
      answers: answered(),
      cache: cacheStats(),
      minor: { count: 0, totalMs: 0, maxMs: 0 },
      major: { count: 0, totalMs: 0, maxMs: 0 },
    };
    process.send('marked');
  } else if (msg === 'report') {
    const w = window;
    window = undefined;
    const cpu = process.cpuUsage(w.cpu);
    const answers = answered() - w.answers;
    const cache = cacheStats();
    process.send({
      answers,
      cpuUsPerAnswer: answers > 0 ? (cpu.user + cpu.system) / answers : null,
      gcMinor: w.minor,
      gcMajor: w.major,
      cacheHits: cache ? cache.hits - w.cache.hits : undefined,
      cacheMisses: cache ? cache.misses - w.cache.misses : undefined,
    });
  } else if (msg === 'stats') {
    process.send({ stats: serverStats() });
  } else if (msg === 'exit') {
    gc.disconnect();
    await close();
    process.exit(0);
  }
});
