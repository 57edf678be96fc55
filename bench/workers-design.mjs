#!/usr/bin/env node
// npm run bench:workers-design — the ways a Node.js 24 node can use every core, measured on this
// machine, to choose Coral's worker model (issue 26, "Workers"; the choice and these figures are in
// docs/architecture.md, "The worker model: options measured").
//
// Part 1, HTTP hits. The server under test (bench/lib/workers-server.mjs) is plain node:http
// answering GET /1k and /100k from memory with a cache hit's headers (the runtime's own cost, none
// of the proxy's, as bench:http's plain row), in each shape:
//   one (pinned)    one process on CPU 0, wrk on CPU 1: the per-core row;
//   one             the same process unpinned, wrk beside it: the base of the two-worker rows;
//   reuseport       two processes, each listening with `reusePort: true` (SO_REUSEPORT: the kernel
//                   spreads connections over the two listen sockets by a hash of the 4-tuple);
//   cluster-rr      node:cluster, 2 workers, SCHED_RR (the default: the primary accepts every
//                   connection and passes it to a worker over IPC);
//   cluster-shared  node:cluster, 2 workers, SCHED_NONE (one listen socket shared: the workers race
//                   in accept());
//   threads         one process, 2 worker_threads, each listening with `reusePort: true`.
// Every row but the pinned one runs unpinned on this 2-core machine with wrk beside it (the same
// conditions for every shape). Cases per shape: 1 KiB and 100 KiB over keep-alive connections,
// 1 KiB with `Connection: close` (a connection per request: where accepting and handing off
// connections shows), and 1 KiB and 100 KiB over TLS (ECDSA P-256 from a CA made here; handshakes
// during warm-up only). Reported per case: req/s, p99, the server set's CPU per request (every
// process of the shape), the RSS of the whole set, and the split of requests between the workers
// (each worker counts what it answered); beside the RSS under load, the set's RSS at rest (once
// listening, before any load).
//
// Part 2, DNS over UDP. The same file answers every datagram with a fixed 60-byte DNS answer (the
// query's id copied in; sent as bench:dns's echo server sends): the runtime's ceiling per core, no
// DNS work. Shapes: one (pinned), one, reuseport (two processes, dgram `reusePort: true`), threads
// (two worker_threads, `reusePort`). Load: dnsperf is not used here (bench:dns's runner is in that
// script); the Node generator of bench:dns (bench/dns-load.mjs) with --udp-sockets source ports
// (SO_REUSEPORT spreads datagrams by source address and port: one socket would all land on one
// worker), at maximum rate (--udp-window queries in flight per socket) and at 5,000 q/s.
// Reported: q/s, p50/p99, lost, server CPU per answer, the split between the workers.
//
// Part 3, the cross-worker cost of one cache (bench/lib/workers-ipc.mjs): round trip and
// throughput of a 200-byte metadata request/response and of 64 KiB / 1 MiB bodies over
// process.send (advanced and JSON serialization), a MessagePort between worker_threads (cloned and
// transferred), a Unix domain socket with length-prefixed frames and loopback HTTP; and what a
// SharedArrayBuffer read and an Atomics round trip cost as baselines.
//
// Noise. Every HTTP and UDP run records the hypervisor's steal and the CPU of every other process
// on the machine; a run is quiet when steal < 0.5 % and the others < 5 % of a core (as bench:http).
// The cases of a part alternate in rounds (order rotated each round); a case's figure is the
// median over its quiet runs, over all its runs when none was quiet (the tables say how many).
//
// Options: --seconds N (per HTTP/UDP run, default 4), --warmup N (s per case, default 1),
// --rounds N (default 3), --connections N (wrk, default 64), --threads N (wrk, default 1),
// --udp-sockets N (default 8), --udp-window N (default 16), --ipc-seconds N (per IPC phase,
// default 1), --ipc-window N (calls in flight, default 16), --parts http,udp,ipc (default all),
// --no-https, --no-close, --no-pin, --max-minutes N (the whole run's bound, default 40).
//
// Prints a table per part and ONE JSON line at the end. Every process it starts is killed on exit.
import { fork, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { request as httpsRequest } from 'node:https';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { issueCert, makeTestCa } from '@coral/testkit';
import { bodyFor } from './lib/bodies.mjs';
import {
  canPin,
  cpuWindow,
  installed,
  median,
  nextMessage,
  pinned,
  processMemory,
} from './lib/system.mjs';
import { ipcBench } from './lib/workers-ipc.mjs';
import { wrk, wrkScript } from './lib/wrk.mjs';

const { values: opt } = parseArgs({
  options: {
    seconds: { type: 'string', default: '4' },
    warmup: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '64' },
    threads: { type: 'string', default: '1' },
    'udp-sockets': { type: 'string', default: '8' },
    'udp-window': { type: 'string', default: '16' },
    'ipc-seconds': { type: 'string', default: '1' },
    'ipc-window': { type: 'string', default: '16' },
    parts: { type: 'string', default: 'http,udp,ipc' },
    'no-https': { type: 'boolean', default: false },
    'no-close': { type: 'boolean', default: false },
    'no-pin': { type: 'boolean', default: false },
    'max-minutes': { type: 'string', default: '40' },
  },
});
const SECONDS = Number(opt.seconds);
const WARMUP = Number(opt.warmup);
const ROUNDS = Number(opt.rounds);
const CONNECTIONS = Number(opt.connections);
const THREADS = Number(opt.threads);
const UDP_SOCKETS = Number(opt['udp-sockets']);
const UDP_WINDOW = Number(opt['udp-window']);
const IPC_SECONDS = Number(opt['ipc-seconds']);
const IPC_WINDOW = Number(opt['ipc-window']);
const PARTS = new Set(opt.parts.split(','));
if (
  !(SECONDS >= 2) ||
  !(WARMUP >= 1) ||
  !(ROUNDS >= 1) ||
  !(IPC_SECONDS > 0) ||
  [...PARTS].some((p) => !['http', 'udp', 'ipc'].includes(p))
) {
  console.error(
    '--seconds ≥ 2, --warmup ≥ 1, --rounds ≥ 1, --ipc-seconds > 0, --parts http,udp,ipc',
  );
  process.exit(2);
}
const QUIET_STEAL_PCT = 0.5;
const QUIET_OTHERS_PCT = 5;
const PIN = !opt['no-pin'] && canPin();
if (PARTS.has('http') && !installed('wrk', ['--version'])) {
  console.error('part http needs wrk (apt-get install wrk); run with --parts udp,ipc without it');
  process.exit(2);
}

