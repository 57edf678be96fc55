// npm run bench:dns — load on the DNS redirector over real UDP on loopback.
//
// Phases (each bounded in time): (1) maximum rate with the encoded-answer cache disabled (every
// answer built and encoded through dns2), (2) maximum rate with the cache, (3) a fixed 5,000 q/s
// with the cache, (4) the same fixed rate against a UDP echo server (the machine's floor). The
// load comes from dnsperf when it is installed (a separate process; per-query latencies from its
// -v output), otherwise from the Node generator in bench/dns-load-worker.mjs, in a worker thread
// with its own event loop. The server runs on this thread. Prints a table and ends with ONE JSON line.
//
// Options: --seconds N (per measured phase, default 3), --names N (distinct names, default 1000),
// --window N (queries in flight per socket at maximum rate, 4 sockets, default 32),
// --node-generator (use the Node generator even when dnsperf is installed).
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import dgram from 'node:dgram';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { DnsServer, InMemoryNodeDirectory } from '../packages/dnssrv/dist/index.js';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const seconds = arg('seconds', 3);
const nNames = arg('names', 1000);
const window = arg('window', 32);
const names = Array.from({ length: nNames }, (_, i) => `www.site${i}.example.com.nyud.net`);

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

async function startServer(cache) {
  const server = new DnsServer(
    { directory: fleet() },
    {
      nameservers: [{ name: 'ns1.nyud.net', ipv4: '127.0.0.1' }],
      rrl: { responsesPerSecond: 0 }, // one source sends everything: RRL would (rightly) drop it
      answerCache: { enabled: cache },
    },
  );
  const { port } = await server.listen({ port: 0, host: '127.0.0.1' });
  return { server, port };
}

const useDnsperf =
  !process.argv.includes('--node-generator') &&
  spawnSync('dnsperf', ['-h'], { stdio: 'ignore' }).error === undefined;
const generator = useDnsperf ? 'dnsperf' : 'node';
const load = useDnsperf ? loadDnsperf : loadNode;

// dnsperf in its own process: EDNS queries for the same names, at most 128 in flight at maximum
// rate, -Q 5000 for the fixed rate. Its per-query lines ("> NOERROR name A 0.000123") give latencies.
let dnsperfDir;
function loadDnsperf(port, mode, durationMs) {
  if (!dnsperfDir) {
    dnsperfDir = mkdtempSync(join(os.tmpdir(), 'coral-dnsperf-'));
    writeFileSync(join(dnsperfDir, 'queries.txt'), names.map((n) => `${n} A\n`).join(''));
    process.on('exit', () => rmSync(dnsperfDir, { recursive: true, force: true }));
  }
  const args = ['-s', '127.0.0.1', '-p', String(port), '-d', join(dnsperfDir, 'queries.txt')];
  args.push('-l', String(Math.max(1, Math.round(durationMs / 1000))), '-e', '-v', '-t', '2');
  args.push(...(mode === 'max' ? ['-q', '128'] : ['-q', '100', '-Q', '5000']));
  return new Promise((resolve, reject) => {
    const child = spawn('dnsperf', args, { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => (out += d));
    child.once('error', reject);
    child.once('close', () => {
      const lat = [];
      for (const line of out.split('\n')) {
        if (line.startsWith('> ')) lat.push(Number(line.slice(line.lastIndexOf(' ') + 1)) * 1000);
      }
      lat.sort((a, b) => a - b);
      const pct = (p) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))];
      const num = (re) => Number(re.exec(out)?.[1] ?? NaN);
      const sent = num(/Queries sent:\s+(\d+)/);
      const received = num(/Queries completed:\s+(\d+)/);
      resolve({
        mode,
        sent,
        received,
        lost: sent - received,
        qps: num(/Queries per second:\s+([\d.]+)/),
        p50Ms: pct(50),
        p90Ms: pct(90),
        p99Ms: pct(99),
        p999Ms: pct(99.9),
        maxMs: lat[lat.length - 1],
      });
    });
  });
}

