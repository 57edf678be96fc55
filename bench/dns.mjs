// npm run bench:dns — load on the DNS redirector over real UDP on loopback.
//
// The server (bench/dns-server.mjs) and the load generator each run in a process of their own,
// pinned to a CPU with taskset when it is there (Linux; for the server only its event-loop thread,
// so V8's parallel scavenges still get the other CPU, as they would unpinned):
//   - maximum rate, server on CPU 0 and generator on CPU 1 (both busy all the time): first with
//     the encoded-answer cache disabled (every answer built and encoded through dns2), then with it
//     (repeated, at most 5 times, until one attempt is quiet: see below);
//   - fixed 5,000 q/s, server and generator sharing CPU 0 (no cross-vCPU wake-ups), in trials,
//     each followed by the same load against a UDP echo server (no DNS work: the floor of this
//     machine and this generator). One split-core trial (server CPU 0, generator CPU 1) follows.
//
// Quiet trials. This VM is shared: the hypervisor at times takes a vCPU away (steal, from
// /proc/stat), and other jobs on the same two CPUs (other builds and tests) take the server's and
// the generator's turns. Either sets the p99 of any process, the echo server's too, whatever the
// work per query. Every phase records the steal on the CPUs it used and the CPU time of every
// other process on the machine ("others", own and reaped children, from /proc: bench/lib/system.mjs);
// a phase is quiet when steal stayed under 0.5 % (at most one 10 ms tick in 3 s) and the others
// under 5 % of one core. Each 5,000 q/s trial is followed by the same load on the UDP echo
// server; the two make a pair, and the pair is quiet when both are. Trials run until --trials
// quiet pairs are in, at most --max-trials in all. The headline 5,000 q/s figures are the median
// over the quiet pairs' DNS trials (beside them the echo trials' median: the floor in the same
// minutes), the median over all trials is reported too, and every trial is printed.
//
// Saturation. At maximum rate the server's CPU (its process, all threads) and the generator's
// (its own and its children's ticks) are printed as % of one core: a server near 100 % is
// saturated; a generator near 100 % with the server below is the generator's limit. The same
// maximum-rate load on the echo server follows ("max rate, echo"): what a Node UDP server that
// does no DNS work at all reaches on this machine with this generator, the ceiling for the row
// above it.
//
// The load comes from dnsperf when it is installed (per-query latencies from its -v output),
// otherwise from the Node generator in bench/dns-load.mjs. Prints a table and ends with ONE JSON
// line.
//
// Two name sets: --names N distinct names (default 10,000: as many as a resolver population asks,
// so new names and expiring answers are part of the load), then the old small set (--small-names,
// default 1,000) as a second row, with its own maximum-rate attempt and 5,000 q/s trials
// (--small-trials quiet ones wanted, default 3; 0 skips the row).
//
// Workers mode (--workers; issue 26): Coral's DNS on one thread, Coral's DNS as a node with
// `workers: 2` runs it (packages/node/dist/workers: the owner thread with the directory and two
// worker threads with reusePort), and Knot DNS with 2 UDP threads (bench/knot/: its configuration
// and a zone answering every name with two A records, as Coral does), one after the other in the
// same run, all unpinned with dnsperf beside them (the same conditions for the three), dnsperf
// with --clients sockets (default 8 here: the kernel spreads flows over the listeners by source
// port, so one socket would reach one worker) at maximum rate and at 5,000 q/s. For each: the
// maximum rate (the first quiet of at most 5 attempts) and 5,000 q/s trials until --trials are
// quiet (at most --max-trials); then Coral(2)/Coral(1) and Coral(2)/Knot(2). Needs dnsperf and
// knotd. GC columns count the main thread only.
//
// Options: --seconds N (per measured phase, default 3), --trials N (quiet pairs wanted, default
// 5), --max-trials N (default 15), --clients N (dnsperf sockets at maximum rate, default 1),
// --outstanding N (queries in flight at maximum rate, default 128), --window N (Node
// generator: queries in flight per socket at maximum rate, 4 sockets, default 32),
// --dist PATH (measure another build of dnssrv: its dist/index.js, for an A/B),
// --node-generator (even when dnsperf is installed), --no-pin (no taskset), --directory dsht (the
// server locates proxies through a DshtDirectory over a 200-node simulated fleet, as a real node
// does, instead of an in-memory directory of 20).
import os from 'node:os';
import { fork, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { cpuWindow, processTicks, CLK_TCK } from './lib/system.mjs';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const seconds = arg('seconds', 3);
const trials = arg('trials', 5);
const maxTrials = Math.max(trials, arg('max-trials', 15));
/**
 * A trial is quiet when the hypervisor took less than this share of its CPUs. /proc/stat counts
 * steal in 10 ms ticks; at 5,000 q/s one tick can delay ~50 of a trial's 15,000 queries, so three
 * (1 % of 3 s) can decide its p99 by themselves: quiet means at most one tick per CPU.
 */
const QUIET_STEAL_PCT = 0.5;
/** ... and the other processes on the machine used less than this share of one core. */
const QUIET_OTHERS_PCT = 5;
const MAX_RATE_ATTEMPTS = 5;
const nNames = arg('names', 10000);
const nSmall = arg('small-names', 1000);
const smallTrials = arg('small-trials', 3);
const window = arg('window', 32);
const workersMode = process.argv.includes('--workers');
const clients = arg('clients', workersMode ? 8 : 1);
const outstanding = arg('outstanding', 128);
const nameList = (n) => Array.from({ length: n }, (_, i) => `www.site${i}.example.com.nyud.net`);
/** The names the load generators ask for (switched between the two sets). */
let names = nameList(nNames);
const directoryArg = process.argv.indexOf('--directory');
const directory = directoryArg >= 0 ? process.argv[directoryArg + 1] : 'memory';
if (directory !== 'memory' && directory !== 'dsht') throw new Error('--directory memory|dsht');

const has = (cmd, args) => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;
const pin =
  !workersMode &&
  !process.argv.includes('--no-pin') &&
  os.cpus().length >= 2 &&
  has('taskset', ['-p', String(process.pid)]);
const useDnsperf =
  !process.argv.includes('--node-generator') &&
  spawnSync('dnsperf', ['-h'], { stdio: 'ignore' }).error === undefined;
const generator = useDnsperf ? 'dnsperf' : 'node';
const SERVER_CPU = 0;
const OTHER_CPU = 1;

/**
 * Pin a running process to one CPU: all its threads, or only its main thread (a server's event
 * loop), leaving V8's GC helper threads free to run on the other CPU as they would unpinned.
 * Threads inherit the affinity of the thread that creates them, so this is done once the child
 * has said it is running (its helper threads exist by then), never right after fork().
 */
function pinPid(pid, cpu, allThreads) {
  if (!pin) return;
  const args = [...(allThreads ? ['-a'] : []), '-p', '-c', String(cpu), String(pid)];
  const r = spawnSync('taskset', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`taskset ${args.join(' ')} failed: ${r.stderr}`);
}

const children = new Set();
const killChildren = () => {
  for (const c of children) c.kill('SIGKILL');
};
process.on('exit', killChildren);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    killChildren();
    process.exit(130);
  });
}