const tmp = mkdtempSync(join(os.tmpdir(), 'coral-bench-workers-'));
const children = new Set();
/** Pids of every server process started (a cluster's workers are not our children). */
const serverPids = new Set();
const cleanup = () => {
  for (const c of children) c.kill('SIGKILL');
  for (const pid of serverPids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  rmSync(tmp, { recursive: true, force: true });
};
process.on('exit', cleanup);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));
setTimeout(
  () => {
    console.error(`bench:workers-design: over --max-minutes ${opt['max-minutes']}, stopping`);
    process.exit(1);
  },
  Number(opt['max-minutes']) * 60_000,
).unref();

const f = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const round = (x, d = 1) => (Number.isFinite(x) ? Number(x.toFixed(d)) : null);

function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** One table line: each cell padded to its column of `header` (text left, numbers right). */
const table = (header, cells) => {
  const cols = header.split('|');
  const widths = cols.map((h, i) => h.length - (i === 0 || i === cols.length - 1 ? 1 : 2));
  return cells
    .map((c, i) => (/^[-\d.]/.test(c) ? c.padStart(widths[i]) : c.padEnd(widths[i])))
    .join(' | ')
    .trimEnd();
};
const printHeader = (header) => {
  console.log(header);
  console.log(header.replace(/[^|]/g, '-'));
};