function loadNode(port, mode, durationMs, extra = {}) {
  return new Promise((resolve, reject) => {
    const w = new Worker(new URL('./dns-load-worker.mjs', import.meta.url), {
      workerData: {
        port,
        host: '127.0.0.1',
        mode,
        durationMs,
        rate: 5000,
        window,
        sockets: 4,
        names,
        seed: 42,
        ...extra,
      },
    });
    w.once('message', resolve);
    w.once('error', reject);
  });
}

const load0 = os.loadavg();
const rows = [];

{
  const { server, port } = await startServer(false);
  await load(port, 'max', 500); // warm up the JIT
  rows.push({ phase: 'max rate, no answer cache', ...(await load(port, 'max', seconds * 1000)) });
  await server.close();
}
let stats;
let loopDelay;
{
  const { server, port } = await startServer(true);
  await load(port, 'max', 500);
  rows.push({ phase: 'max rate, answer cache', ...(await load(port, 'max', seconds * 1000)) });
  // How late the server thread's own 1 ms timers run during the 5,000 q/s phase: how
  // often the thread is descheduled (CPU contention), independent of the DNS work.
  const eld = monitorEventLoopDelay({ resolution: 1 });
  eld.enable();
  rows.push({ phase: 'fixed 5,000 q/s, cache', ...(await load(port, 'rate', seconds * 1000)) });
  eld.disable();
  loopDelay = { p50: eld.percentile(50) / 1e6, p99: eld.percentile(99) / 1e6, max: eld.max / 1e6 };
  stats = server.stats();
  await server.close();
}

// The floor this machine sets: the same load generator against a UDP echo server that does no
// DNS work at all (same process layout: server on this thread, generator in a worker).
{
  const echo = dgram.createSocket('udp4');
  echo.on('message', (m, r) => echo.send(m, r.port, r.address));
  await new Promise((r) => echo.bind(0, '127.0.0.1', r));
  await load(echo.address().port, 'rate', 500);
  rows.push({
    phase: 'fixed 5,000 q/s, UDP echo',
    ...(await load(echo.address().port, 'rate', seconds * 1000)),
  });
  echo.close();
}

const f = (x, d = 3) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
console.log(
  `DNS redirector load (${generator} generator) — ${os.cpus().length} CPUs, loadavg before ${load0.map((x) => x.toFixed(2)).join(' ')}, ${nNames} names, ${seconds}s per phase`,
);
console.log(
  'phase                        |      q/s |     sent | lost | p50 ms | p90 ms | p99 ms | p99.9 ms',
);
console.log(
  '-----------------------------+----------+----------+------+--------+--------+--------+---------',
);
for (const r of rows) {
  console.log(
    `${r.phase.padEnd(29)}| ${f(r.qps, 0).padStart(8)} | ${String(r.sent).padStart(8)} | ${String(r.lost).padStart(4)} | ${f(r.p50Ms).padStart(6)} | ${f(r.p90Ms).padStart(6)} | ${f(r.p99Ms).padStart(6)} | ${f(r.p999Ms).padStart(7)}`,
  );
}
console.log(
  `server event-loop delay during the 5,000 q/s phase (1 ms timer): p50 ${f(loopDelay.p50)} ms, p99 ${f(loopDelay.p99)} ms, max ${f(loopDelay.max)} ms`,
);
console.log(
  `cache: ${stats.cache.hits} hits, ${stats.cache.misses} misses; loadavg after ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
const [noCache, max, at5k, echo5k] = rows;
console.log(
  JSON.stringify({
    bench: 'dns',
    generator,
    qps: Math.round(max.qps),
    p50Ms: Number(f(max.p50Ms)),
    p99Ms: Number(f(max.p99Ms)),
    p99MsAt5k: Number(f(at5k.p99Ms)),
    p50MsAt5k: Number(f(at5k.p50Ms)),
    qpsAt5k: Math.round(at5k.qps),
    lost: max.lost + at5k.lost,
    qpsNoCache: Math.round(noCache.qps),
    loopDelayP99MsAt5k: Number(f(loopDelay.p99)),
    echoP99MsAt5k: Number(f(echo5k.p99Ms)),
    p99MsNoCache: Number(f(noCache.p99Ms)),
    loadavgBefore: load0.map((x) => Number(x.toFixed(2))),
    loadavgAfter: os.loadavg().map((x) => Number(x.toFixed(2))),
  }),
);