/** The next IPC message from a child, or an error if it exits first. */
async function nextMessage(child, what) {
  const ac = new AbortController();
  try {
    const [m] = await Promise.race([
      once(child, 'message', { signal: ac.signal }),
      once(child, 'exit', { signal: ac.signal }).then(([code]) => {
        throw new Error(`${what} exited (code ${code}) before answering`);
      }),
    ]);
    return m;
  } finally {
    ac.abort();
  }
}

/** A server child (dns or echo), pinned, answering on `port`. */
const distArg = process.argv.indexOf('--dist');
const dist = distArg >= 0 ? resolve(process.argv[distArg + 1]) : undefined;

async function startServer(config, cpu) {
  const child = fork(new URL('./dns-server.mjs', import.meta.url), {
    stdio: 'inherit',
    env: { ...process.env, ...(dist ? { CORAL_DNSSRV_DIST: dist } : {}) },
  });
  children.add(child);
  child.send(config);
  const { port } = await nextMessage(child, `server ${config.kind}`);
  pinPid(child.pid, cpu, false);
  const ask = (cmd) => {
    child.send(cmd);
    return nextMessage(child, `server ${config.kind}`);
  };
  return {
    port,
    pid: child.pid,
    mark: () => ask('mark'),
    report: () => ask('report'),
    async stop() {
      child.send('exit');
      await once(child, 'exit');
      children.delete(child);
    },
  };
}