/** Quiet: little steal on the CPUs the run used and little CPU taken by everything else. */
const quietOf = (cpu, cpus) => {
  if (!cpu) return { quiet: true, steal: null, others: null };
  const steal = Math.max(...cpus.map((c) => cpu.cpus[c]?.stealPct ?? 0));
  return {
    quiet: steal < QUIET_STEAL_PCT && cpu.othersPct < QUIET_OTHERS_PCT,
    steal,
    others: cpu.othersPct,
  };
};
const ALL_CPUS = os.cpus().map((_, i) => i);
/** The last cells of every run's row: steal, others, quiet. */
const quietCells = (x) => [f(x.steal, 1), f(x.others, 1), x.quiet ? 'yes' : 'NO'];

// ---------------------------------------------------------------------------------------------
// Server sets: the processes of one shape, started once, asked for their per-worker counts.

/** Shapes, by key. `procs`: the processes the bench forks, each given its part of the config. */
const SHAPES = {
  onePinned: { name: 'one (pinned)', cpu: PIN ? 0 : undefined, procs: [{ topology: 'process' }] },
  one: { name: 'one', procs: [{ topology: 'process' }] },
  reuseport: {
    name: 'reuseport ×2',
    procs: [
      { topology: 'process', reusePort: true },
      { topology: 'process', reusePort: true },
    ],
  },
  clusterRr: {
    name: 'cluster-rr ×2',
    procs: [{ topology: 'cluster', scheduling: 'rr', workers: 2 }],
  },
  clusterShared: {
    name: 'cluster-shared ×2',
    procs: [{ topology: 'cluster', scheduling: 'none', workers: 2 }],
  },
  threads: {
    name: 'threads ×2',
    procs: [{ topology: 'threads', workers: 2, reusePort: true }],
  },
};
const HTTP_SHAPES = Object.keys(SHAPES);
const UDP_SHAPES = ['onePinned', 'one', 'reuseport', 'threads'];
if (!PIN) delete SHAPES.onePinned.cpu;

const SERVER = new URL('./lib/workers-server.mjs', import.meta.url).pathname;

/** Start a shape: its processes (pinned as the shape says), each configured and ready. */
async function startSet(shapeKey, base) {
  const shape = SHAPES[shapeKey];
  const procs = [];
  for (const p of shape.procs) {
    const [cmd, args] = pinned(shape.cpu, process.execPath, [SERVER]);
    const child = spawn(cmd, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    children.add(child);
    child.send({ workers: 1, reusePort: false, ...base, ...p });
    const ready = await nextMessage(child, `${shape.name} server`);
    for (const pid of ready.pids) serverPids.add(pid);
    procs.push({ child, pids: ready.pids });
  }
  const pids = procs.flatMap((p) => p.pids);
  const rssBytes = () => pids.reduce((n, pid) => n + (processMemory(pid)?.rss ?? 0), 0);
  return {
    key: shapeKey,
    name: shape.name,
    pinned: shape.cpu !== undefined,
    pids,
    /** The whole set's RSS once every listener is up, before any load. */
    rssIdleMB: rssBytes() / 2 ** 20,
    /** Requests answered so far by each worker, in order. */
    async served() {
      const out = [];
      for (const p of procs) {
        p.child.send('stats');
        out.push(...(await nextMessage(p.child, `${shape.name} server`)).served);
      }
      return out;
    },
    rssBytes,
  };
}

/** The split of a run's requests between workers: "50/50" and the busiest worker's share. */
function splitOf(before, after) {
  const d = after.map((n, i) => n - before[i]);
  const total = d.reduce((a, b) => a + b, 0);
  if (d.length < 2 || total === 0) return { text: '—', maxShare: 1, counts: d };
  return {
    text: d.map((n) => f((100 * n) / total)).join('/'),
    maxShare: Math.max(...d) / total,
    counts: d,
  };
}

/**
 * Warm every case up once, then run `cases` (each with run()) in rounds, the order rotated each
 * round, printing each run as a row of `header` (its cells from `cells(run)`) as it comes.
 */
async function inRounds(cases, header, cells) {
  for (const c of cases) await c.run(Math.max(2, WARMUP)); // JIT, TLS handshakes, pools
  printHeader(header);
  const print = (x) =>
    console.log(table(header, [String(x.round), x.c.id, ...cells(x), ...quietCells(x)]));
  const results = [];
  for (let r = 1; r <= ROUNDS; r++) {
    for (let i = 0; i < cases.length; i++) {
      const c = cases[(i + r - 1) % cases.length];
      const row = { round: r, c, ...(await c.run(SECONDS)) };
      results.push(row);
      print(row);
    }
  }
  return results;
}

/** A case's figure: the median over its quiet runs (over all when none was quiet). */
function summarize(results, c, pick) {
  const all = results.filter((x) => x.c === c);
  const quiet = all.filter((x) => x.quiet);
  return { value: median((quiet.length > 0 ? quiet : all).map(pick)), quietN: quiet.length };
}

const json = {
  bench: 'workers-design',
  node: process.version,
  cpus: os.cpus().length,
  pinned: PIN,
  secondsPerRun: SECONDS,
  rounds: ROUNDS,
  loadavgBefore: os.loadavg().map((x) => round(x, 2)),
};
const t0 = Date.now();

// ---------------------------------------------------------------------------------------------
// Part 1: HTTP hits.

if (PARTS.has('http')) {
  const SIZES = { '1k': 1024, '100k': 100 * 1024 };
  const bodies = Object.fromEntries(Object.entries(SIZES).map(([k, n]) => [k, bodyFor(n)]));
  const HTTPS = !opt['no-https'];
  const ca = HTTPS ? await makeTestCa({ name: 'Coral bench CA' }) : undefined;
  const leaf = ca
    ? await issueCert(ca, { dnsNames: ['bench.test'], ipAddresses: ['127.0.0.1'] })
    : undefined;
  const script = wrkScript(tmp);

  const sets = [];
  for (const key of HTTP_SHAPES) {
    const ports = { http: await freePort(), https: HTTPS ? await freePort() : undefined };
    const set = await startSet(key, {
      proto: 'http',
      port: ports.http,
      tlsPort: ports.https,
      tls: leaf ? { cert: leaf.cert, key: leaf.key } : undefined,
      sizes: SIZES,
    });
    sets.push({ ...set, ports });
  }

  /** GET one object and check its bytes (https: verified against the bench's CA). */
  const check = (set, scheme, size) =>
    new Promise((resolve, reject) => {
      const options = {
        host: '127.0.0.1',
        port: set.ports[scheme],
        path: `/${size}`,
        agent: false,
      };
      const send = scheme === 'https' ? httpsRequest : request;
      const req = send(
        scheme === 'https' ? { ...options, ca: ca.cert, servername: 'bench.test' } : options,
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => {
            const ok = res.statusCode === 200 && Buffer.concat(chunks).equals(bodies[size]);
            if (ok) resolve();
            else reject(new Error(`${set.name} ${scheme} /${size}: wrong answer`));
          });
        },
      );
      req.on('error', reject);
      req.end();
    });

  /** Case variants: [id suffix, scheme, size, extra wrk headers]. */
  const VARIANTS = [
    ['1k', 'http', '1k', []],
    ['100k', 'http', '100k', []],
    ...(opt['no-close'] ? [] : [['1k close', 'http', '1k', ['Connection: close']]]),
    ...(HTTPS
      ? [
          ['1k https', 'https', '1k', []],
          ['100k https', 'https', '100k', []],
        ]
      : []),
  ];
  const cases = [];
  for (const set of sets) {
    for (const [variant, scheme, size, headers] of VARIANTS) {
      await check(set, scheme, size);
      const c = {
        set,
        variant,
        id: `${set.name} ${variant}`,
        async run(seconds) {
          const before = await set.served();
          const r = await wrk({
            script,
            url: `${scheme}://127.0.0.1:${set.ports[scheme]}/${size}`,
            seconds,
            connections: CONNECTIONS,
            threads: THREADS,
            headers,
            cpu: set.pinned ? 1 : undefined,
            ours: { server: set.pids, bench: process.pid },
            children,
          });
          const split = splitOf(before, await set.served());
          if (r.non2xx > 0) throw new Error(`${c.id}: ${r.non2xx} non-2xx answers`);
          const serverPct = r.cpu?.processes.server ?? NaN;
          return {
            r,
            split,
            serverPct,
            usPerReq: ((serverPct / 100) * 1e6) / r.rps,
            rssMB: set.rssBytes() / 2 ** 20,
            ...quietOf(r.cpu, set.pinned ? [0, 1] : ALL_CPUS),
          };
        },
      };
      cases.push(c);
    }
  }

  console.log(
    `\nPart 1 — HTTP hits from memory (plain node:http), wrk ${THREADS} thread, ${CONNECTIONS} connections, ${SECONDS} s per run, ${ROUNDS} rounds; ${os.cpus().length} CPUs; ${PIN ? 'one (pinned): server CPU 0, wrk CPU 1; every other row unpinned, wrk beside it' : 'nothing pinned'}; node ${process.version}; loadavg ${os
      .loadavg()
      .map((x) => f(x, 2))
      .join(' ')}`,
  );
  const header =
    'round | case                          |   req/s |  p50 ms |  p99 ms | errors | srv CPU % | srv µs/req | RSS MB | split %   | steal % | others % | quiet';
  const results = await inRounds(cases, header, (x) => [
    f(x.r.rps),
    f(x.r.p50Ms, 3),
    f(x.r.p99Ms, 3),
    String(x.r.errors),
    f(x.serverPct, 1),
    f(x.usPerReq, 1),
    f(x.rssMB, 1),
    x.split.text,
  ]);

  console.log(
    `\nHTTP summary: median over quiet runs (n), over all runs when n = 0; gain = req/s ÷ "one" (unpinned) in the same variant; CPU ratio = µs/req ÷ "one"'s`,
  );
  const sumHeader =
    'case                          |   req/s |  p99 ms | srv µs/req | RSS MB (idle) | busiest % | quiet n | gain  | CPU ratio';
  printHeader(sumHeader);
  json.http = {};
  for (const c of cases) {
    const rps = summarize(results, c, (x) => x.r.rps);
    const p99 = summarize(results, c, (x) => x.r.p99Ms).value;
    const us = summarize(results, c, (x) => x.usPerReq).value;
    const rss = summarize(results, c, (x) => x.rssMB).value;
    const busiest = summarize(results, c, (x) => x.split.maxShare).value;
    const base = cases.find((b) => b.set.key === 'one' && b.variant === c.variant);
    const gain = rps.value / summarize(results, base, (x) => x.r.rps).value;
    const cpuRatio = us / summarize(results, base, (x) => x.usPerReq).value;
    console.log(
      table(sumHeader, [
        c.id,
        f(rps.value),
        f(p99, 3),
        f(us, 1),
        `${f(rss, 1)} (${f(c.set.rssIdleMB, 1)})`,
        f(100 * busiest, 1),
        String(rps.quietN),
        f(gain, 3),
        f(cpuRatio, 3),
      ]),
    );
    json.http[c.set.key] ??= {};
    json.http[c.set.key][c.variant.replace(/ /g, '-')] = {
      rps: Math.round(rps.value),
      p99Ms: round(p99, 3),
      serverUsPerReq: round(us),
      rssMB: round(rss),
      rssIdleMB: round(c.set.rssIdleMB),
      busiestWorkerShare: round(busiest, 3),
      quietRuns: rps.quietN,
      gainOverOne: round(gain, 3),
      cpuPerReqOverOne: round(cpuRatio, 3),
    };
  }
  json.httpRuns = results.length;
  json.httpQuietRuns = results.filter((x) => x.quiet).length;
  for (const set of sets) {
    for (const p of set.pids) serverPids.delete(p);
    for (const child of children) {
      if (!set.pids.includes(child.pid)) continue;
      child.kill('SIGKILL');
      children.delete(child);
    }
    for (const pid of set.pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone with its primary */
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Part 2: DNS over UDP.

/** Pin every thread of a running process to `cpu` (the generator, once it said it is ready). */
function pinAll(pid, cpu) {
  const r = spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`taskset -a -p -c ${cpu} ${pid}: ${r.stderr}`);
}

/**
 * One load run of bench/dns-load.mjs (max rate or 5,000 q/s), the CPU window over its middle
 * while the generator is alive.
 */
async function udpLoad(port, mode, seconds, cpu, ours) {
  const child = fork(new URL('./dns-load.mjs', import.meta.url), { stdio: 'inherit' });
  children.add(child);
  await nextMessage(child, 'UDP load generator');
  if (cpu !== undefined) pinAll(child.pid, cpu);
  const names = Array.from({ length: 1000 }, (_, i) => `www.site${i}.example.com.nyud.net`);
  child.send({
    port,
    host: '127.0.0.1',
    mode,
    durationMs: seconds * 1000,
    rate: 5000,
    window: UDP_WINDOW,
    sockets: UDP_SOCKETS,
    names,
    seed: 42,
  });
  const result = nextMessage(child, 'UDP load generator');
  await new Promise((r) => setTimeout(r, 500));
  const window = cpuWindow();
  await new Promise((r) => setTimeout(r, Math.max(500, seconds * 1000 - 1000)));
  const usage = window.end({ ...ours, generator: child.pid });
  const r = await result;
  await once(child, 'exit');
  children.delete(child);
  return { ...r, cpu: usage };
}

if (PARTS.has('udp')) {
  const sets = [];
  for (const key of UDP_SHAPES) {
    const port = await freePort();
    sets.push({ ...(await startSet(key, { proto: 'udp', port })), port });
  }
  const cases = [];
  for (const set of sets) {
    for (const mode of ['max', 'rate']) {
      const c = {
        set,
        mode,
        id: `${set.name} ${mode === 'max' ? 'max rate' : '5,000 q/s'}`,
        async run(seconds) {
          const before = await set.served();
          const r = await udpLoad(set.port, mode, seconds, set.pinned ? 1 : undefined, {
            server: set.pids,
            bench: process.pid,
          });
          const split = splitOf(before, await set.served());
          const serverPct = r.cpu?.processes.server ?? NaN;
          return {
            r,
            split,
            serverPct,
            genPct: r.cpu?.processes.generator ?? NaN,
            usPerAnswer: ((serverPct / 100) * 1e6) / r.qps,
            ...quietOf(r.cpu, set.pinned ? [0, 1] : ALL_CPUS),
          };
        },
      };
      cases.push(c);
    }
  }
  console.log(
    `\nPart 2 — UDP, a fixed 60-byte DNS answer per query (no DNS work), Node generator (bench/dns-load.mjs, ${UDP_SOCKETS} sockets, ${UDP_WINDOW} in flight per socket at max rate), ${SECONDS} s per run, ${ROUNDS} rounds; ${PIN ? 'one (pinned): server CPU 0, generator CPU 1; other rows unpinned' : 'nothing pinned'}`,
  );
  const header =
    'round | case                     |     q/s |   sent | lost | p50 ms | p99 ms | srv CPU % | srv µs/q | gen CPU % | split %   | steal % | others % | quiet';
  const results = await inRounds(cases, header, (x) => [
    f(x.r.qps),
    String(x.r.sent),
    String(x.r.lost),
    f(x.r.p50Ms, 3),
    f(x.r.p99Ms, 3),
    f(x.serverPct, 1),
    f(x.usPerAnswer, 1),
    f(x.genPct, 1),
    x.split.text,
  ]);
  console.log(`\nUDP summary: median over quiet runs (n), over all runs when n = 0; gain ÷ "one"`);
  const sumHeader =
    'case                     |     q/s | p50 ms | p99 ms | srv µs/q | busiest % | quiet n | gain';
  printHeader(sumHeader);
  json.udp = {};
  for (const c of cases) {
    const qps = summarize(results, c, (x) => x.r.qps);
    const p50 = summarize(results, c, (x) => x.r.p50Ms).value;
    const p99 = summarize(results, c, (x) => x.r.p99Ms).value;
    const us = summarize(results, c, (x) => x.usPerAnswer).value;
    const busiest = summarize(results, c, (x) => x.split.maxShare).value;
    const base = cases.find((b) => b.set.key === 'one' && b.mode === c.mode);
    const gain = qps.value / summarize(results, base, (x) => x.r.qps).value;
    console.log(
      table(sumHeader, [
        c.id,
        f(qps.value),
        f(p50, 3),
        f(p99, 3),
        f(us, 1),
        f(100 * busiest, 1),
        String(qps.quietN),
        f(gain, 3),
      ]),
    );
    json.udp[c.set.key] ??= {};
    json.udp[c.set.key][c.mode] = {
      qps: Math.round(qps.value),
      p50Ms: round(p50, 3),
      p99Ms: round(p99, 3),
      serverUsPerAnswer: round(us),
      busiestWorkerShare: round(busiest, 3),
      quietRuns: qps.quietN,
      gainOverOne: round(gain, 3),
    };
  }
  json.udpGenerator = 'node';
  json.udpRuns = results.length;
  json.udpQuietRuns = results.filter((x) => x.quiet).length;
}

// ---------------------------------------------------------------------------------------------
// Part 3: the cross-worker channels.

if (PARTS.has('ipc')) {
  const w0 = cpuWindow();
  const { rows, baselines, metaBytes } = await ipcBench({
    seconds: IPC_SECONDS,
    window: IPC_WINDOW,
    socketPath: join(tmp, 'owner.sock'),
  });
  const noise = w0.end({ bench: process.pid });
  console.log(
    `\nPart 3 — cross-worker channels (unpinned; ${IPC_SECONDS} s per phase; throughput with ${IPC_WINDOW} calls in flight; the 200-byte metadata messages are ${metaBytes.structuredClone.join('/')} bytes as structured clone, ${metaBytes.msgpackr.join('/')} msgpackr, ${metaBytes.json.join('/')} JSON (request/reply); other processes used ${f(noise?.othersPct, 1)} % of a core meanwhile)`,
  );
  const header =
    'channel        | size | rtt p50 µs | rtt p99 µs |  calls/s |    MB/s | CPU µs/call (both sides)';
  printHeader(header);
  for (const r of rows) {
    console.log(
      table(header, [
        r.channel,
        r.size,
        f(r.p50Us, 1),
        f(r.p99Us, 1),
        f(r.callsPerS),
        f(r.mbPerS),
        f(r.cpuUsPerCall, 1),
      ]),
    );
  }
  const bHeader = 'baseline       | size | µs per op | rtt p50 µs | rtt p99 µs';
  printHeader(bHeader);
  for (const b of baselines) {
    console.log(table(bHeader, [b.channel, b.size, f(b.us, 3), f(b.p50Us, 1), f(b.p99Us, 1)]));
  }
  json.ipc = {};
  for (const r of rows) {
    json.ipc[`${r.channel.replace(/ /g, '-')} ${r.size}`] = {
      p50Us: round(r.p50Us),
      p99Us: round(r.p99Us),
      callsPerS: Math.round(r.callsPerS),
      mbPerS: round(r.mbPerS, 0),
      cpuUsPerCall: round(r.cpuUsPerCall),
    };
  }
  for (const b of baselines) {
    json.ipc[`${b.channel.replace(/ /g, '-')} ${b.size}`] =
      b.us !== undefined
        ? { usPerOp: round(b.us, 3) }
        : { p50Us: round(b.p50Us), p99Us: round(b.p99Us) };
  }
  json.ipcOthersPct = round(noise?.othersPct);
}

json.loadavgAfter = os.loadavg().map((x) => round(x, 2));
json.wallSeconds = round((Date.now() - t0) / 1000);
console.log(`\nwall ${f(json.wallSeconds, 1)} s; loadavg after ${json.loadavgAfter.join(' ')}`);
console.log(JSON.stringify(json));
process.exit(0);