// dnsperf: EDNS queries for the same names, at most 128 in flight at maximum rate, -Q 5000 for the
// fixed rate. Its per-query lines ("> NOERROR name A 0.000123") give latencies.
let dnsperfDir;
function loadDnsperf(port, mode, durationMs, cpu) {
  if (!dnsperfDir) {
    dnsperfDir = mkdtempSync(join(os.tmpdir(), 'coral-dnsperf-'));
    process.on('exit', () => rmSync(dnsperfDir, { recursive: true, force: true }));
  }
  const file = join(dnsperfDir, `queries-${names.length}.txt`);
  writeFileSync(file, names.map((n) => `${n} A\n`).join(''));
  const args = ['-s', '127.0.0.1', '-p', String(port), '-d', file];
  args.push('-l', String(Math.max(1, Math.round(durationMs / 1000))), '-e', '-v', '-t', '2');
  args.push(
    ...(mode === 'max'
      ? ['-q', String(outstanding), '-c', String(clients)]
      : ['-q', '100', '-Q', '5000', ...(workersMode ? ['-c', String(clients)] : [])]),
  );
  const [cmd, argv] = pin
    ? ['taskset', ['-c', String(cpu), 'dnsperf', ...args]]
    : ['dnsperf', args];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => (out += d));
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d) => (err += d));
    child.once('error', reject);
    child.once('close', (code) => {
      children.delete(child);
      if (code !== 0) {
        reject(new Error(`${cmd} ${argv.join(' ')} exited with ${code}: ${err.trim()}`));
        return;
      }
      const lat = [];
      for (const line of out.split('\n')) {
        if (line.startsWith('> ')) lat.push(Number(line.slice(line.lastIndexOf(' ') + 1)) * 1000);
      }
      const pct = (p) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))];
      const num = (re) => Number(re.exec(out)?.[1] ?? NaN);
      const sent = num(/Queries sent:\s+(\d+)/);
      const received = num(/Queries completed:\s+(\d+)/);
      // A query that timed out counts at the timeout (2 s), not as if it had not been sent.
      for (let i = received; i < sent; i++) lat.push(2000);
      lat.sort((a, b) => a - b);
      resolve({
        sent,
        received,
        lost: sent - received,
        qps: num(/Queries per second:\s+([\d.]+)/),
        p50Ms: pct(50),
        p90Ms: pct(90),
        p99Ms: pct(99),
        p999Ms: pct(99.9),
      });
    });
  });
}

async function loadNode(port, mode, durationMs, cpu) {
  const child = fork(new URL('./dns-load.mjs', import.meta.url), { stdio: 'inherit' });
  children.add(child);
  await nextMessage(child, 'load generator'); // 'ready': its threads exist, pin them all
  if (cpu !== undefined) pinPid(child.pid, cpu, true);
  child.send({
    port,
    host: '127.0.0.1',
    mode,
    durationMs,
    rate: 5000,
    window,
    sockets: 4,
    names,
    seed: 42,
  });
  const result = await nextMessage(child, 'load generator');
  await once(child, 'exit');
  children.delete(child);
  return result;
}

const load = useDnsperf ? loadDnsperf : loadNode;

/** Per-CPU times from /proc/stat (Linux), to tell how much of a phase the hypervisor took. */
function cpuTimes() {
  try {
    const out = new Map();
    for (const line of readFileSync('/proc/stat', 'utf8').split('\n')) {
      const m = /^cpu(\d*) (.*)$/.exec(line);
      if (!m) continue;
      const t = m[2].trim().split(/\s+/).map(Number);
      out.set(m[1] === '' ? 'all' : Number(m[1]), {
        total: t.reduce((a, b) => a + b, 0),
        steal: t[7] ?? 0,
      });
    }
    return out;
  } catch {
    return undefined;
  }
}

/**
 * Steal time as % of the phase (time a vCPU was runnable but the hypervisor ran something else),
 * the highest over the CPUs the phase used.
 */
function stealPct(before, after, cpus) {
  let worst = null;
  for (const cpu of cpus) {
    const a = before?.get(cpu);
    const b = after?.get(cpu);
    if (!a || !b || b.total === a.total) continue;
    worst = Math.max(worst ?? 0, (100 * (b.steal - a.steal)) / (b.total - a.total));
  }
  return worst;
}

/**
 * The kernel's softirq threads: loopback packets are processed there when softirqs pile up, which
 * is this bench's own traffic, not a neighbour's: they are kept out of "others".
 */
const softirqPids = (() => {
  try {
    return readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .filter((d) => {
        try {
          return readFileSync(`/proc/${d}/comm`, 'utf8').startsWith('ksoftirqd/');
        } catch {
          return false;
        }
      })
      .map(Number);
  } catch {
    return [];
  }
})();

/**
 * One measured phase: the server's own figures for the same window ride along, and the CPU of the
 * server, the generator (this process's reaped children: dnsperf or the Node generator ends in
 * the window) and everything else on the machine, with the steal on the CPUs the phase used.
 */
async function measure(server, mode, cpu) {
  await server.mark();
  const t0 = cpuTimes();
  const w = cpuWindow();
  const reaped0 = processTicks(process.pid)?.reaped;
  const client = await load(server.port, mode, seconds * 1000, cpu);
  const steal = stealPct(t0, cpuTimes(), pin ? [...new Set([SERVER_CPU, cpu])] : ['all']);
  const win = w.end({ server: server.pid, bench: process.pid, softirq: softirqPids });
  const reaped1 = processTicks(process.pid)?.reaped;
  const genPct =
    win && reaped0 !== undefined && reaped1 !== undefined
      ? (100 * (reaped1 - reaped0)) / CLK_TCK / win.wallS
      : null;
  return {
    ...client,
    steal,
    others: win ? win.othersPct : null,
    serverPct: win ? win.processes.server : null,
    genPct,
    server: await server.report(),
  };
}

if (workersMode) {
  const { runWorkersMode } = await import('./lib/dns-workers-mode.mjs');
  await runWorkersMode({
    startCoral: (workers) =>
      startServer(
        workers > 1
          ? { kind: 'workers', workers, directory }
          : { kind: 'dns', cache: true, directory },
        SERVER_CPU,
      ),
    children,
    load,
    measure,
    seconds,
    trials,
    maxTrials,
    names,
    nNames,
    clients,
    generator,
    directory,
    quietStealPct: QUIET_STEAL_PCT,
    quietOthersPct: QUIET_OTHERS_PCT,
    maxRateAttempts: MAX_RATE_ATTEMPTS,
  });
  process.exit(0);
}

const load0 = os.loadavg();
const rows = [];
const sharedCpu = pin ? SERVER_CPU : undefined;

{
  const server = await startServer({ kind: 'dns', cache: false, directory }, SERVER_CPU);
  await load(server.port, 'max', 1000, OTHER_CPU); // warm up the JIT
  rows.push({ phase: 'max rate, no answer cache', ...(await measure(server, 'max', OTHER_CPU)) });
  await server.stop();
}

const server = await startServer({ kind: 'dns', cache: true, directory }, SERVER_CPU);
const echo = await startServer({ kind: 'echo' }, SERVER_CPU);
const isQuiet = (r) =>
  (r.steal === null || r.steal < QUIET_STEAL_PCT) &&
  (r.others === null || r.others < QUIET_OTHERS_PCT);

/**
 * The cached-server phases for the current name set: maximum rate (the first quiet attempt of at
 * most MAX_RATE_ATTEMPTS, else the last) and the same on the echo server, then 5,000 q/s trials
 * (each followed by the echo server) until `wanted` pairs are quiet, at most `most`.
 */
async function nameSet(label, wanted, most) {
  await load(server.port, 'max', 1000, OTHER_CPU); // warm up: every name asked once
  let max;
  for (let t = 1; t <= MAX_RATE_ATTEMPTS && !(max && isQuiet(max)); t++) {
    max = {
      phase: `max rate${label}${t > 1 ? ` (${t})` : ''}`,
      ...(await measure(server, 'max', OTHER_CPU)),
    };
    rows.push(max);
  }
  await load(echo.port, 'max', 1000, OTHER_CPU);
  const echoMax = { phase: `max rate${label}, echo`, ...(await measure(echo, 'max', OTHER_CPU)) };
  rows.push(echoMax);
  await load(echo.port, 'rate', 1000, sharedCpu);
  const dnsTrials = [];
  const echoTrials = [];
  const pairs = [];
  for (let t = 1; t <= most && pairs.filter((p) => p.quiet).length < wanted; t++) {
    const d = await measure(server, 'rate', sharedCpu);
    const e = await measure(echo, 'rate', sharedCpu);
    dnsTrials.push(d);
    echoTrials.push(e);
    pairs.push({ dns: d, echo: e, quiet: isQuiet(d) && isQuiet(e) });
    rows.push({ phase: `5,000 q/s${label}, trial ${t}`, ...d });
    rows.push({ phase: `5,000 q/s${label}, trial ${t}, echo`, ...e });
  }
  return { max, echoMax, dnsTrials, echoTrials, pairs };
}

const main = await nameSet('', trials, maxTrials);
const { max, echoMax, dnsTrials, echoTrials, pairs } = main;
let split;
let splitEcho;
if (pin) {
  split = await measure(server, 'rate', OTHER_CPU);
  splitEcho = await measure(echo, 'rate', OTHER_CPU);
  rows.push({ phase: '5,000 q/s, split cores', ...split });
  rows.push({ phase: '5,000 q/s, split, echo', ...splitEcho });
}
let small;
if (smallTrials > 0) {
  names = nameList(nSmall);
  small = await nameSet(`, ${nSmall} names`, smallTrials, Math.max(smallTrials, 8));
}
await Promise.all([server.stop(), echo.stop()]);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const f = (x, d = 3) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const layout = pin
  ? `max rate: server CPU ${SERVER_CPU}, generator CPU ${OTHER_CPU}; 5,000 q/s: both on CPU ${SERVER_CPU}`
  : 'not pinned';
console.log(
  `DNS redirector load (${generator} generator, ${directory} directory) — ${os.cpus().length} CPUs, ${layout}; loadavg before ${load0.map((x) => x.toFixed(2)).join(' ')}; ${nNames} names (then ${smallTrials > 0 ? nSmall : 'no'} names), ${seconds}s per phase`,
);
console.log(
  'phase                                   |      q/s |   sent | lost | p50 ms | p90 ms | p99 ms | p99.9 ms | srv µs/q | srv CPU % | gen CPU % | scavenges (max ms) | major GCs | steal % | others % | quiet',
);
console.log(
  '----------------------------------------+----------+--------+------+--------+--------+--------+----------+----------+-----------+-----------+--------------------+-----------+---------+----------+------',
);
for (const r of rows) {
  const s = r.server;
  console.log(
    `${r.phase.padEnd(40)}| ${f(r.qps, 0).padStart(8)} | ${String(r.sent).padStart(6)} | ${String(r.lost).padStart(4)} | ${f(r.p50Ms).padStart(6)} | ${f(r.p90Ms).padStart(6)} | ${f(r.p99Ms).padStart(6)} | ${f(r.p999Ms).padStart(8)} | ${f(s.cpuUsPerAnswer, 1).padStart(8)} | ${f(r.serverPct, 0).padStart(9)} | ${f(r.genPct, 0).padStart(9)} | ${`${s.gcMinor.count} (${f(s.gcMinor.maxMs, 2)})`.padStart(18)} | ${String(s.gcMajor.count).padStart(9)} | ${f(r.steal, 1).padStart(7)} | ${f(r.others, 1).padStart(8)} | ${isQuiet(r) ? 'yes' : 'NO'}`,
  );
}
/** The DNS and echo trials of the quiet pairs (both quiet). */
const quietPairs = (ps) => ps.filter((p) => p.quiet);
const quiet = quietPairs(pairs).map((p) => p.dns);
const quietEcho = quietPairs(pairs).map((p) => p.echo);
const list = (rs, key, d = 3) => rs.map((r) => f(r[key], d)).join(' / ');
const med = (rs, key) => (rs.length ? median(rs.map((r) => r[key])) : NaN);
const quietRule = `steal < ${QUIET_STEAL_PCT} % and others < ${QUIET_OTHERS_PCT} % in both`;
console.log(
  `max rate: ${f(max.qps, 0)} q/s (server ${f(max.serverPct, 0)} % of a core, generator ${f(max.genPct, 0)} %); echo server, same load: ${f(echoMax.qps, 0)} q/s (server ${f(echoMax.serverPct, 0)} %, generator ${f(echoMax.genPct, 0)} %)`,
);
console.log(
  `5,000 q/s, ${dnsTrials.length} trials: p99 ${list(dnsTrials, 'p99Ms')} ms with steal ${list(dnsTrials, 'steal', 1)} % and others ${list(dnsTrials, 'others', 1)} %`,
);
console.log(
  `  ${quiet.length} quiet pairs (${quietRule}): p99 median ${f(med(quiet, 'p99Ms'))} ms, p50 median ${f(med(quiet, 'p50Ms'))} ms, echo p99 median ${f(med(quietEcho, 'p99Ms'))} ms; all trials: p99 median ${f(med(dnsTrials, 'p99Ms'))} ms`,
);
console.log(`  UDP echo, same load: p99 ${list(echoTrials, 'p99Ms')} ms`);
const smallQuiet = small ? quietPairs(small.pairs).map((p) => p.dns) : [];
if (small) {
  console.log(
    `${nSmall} names: max ${f(small.max.qps, 0)} q/s (echo ${f(small.echoMax.qps, 0)}); 5,000 q/s, ${small.dnsTrials.length} trials: p99 ${list(small.dnsTrials, 'p99Ms')} ms; ${smallQuiet.length} quiet pairs: p99 median ${f(med(smallQuiet, 'p99Ms'))} ms`,
  );
}
const cacheHits = rows.reduce((n, r) => n + (r.server.cacheHits ?? 0), 0);
const cacheMisses = rows.reduce((n, r) => n + (r.server.cacheMisses ?? 0), 0);
console.log(
  `answer cache in the measured phases: ${cacheHits} hits, ${cacheMisses} misses; loadavg after ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
const [noCache] = rows;
const round = (x) => Number(f(x));
console.log(
  JSON.stringify({
    bench: 'dns',
    generator,
    directory,
    names: nNames,
    ...(dist ? { dist } : {}),
    pinned: pin,
    qps: Math.round(max.qps),
    p50Ms: round(max.p50Ms),
    p99Ms: round(max.p99Ms),
    serverCpuPctMax: max.serverPct === null ? null : Number(f(max.serverPct, 0)),
    generatorCpuPctMax: max.genPct === null ? null : Number(f(max.genPct, 0)),
    othersPctMax: max.others === null ? null : Number(f(max.others, 1)),
    maxQuiet: isQuiet(max),
    echoQps: Math.round(echoMax.qps),
    echoServerCpuPctMax: echoMax.serverPct === null ? null : Number(f(echoMax.serverPct, 0)),
    p99MsAt5k: quiet.length ? round(med(quiet, 'p99Ms')) : null,
    p50MsAt5k: quiet.length ? round(med(quiet, 'p50Ms')) : null,
    quietPairs: quiet.length,
    p99MsAt5kAllTrials: round(med(dnsTrials, 'p99Ms')),
    p99MsAt5kTrials: dnsTrials.map((r) => round(r.p99Ms)),
    stealPctAt5kTrials: dnsTrials.map((r) => (r.steal === null ? null : Number(f(r.steal, 1)))),
    othersPctAt5kTrials: dnsTrials.map((r) => (r.others === null ? null : Number(f(r.others, 1)))),
    qpsAt5k: Math.round(med(dnsTrials, 'qps')),
    lost: max.lost + dnsTrials.reduce((n, r) => n + r.lost, 0),
    echoP99MsAt5k: quietEcho.length ? round(med(quietEcho, 'p99Ms')) : null,
    p99MsAt5kSplitCores: split ? round(split.p99Ms) : null,
    echoP99MsAt5kSplitCores: splitEcho ? round(splitEcho.p99Ms) : null,
    serverCpuUsPerQueryAt5k: Number(f(median(dnsTrials.map((r) => r.server.cpuUsPerAnswer)), 1)),
    stealPctMax: max.steal === null ? null : Number(f(max.steal, 1)),
    serverCpuUsPerQueryMax: Number(f(max.server.cpuUsPerAnswer, 1)),
    scavengesPer10kAt5k: Number(
      f(
        (1e4 * dnsTrials.reduce((n, r) => n + r.server.gcMinor.count, 0)) /
          dnsTrials.reduce((n, r) => n + r.server.answers, 0),
        2,
      ),
    ),
    small: small
      ? {
          names: nSmall,
          qps: Math.round(small.max.qps),
          echoQps: Math.round(small.echoMax.qps),
          p99MsAt5k: smallQuiet.length ? round(med(smallQuiet, 'p99Ms')) : null,
          quietPairs: smallQuiet.length,
          p99MsAt5kAllTrials: round(med(small.dnsTrials, 'p99Ms')),
          p99MsAt5kTrials: small.dnsTrials.map((r) => round(r.p99Ms)),
        }
      : null,
    qpsNoCache: Math.round(noCache.qps),
    p99MsNoCache: round(noCache.p99Ms),
    loadavgBefore: load0.map((x) => Number(x.toFixed(2))),
    loadavgAfter: os.loadavg().map((x) => Number(x.toFixed(2))),
  }),
);
