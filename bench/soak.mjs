#!/usr/bin/env node
// Soak: `npm run bench:soak -- --minutes 10` (issue 31). A keyed fleet of --nodes (5) real
// `coral-node start` processes on 127.0.B.x (@coral/node/fleet's launcher) and the sample origin
// in a process of its own (bench/lib/soak-origin.mjs), held for --minutes (10; an hour is
// `--minutes 60`) under everything at once:
//
// - clients: --clients (16) browser-like clients, each its own source address 127.77.0.x with
//   keep-alive connections, asking a random node after a random pause (exponential, mean
//   --think-ms 600) for a hot object (a fixed set of --hot 200 objects of 4–64 KiB: hits once
//   fetched), a new URL (--new-share 0.2: the stream of misses, 1–8 KiB each, every URL asked for
//   the first time once) or one of the last 500 new URLs again (--recent-share 0.2, often on
//   another node: a peer fetch). Every body is checked against the origin's bytes (SHA-256).
// - large objects: one download at a time, every --large-every-s (20) s, of objects of
//   --large-mib (16,24,40) MiB in turn through a random node, checked by SHA-256 against the
//   origin's own hash of what it serves; kept out of the p99 (their time is their size).
// - purges: every --purge-every-s (15) s a fleet purge (`POST /v1/purge {url}`) through a node
//   not being restarted, of a hot object the origin last served ≥ 10 s before (so that no fetch
//   of it is in flight across the purge).
// - DNS: every --dns-every-ms (1000) each node's DNS server is asked for the Coralized name (one
//   resolver address per node, 127.88.i.1); an answer must be non-empty and name fleet members.
// - DSHT churn: every --dsht-every-ms (2000) a `PUT /v1/dsht/values/soak-N` (ttl 600 s) through
//   one node and a `GET` of a value put ≥ 3 s before through another, which must find it.
// - restarts: every --restart-every (3) minutes one node gets SIGTERM (a graceful stop: it leaves
//   the fleet), is started again on the same address, ports and data directory, and the bench
//   waits until it is ready and every node (itself included) counts the whole fleet as live
//   members again. The nodes take turns, the slowloris target excepted (node 2, 3, …, then 1).
//   `--restart-every 0`: none.
// - slowloris: --slowloris (300) connections from --slowloris-sources (4) addresses
//   (127.66.0.x) to the proxy port of --slowloris-node (the last), each sending one more header
//   line every --slowloris-interval-s (2) s and never ending its headers; a connection the node
//   closes is opened again 1 s later (bench/lib/slowloris.mjs).
//
// - warm-up: before the load, and for a restarted node as soon as it is back, objects of their
//   own (/obj/500000…, 4–64 KiB) are asked through each node, 8 at a time, until its memory tier
//   holds --warm-fill (0.95) of its budget (bounded by --warm-max-s, 300; --warm-fill 0: none).
//   Under the load alone the tier fills in about 20 minutes, and the node's RSS with it; the RSS
//   target is about what grows once the caches are full. The origin's log of them is left out.
//
// Every minute one row: each node's RSS (VmRSS of /proc/<pid>/status, MB = 10^6 bytes) and open
// descriptors (entries of /proc/<pid>/fd), read every --sample-every-s (5) s, the minute's last
// reading shown (`*`: the node was restarted in that minute); client requests and their p99
// latency (large objects excepted); client errors on healthy nodes / on the node being restarted
// (HTTP: a network error, a timeout, a status other than 200 or a wrong body; DNS: no answer, an
// empty one or one naming a non-member); origin fetches / the objects they were for, from the
// origin's own request log, the member audit's refetches apart (below); those refetches; the
// slowloris connections open at the minute's end and those the node closed in the minute (median
// time held); the restarts and anything unusual. Each node's /metrics is read with every sample
// too: its audit-fetch counter, JS heap used, external memory and memory-tier bytes (in the JSON's
// rows and the summary's growth lines: what of the RSS grows).
//
// Restart windows: from 1 s before the SIGTERM to --restart-grace-s (5) s after the restarted
// node is back (ready, and a live member in every node's view). A client request or DNS query
// counts against "the node being restarted" when it was sent to that node and overlapped its
// window; every other error is an error on a healthy node — including a request to a healthy
// node that failed because the restarted one was its designated fetcher or a holder.
//
// Targets (PASS/FAIL at the end; exit status 1 when any fails):
// 1. 0 client errors (HTTP and DNS, wrong bodies included) on healthy nodes.
// 2. RSS and 3. descriptors flat after warm-up: for each node whose process lived through the
//    whole last half of the run (a node restarted in the last half is listed as not checked),
//    growth = median of its readings in the last W of the run / median in the first W of the
//    last half − 1 ≤ 5 %, with W = min(1 minute, run / 6).
// 4. 1.00 origin fetches per object outside restarts: each origin request in the log is dated
//    (its arrival, ≤ 100 ms late) and belongs to an object *generation* — the path, and how many
//    purges of that path were sent before it (a purge makes the next fetch a new object).
//    Generations first fetched inside a restart window are left out, as are fetches inside
//    windows (both counted and printed). The member audit's refetches (`proxy.auditFraction` of
//    the copies a node takes from members, fetched again from the origin and compared) are
//    counted apart: a fetch by a node that had just served that object from a member's copy
//    (see classify()), checked against each node's `coral_member_audit_fetches_total` (counted
//    from the start of the run, or from the end of a restarted node's warm-up): a node is never
//    attributed more than it counted (the excess, latest after their responses, are fetches for
//    clients). The
//    figure is the remaining fetches less the audit refetches / the remaining generations (the
//    figure with them is printed too), and it passes only when no counted generation was fetched
//    twice for clients (each such one is listed with the nodes that fetched it, from the Via the
//    origin saw).
// Also checked: no node exited unless the bench stopped it, and every restarted node came back
// within 60 s (a node that exits on its own is started again, and counts as a failure).
//
// Prints the table, the summary with the targets, then ONE JSON line ({"bench":"soak",...}).
// Bounded: everything stops at --minutes (SIGINT or SIGTERM stop it early: the summary is of what
// ran, `interrupted` in the JSON; a second signal exits at once), a watchdog ends the process 15
// minutes after that, and every node and the origin are stopped and the temporary directory
// removed on any exit (CORAL_BENCH_KEEP=1 keeps the nodes' logs and data and says where).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { SeededRandom } from '@coral/testkit';
import { Fleet, fetchVia, objectBody, resolveThrough, stopProcess } from '@coral/node/fleet';
import { AUDIT_FRACTION } from '@coral/httpprx';
import { sha256 } from './lib/bodies.mjs';
import { servedFrom } from './lib/cache-status.mjs';
import { HOT_BASE, LARGE_BASE, NEW_BASE, WARM_BASE, soakObjectBytes } from './lib/soak-catalog.mjs';
import { SlowlorisCrowd } from './lib/slowloris.mjs';
import { descriptorLimits, median, openDescriptors, processMemory } from './lib/system.mjs';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    'restart-every': { type: 'string', default: '3' },
    nodes: { type: 'string', default: '5' },
    clients: { type: 'string', default: '16' },
    'think-ms': { type: 'string', default: '600' },
    hot: { type: 'string', default: '200' },
    'new-share': { type: 'string', default: '0.2' },
    'recent-share': { type: 'string', default: '0.2' },
    'large-mib': { type: 'string', default: '16,24,40' },
    'large-every-s': { type: 'string', default: '20' },
    'purge-every-s': { type: 'string', default: '15' },
    'dns-every-ms': { type: 'string', default: '1000' },
    'dsht-every-ms': { type: 'string', default: '2000' },
    slowloris: { type: 'string', default: '300' },
    'slowloris-sources': { type: 'string', default: '4' },
    'slowloris-interval-s': { type: 'string', default: '2' },
    'slowloris-node': { type: 'string' },
    'sample-every-s': { type: 'string', default: '5' },
    'restart-grace-s': { type: 'string', default: '5' },
    seed: { type: 'string', default: '1' },
    'warm-fill': { type: 'string', default: '0.95' },
    'warm-max-s': { type: 'string', default: '300' },
    zone: { type: 'string', default: 'nyud.net' },
  },
});

function fail(message) {
  console.error(`bench:soak: ${message}`);
  process.exit(2);
}
/** The number given as --name, within [min, max] (an integer when asked), or exit 2. */
function num(name, min, max, { integer = false, zeroOk = false } = {}) {
  const v = Number(values[name]);
  const ok = Number.isFinite(v) && ((zeroOk && v === 0) || (v >= min && v <= max));
  if (!ok || (integer && !Number.isInteger(v)))
    fail(
      `--${name} must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}${zeroOk ? ' (or 0)' : ''}`,
    );
  return v;
}

const MIN = 60_000;
const MiB = 1024 * 1024;
const nodes = num('nodes', 2, 20, { integer: true });
const minutes = num('minutes', 0.5, 1440);
const restartEveryMs = num('restart-every', 0.25, 1440, { zeroOk: true }) * MIN;
const clients = num('clients', 1, 250, { integer: true });
const thinkMs = num('think-ms', 1, 60_000);
const hot = num('hot', 1, 100_000, { integer: true });
const newShare = num('new-share', 0, 1);
const recentShare = num('recent-share', 0, 1);
if (newShare + recentShare > 1) fail('--new-share and --recent-share add up to more than 1');
const largeBytes = values['large-mib']
  .split(',')
  .filter((s) => s.trim() !== '')
  .map((s) => {
    const v = Number(s);
    if (!(v > 0 && v <= 50))
      fail('--large-mib: each size above 0 and at most 50 MiB (the nodes cache up to 50 MiB)');
    return Math.round(v * MiB);
  });
if (largeBytes.length > HOT_BASE - LARGE_BASE) fail('--large-mib: too many sizes');
const largeEveryMs = num('large-every-s', 1, 3600) * 1000;
const purgeEveryMs = num('purge-every-s', 1, 3600, { zeroOk: true }) * 1000;
const dnsEveryMs = num('dns-every-ms', 100, 60_000, { zeroOk: true });
const dshtEveryMs = num('dsht-every-ms', 100, 60_000, { zeroOk: true });
const lorisCount = num('slowloris', 0, 5000, { integer: true });
const lorisSources = num('slowloris-sources', 1, 250, { integer: true });
const lorisIntervalMs = num('slowloris-interval-s', 0.1, 600) * 1000;
const lorisNode =
  (values['slowloris-node'] === undefined
    ? nodes
    : num('slowloris-node', 1, nodes, { integer: true })) - 1;
const sampleEveryMs = num('sample-every-s', 1, 600) * 1000;
const graceMs = num('restart-grace-s', 0, 600) * 1000;
const seed = num('seed', 0, 2 ** 31, { integer: true });
const warmFill = num('warm-fill', 0.01, 1, { zeroOk: true });
const warmMaxMs = num('warm-max-s', 1, 3600) * 1000;
const durationMs = minutes * MIN;

/** A window opens this long before the SIGTERM (the origin's log dates requests ≤ 100 ms late). */
const WINDOW_LEAD_MS = 1_000;
/** Bound on each wait of a restart: the node ready, then a live member of every view. */
const RESTART_WAIT_MS = 60_000;
/** A purge picks hot objects the origin last served at least this long ago. */
const PURGE_QUIET_MS = 10_000;
/** New URLs kept for --recent-share. */
const RECENT = 500;
const KEEP = Boolean(process.env.CORAL_BENCH_KEEP);
const ORIGIN_MAIN = fileURLToPath(new URL('./lib/soak-origin.mjs', import.meta.url));

// ---------------------------------------------------------------------------------------------
// Processes and cleanup: whatever ends this process stops every child and removes the directory.

const dataRoot = mkdtempSync(join(tmpdir(), 'coral-soak-'));
let origin;
let originChild;
let fleet;
const alive = (child) => child && child.exitCode === null && child.signalCode === null;
process.on('exit', () => {
  for (const child of [originChild, ...(fleet?.nodes ?? []).map((n) => n.process)])
    if (alive(child)) child.kill('SIGKILL');
  if (!KEEP) rmSync(dataRoot, { recursive: true, force: true });
});
/** Aborted at the end of the run, or by SIGINT/SIGTERM: every load loop stops on it. */
const done = new AbortController();
/** Aborted by SIGINT/SIGTERM only: a restart under way at the end of the run is seen through. */
const quit = new AbortController();
let measuring = false;
let interrupted = null;
const onSignal = (signal) => {
  if (measuring && !done.signal.aborted) {
    interrupted = signal;
    process.stderr.write(`\n${signal}: stopping the load, then the summary (again: exit now)\n`);
    done.abort();
    quit.abort();
    return;
  }
  process.exit(130);
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);
setTimeout(
  () => {
    console.error('bench:soak: still running 15 minutes after its end; giving up');
    process.exit(1);
  },
  durationMs + 15 * MIN + RESTART_WAIT_MS * 2,
).unref();

/** Resolves true after `ms`, false at once when `signal` (default: the run is over) aborts. */
const pause = (ms, signal = done.signal) =>
  sleep(Math.max(0, ms), undefined, { signal }).then(
    () => true,
    () => false,
  );

/** The origin process: its port, the large objects' SHA-256, its request log as events. */
async function startOrigin() {
  const child = spawn(process.execPath, [ORIGIN_MAIN], {
    env: { ...process.env, SOAK_LARGE_BYTES: largeBytes.join(',') },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  originChild = child;
  const lines = createInterface({ input: child.stdout });
  const [first] = await Promise.race([
    once(lines, 'line'),
    once(child, 'exit').then(([code]) => {
      throw new Error(`the origin process exited (${code}) before listening`);
    }),
  ]);
  const { port, largeSha256 } = JSON.parse(first);
  return { child, lines, port, largeSha256 };
}

const rng = new SeededRandom(seed);
const exp = (mean) => -Math.log(1 - rng.next()) * mean;
const s1 = (ms) => (ms / 1000).toFixed(1);
const mb = (bytes) => Math.round(bytes / 1e6);

// ---------------------------------------------------------------------------------------------
// What is recorded.

let t0 = 0;
let tStop = 0;
/** Restart windows: { node, start, end } (end undefined while the node is not back). */
const windows = [];
const planned = new Set();
const restarts = [];
const crashes = [];
const samples = [];
/** Origin request log: { t, path, via }. */
const fetches = [];
const lastFetch = new Map();
/** Client responses a node served from a member's copy: `${node}|${path}` → when they ended. */
const peerServed = new Map();
/**
 * Each node's counters and memory, read from its /metrics with every sample: { t, node, pid,
 * auditFetches, heap, external, memCache } (counters since that process started).
 */
const scrapes = [];
/** Purges sent, by path: the times they were sent (generation boundaries). */
const purgeTimes = new Map();
const buckets = [];
const errorSamples = new Map();
const latencies = [];
const tally = {
  http: { requests: 0, ok: 0, byKind: { hot: 0, new: 0, recent: 0, large: 0 }, corrupt: 0 },
  httpErrors: { healthy: 0, restarting: 0 },
  servedBy: { local: 0, peer: 0, origin: 0 },
  dns: { queries: 0, namingStopped: 0 },
  dnsErrors: { healthy: 0, restarting: 0 },
  large: { downloads: 0, ok: 0, bytes: 0, ms: 0 },
  purges: { sent: 0, complete: 0, incomplete: 0, errors: 0, droppedNothing: 0, dropped: 0 },
  dsht: { puts: 0, putErrors: 0, gets: 0, found: 0, missing: 0, getErrors: 0 },
};
const stoppedIps = new Set();

/** Rows of the table: one per started minute of the run. */
const rowsTotal = Math.ceil(durationMs / MIN);
const bucket = (t) => {
  const m = Math.min(rowsTotal - 1, Math.max(0, Math.floor((t - t0) / MIN)));
  return (buckets[m] ??= {
    requests: 0,
    latencies: [],
    httpErrors: { healthy: 0, restarting: 0 },
    dns: 0,
    dnsErrors: { healthy: 0, restarting: 0 },
    events: [],
  });
};
const event = (text, t = Date.now()) => bucket(t).events.push(text);
/** Did a request to node `i` over [s, e] overlap one of its restart windows? */
const onRestarting = (i, s, e) =>
  windows.some((w) => w.node === i && w.start <= e && (w.end === undefined || s <= w.end));
const inWindow = (t) => windows.some((w) => w.start <= t && (w.end === undefined || t <= w.end));
const sample = (what) => {
  if (errorSamples.size < 40 || errorSamples.has(what))
    errorSamples.set(what, (errorSamples.get(what) ?? 0) + 1);
};
/** Nodes no restart window holds now, except `not`. */
const healthyNodes = (not = -1) => {
  const now = Date.now();
  return fleet.nodes
    .map((n) => n.index)
    .filter((i) => i !== not && !onRestarting(i, now, now) && alive(fleet.nodes[i].process));
};
const pick = (xs) => (xs.length ? xs[rng.int(xs.length)] : undefined);

/** One client request or DNS query: where it went, when, and what went wrong (undefined: nothing). */
function record(kind, node, s, e, why, ms) {
  const b = bucket(e);
  const where = onRestarting(node, s, e) ? 'restarting' : 'healthy';
  if (kind === 'dns') {
    tally.dns.queries++;
    b.dns++;
    if (why === undefined) return;
    tally.dnsErrors[where]++;
    b.dnsErrors[where]++;
  } else {
    tally.http.requests++;
    tally.http.byKind[kind]++;
    if (kind !== 'large') b.requests++;
    if (why === undefined) {
      tally.http.ok++;
      if (kind !== 'large') {
        b.latencies.push(ms);
        latencies.push(ms);
      }
      return;
    }
    tally.httpErrors[where]++;
    b.httpErrors[where]++;
  }
  sample(`${kind}: ${why} (${where} node ${node + 1})`);
}

// ---------------------------------------------------------------------------------------------
// The load.

let name;
let originUrl;
const shaCache = new Map();
/** SHA-256 of object i as the origin makes it (large: as it said it serves them). */
function expectedSha(i) {
  if (i - LARGE_BASE < largeBytes.length) return origin.largeSha256[i - LARGE_BASE];
  let h = shaCache.get(i);
  if (h === undefined) {
    h = sha256(objectBody(i, soakObjectBytes(i, largeBytes)));
    shaCache.set(i, h);
    if (shaCache.size > hot + 2 * RECENT) shaCache.delete(shaCache.keys().next().value);
  }
  return h;
}

async function get(nodeIndex, i, kind, agent, localAddress) {
  const node = fleet.nodes[nodeIndex];
  const s = Date.now();
  const p0 = performance.now();
  let why;
  try {
    const r = await fetchVia({ ip: node.ip, port: node.proxyPort }, name, `/obj/${i}`, {
      agent,
      localAddress,
      timeoutMs: kind === 'large' ? 120_000 : 30_000,
    });
    if (r.status !== 200) why = `status ${r.status} (${r.cacheStatus || 'no Cache-Status'})`;
    else if (sha256(r.body) !== expectedSha(i)) {
      why = `wrong body (${r.body.length} bytes, ${r.cacheStatus})`;
      tally.http.corrupt++;
    } else {
      const from = servedFrom(r.cacheStatus);
      tally.servedBy[from]++;
      if (from === 'peer') {
        const k = `${nodeIndex}|/obj/${i}`;
        const list = peerServed.get(k) ?? [];
        list.push(Date.now());
        peerServed.set(k, list);
      }
      if (kind === 'large') {
        tally.large.ok++;
        tally.large.bytes += r.body.length;
        tally.large.ms += performance.now() - p0;
      }
    }
  } catch (err) {
    why = err.code ?? (/timed out/.test(err.message) ? 'timeout' : err.message);
  }
  if (kind === 'large') tally.large.downloads++;
  record(kind, nodeIndex, s, Date.now(), why, performance.now() - p0);
}

const recent = [];
let nextNew = NEW_BASE;
async function client(k) {
  const localAddress = `127.77.0.${1 + k}`;
  // Idle connections are closed by the client after 4 s, before the node's 5 s keep-alive
  // timeout: a request sent on a connection the server is closing at that moment would fail for
  // a reason that is neither the node's nor the client's.
  const agent = new Agent({ keepAlive: true, maxSockets: 2, timeout: 4_000 });
  try {
    while (await pause(exp(thinkMs))) {
      const r = rng.next();
      let i;
      let kind;
      if (r < newShare) {
        kind = 'new';
        i = nextNew++;
        recent.push(i);
        if (recent.length > RECENT) recent.shift();
      } else if (r < newShare + recentShare && recent.length > 0) {
        kind = 'recent';
        i = pick(recent);
      } else {
        kind = 'hot';
        i = HOT_BASE + rng.int(hot);
      }
      await get(rng.int(nodes), i, kind, agent, localAddress);
    }
  } finally {
    agent.destroy();
  }
}

async function largeLoop() {
  const agent = new Agent({ keepAlive: true, maxSockets: 1, timeout: 4_000 });
  try {
    for (let k = 0; largeBytes.length > 0 && (await pause(largeEveryMs)); k++)
      await get(rng.int(nodes), LARGE_BASE + (k % largeBytes.length), 'large', agent, '127.77.1.1');
  } finally {
    agent.destroy();
  }
}

async function dnsLoop() {
  const members = new Set(fleet.nodes.map((n) => n.ip));
  while (dnsEveryMs > 0 && (await pause(dnsEveryMs))) {
    await Promise.all(
      fleet.nodes.map(async (n, i) => {
        const s = Date.now();
        const p0 = performance.now();
        let why;
        try {
          const ips = await resolveThrough({ ip: n.ip, port: n.dnsPort }, name, {
            localAddress: `127.88.${i}.1`,
            timeoutMs: 2_000,
            tries: 1,
          });
          if (ips.length === 0) why = 'empty answer';
          else if (ips.some((ip) => !members.has(ip)))
            why = `answer ${ips.join(' ')} names a non-member`;
          tally.dns.namingStopped += ips.filter((ip) => stoppedIps.has(ip)).length;
        } catch (err) {
          why = err.code ?? err.message;
        }
        record('dns', i, s, Date.now(), why, performance.now() - p0);
      }),
    );
  }
}

async function purgeLoop() {
  while (purgeEveryMs > 0 && (await pause(purgeEveryMs))) {
    const now = Date.now();
    const candidates = [];
    for (let i = HOT_BASE; i < HOT_BASE + hot; i++) {
      const last = lastFetch.get(`/obj/${i}`);
      if (last !== undefined && now - last >= PURGE_QUIET_MS) candidates.push(i);
    }
    const i = pick(candidates);
    const n = pick(healthyNodes());
    if (i === undefined || n === undefined) continue;
    const path = `/obj/${i}`;
    const times = purgeTimes.get(path) ?? [];
    times.push(Date.now());
    purgeTimes.set(path, times);
    tally.purges.sent++;
    try {
      const r = await fleet.nodes[n].admin.json('POST', '/v1/purge', { url: originUrl(path) });
      const dropped =
        (r.local?.count ?? 0) +
        (r.propagation?.members ?? []).reduce((s, m) => s + (m.count ?? 0), 0);
      tally.purges.dropped += dropped;
      if (dropped === 0) tally.purges.droppedNothing++;
      if (r.propagation?.complete) tally.purges.complete++;
      else {
        tally.purges.incomplete++;
        sample(`purge: not applied by every member (${r.propagation?.reason ?? 'see members'})`);
      }
    } catch (err) {
      tally.purges.errors++;
      sample(`purge: ${err.message} (node ${n + 1})`);
    }
  }
}

async function dshtLoop() {
  const puts = [];
  for (let seq = 0; dshtEveryMs > 0 && (await pause(dshtEveryMs)); seq++) {
    const a = pick(healthyNodes());
    if (a === undefined) continue;
    const key = `soak-${seq}`;
    const value = `value-${seq}-${seed}`;
    try {
      await fleet.nodes[a].admin.json('PUT', `/v1/dsht/values/${key}`, {
        value,
        encoding: 'utf8',
        ttl: 600,
      });
      tally.dsht.puts++;
      puts.push({ key, value, at: Date.now() });
      if (puts.length > 200) puts.shift();
    } catch (err) {
      tally.dsht.putErrors++;
      sample(`dsht put: ${err.message} (node ${a + 1})`);
    }
    const p = pick(puts.filter((x) => Date.now() - x.at >= 3_000));
    const b = pick(healthyNodes(a));
    if (p === undefined || b === undefined) continue;
    tally.dsht.gets++;
    try {
      const r = await fleet.nodes[b].admin.json('GET', `/v1/dsht/values/${p.key}`);
      if ((r.values ?? []).some((v) => v.text === p.value)) tally.dsht.found++;
      else {
        tally.dsht.missing++;
        sample(`dsht get: ${p.key} not found (node ${b + 1})`);
      }
    } catch (err) {
      tally.dsht.getErrors++;
      sample(`dsht get: ${err.message} (node ${b + 1})`);
    }
  }
}

function sampleNodes() {
  const t = Date.now();
  for (const n of fleet.nodes) {
    if (!alive(n.process)) continue;
    const mem = processMemory(n.process.pid);
    const fds = openDescriptors(n.process.pid);
    if (mem?.rss != null && fds != null)
      samples.push({ t, node: n.index, pid: n.process.pid, rss: mem.rss, anon: mem.anon, fds });
    void scrapeNode(n);
  }
}

/**
 * Each process's audit-fetch counter when it began to be measured (`${node}|${pid}`): at the
 * start of the run, and for a restarted node at the end of its warm-up (the warm-up's own audits
 * are not the run's).
 */
const auditBase = new Map();
/** One reading of a node's /metrics (see `scrapes`); nothing when it does not answer. */
async function scrapeNode(n, { base = false } = {}) {
  const pid = n.process.pid;
  const text = await n.admin.text('/metrics').catch(() => undefined);
  if (text === undefined) return;
  const one = (re) => Number(re.exec(text)?.[1] ?? NaN);
  scrapes.push({
    t: Date.now(),
    node: n.index,
    pid,
    auditFetches:
      one(/^coral_member_audit_fetches_total\{outcome="ok"\} (\d+)/m) +
      one(/^coral_member_audit_fetches_total\{outcome="error"\} (\d+)/m),
    heap: one(/^coral_nodejs_heap_size_used_bytes (\d+)/m),
    external: one(/^coral_nodejs_external_memory_bytes (\d+)/m),
    memCache: one(/^coral_cache_bytes\{tier="memory"\} (\d+)/m),
  });
  if (base) auditBase.set(`${n.index}|${pid}`, scrapes.at(-1).auditFetches);
}

/** The audit's origin requests each node counted over the run: every process's last reading. */
function auditFetchesByNode() {
  const last = new Map();
  for (const x of scrapes) if (Number.isFinite(x.auditFetches)) last.set(`${x.node}|${x.pid}`, x);
  const by = fleet.nodes.map(() => 0);
  for (const [k, x] of last) by[x.node] += x.auditFetches - (auditBase.get(k) ?? 0);
  return by;
}

/** Count a node's exit that the bench did not cause, and start it again. */
function watch(node) {
  node.process.once('exit', (code, signal) => {
    if (planned.has(node.index)) return;
    const at = Date.now();
    crashes.push({
      node: node.index + 1,
      at: s1(at - t0),
      code,
      signal,
      log: fleet.log(node.index, 20),
    });
    event(`node ${node.index + 1} EXITED (${signal ?? `code ${code}`})`, at);
    if (done.signal.aborted) return;
    watch(fleet.restart(node.index));
  });
}

/** Wait until `test()` holds (polled every 250 ms), at most `ms`; false when it did not. */
async function until(test, ms) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await test().catch(() => false)) return true;
    if (Date.now() > deadline || !(await pause(250, quit.signal))) return false;
  }
}

/** Every node's view (the restarted one's included) lists all of the fleet as live members. */
async function everyoneLive() {
  const views = await Promise.all(
    fleet.nodes.map(async (n) => (await n.admin.json('GET', '/v1/clusters')).liveProxies ?? []),
  );
  return views.every((v) => fleet.nodes.every((n) => v.some((p) => p.ipv4 === n.ip)));
}

async function restartNode(i) {
  const old = fleet.nodes[i];
  await scrapeNode(old); // its counters, which its restart resets
  const sigterm = Date.now();
  const w = { node: i, start: sigterm - WINDOW_LEAD_MS, end: undefined };
  windows.push(w);
  planned.add(i);
  const exitCode = await stopProcess(old.process, 15_000);
  const exited = Date.now();
  stoppedIps.add(old.ip);
  const node = fleet.restart(i);
  planned.delete(i);
  watch(node);
  const ready = await until(
    async () => (await node.admin.json('GET', '/readyz')).ready === true,
    RESTART_WAIT_MS,
  );
  const readyAt = Date.now();
  stoppedIps.delete(old.ip);
  const rejoined = ready && (await until(everyoneLive, RESTART_WAIT_MS));
  const back = Date.now();
  w.end = back + graceMs;
  const r = {
    node: i + 1,
    at: Number(s1(sigterm - t0)),
    exitCode,
    stopS: Number(s1(exited - sigterm)),
    readyS: Number(s1(readyAt - exited)),
    rejoinS: Number(s1(back - readyAt)),
    back: rejoined,
    interrupted: !rejoined && quit.signal.aborted,
  };
  restarts.push(r);
  if (rejoined && !done.signal.aborted) {
    // The new process starts with an empty memory tier: filled like the first ones were, with
    // the load going on (its requests are the warm-up's own, outside every figure).
    const wu = await warmUp([i], `after n${i + 1}'s restart`);
    if (wu) r.warmS = wu.seconds;
    await scrapeNode(node, { base: true });
  }
  event(
    rejoined
      ? `restart n${r.node}: stop ${r.stopS} s (exit ${exitCode}), ready ${r.readyS} s, live everywhere ${r.rejoinS} s${r.warmS !== undefined ? `, memory tier refilled in ${r.warmS} s` : ''}`
      : `restart n${r.node}: NOT BACK (${ready ? 'not a live member everywhere' : 'not ready'} after ${RESTART_WAIT_MS / 1000} s)`,
    sigterm,
  );
}

// ---------------------------------------------------------------------------------------------
// The warm-up: each node's memory tier filled to its budget before it is measured.

const isWarm = (path) => {
  const i = Number(path.slice('/obj/'.length));
  return i >= WARM_BASE && i < NEW_BASE;
};
let nextWarm = WARM_BASE;
/** Every warm-up: which nodes, how long, what it asked, each node's tier at its end. */
const warmups = [];

/** A node's memory tier and its budget, from its /metrics (undefined: no answer). */
async function memoryTier(n) {
  const text = await n.admin.text('/metrics').catch(() => undefined);
  const one = (re) => Number(re.exec(text ?? '')?.[1] ?? NaN);
  const bytes = one(/^coral_cache_bytes\{tier="memory"\} (\d+)/m);
  const budget = one(/^coral_cache_budget_bytes\{tier="memory"\} (\d+)/m);
  return Number.isFinite(bytes) && Number.isFinite(budget) ? { bytes, budget } : undefined;
}

/**
 * Ask warm-up objects (new URLs of their own) through each of `indices`, 8 at a time per node,
 * until every one's memory tier holds --warm-fill of its budget or --warm-max-s passed: under
 * the load alone the tier takes about 20 minutes to fill (a node's RSS rises with it), and the
 * RSS target is about what grows once the caches are full. Each object lands on the node asked
 * and on its designated fetcher. The origin's log of them is left out of every figure.
 */
async function warmUp(indices, why) {
  if (warmFill === 0) return;
  const start = Date.now();
  const w = { why, nodes: indices.map((i) => i + 1), seconds: 0, asked: 0, failed: 0, tiers: [] };
  warmups.push(w);
  const agents = indices.map(() => new Agent({ keepAlive: true, maxSockets: 8, timeout: 4_000 }));
  let pending = [...indices];
  try {
    while (pending.length > 0 && Date.now() - start < warmMaxMs && !quit.signal.aborted) {
      await Promise.all(
        pending.map(async (ni) => {
          const node = fleet.nodes[ni];
          const agent = agents[indices.indexOf(ni)];
          for (let round = 0; round < 8; round++) {
            await Promise.all(
              Array.from({ length: 8 }, async () => {
                const i = nextWarm++;
                w.asked++;
                try {
                  const r = await fetchVia(
                    { ip: node.ip, port: node.proxyPort },
                    name,
                    `/obj/${i}`,
                    {
                      agent,
                      localAddress: `127.77.2.${1 + ni}`,
                      timeoutMs: 30_000,
                    },
                  );
                  if (r.status !== 200 || r.body.length !== soakObjectBytes(i, largeBytes))
                    w.failed++;
                } catch {
                  w.failed++;
                }
              }),
            );
          }
        }),
      );
      const tiers = await Promise.all(pending.map((ni) => memoryTier(fleet.nodes[ni])));
      pending = pending.filter(
        (_, k) => !(tiers[k] && tiers[k].bytes >= warmFill * tiers[k].budget),
      );
    }
  } finally {
    for (const a of agents) a.destroy();
  }
  w.seconds = Number(s1(Date.now() - start));
  w.tiers = await Promise.all(
    indices.map(async (ni) => {
      const t = await memoryTier(fleet.nodes[ni]);
      return { node: ni + 1, bytes: t?.bytes ?? null, budget: t?.budget ?? null };
    }),
  );
  w.filled = pending.length === 0;
  return w;
}

/** One line about a warm-up. */
const warmText = (w) =>
  `warm-up (${w.why}) of ${w.nodes.map((n) => `n${n}`).join(' ')}: ${w.seconds} s, ${w.asked} objects asked (${w.failed} failed); memory tier ${w.tiers
    .map(
      (t) =>
        `n${t.node} ${t.bytes === null ? '?' : mb(t.bytes)}/${t.budget === null ? '?' : mb(t.budget)} MB`,
    )
    .join(
      ', ',
    )}${w.filled ? '' : ` — NOT FILLED to ${warmFill * 100} % within ${warmMaxMs / 1000} s`}`;

async function restartLoop() {
  // The nodes take turns, the slowloris target excepted: node 2, 3, …, then node 1 (the one the
  // others bootstrapped from: it rejoins from its stored contacts).
  const turns = [...fleet.nodes.keys()].map((k) => (k + 1) % nodes).filter((k) => k !== lorisNode);
  for (let k = 1; restartEveryMs > 0 && t0 + k * restartEveryMs < t0 + durationMs; k++) {
    if (!(await pause(t0 + k * restartEveryMs - Date.now()))) return;
    await restartNode(turns[(k - 1) % turns.length]);
  }
}

// ---------------------------------------------------------------------------------------------
// Reporting.

/** Which object generation an origin fetch was for: the path and the purges sent before it. */
const generation = (f) =>
  `${f.path}#${(purgeTimes.get(f.path) ?? []).filter((p) => p <= f.t).length}`;
const pct = (xs, p) => {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};
let nodeIds = [];
/** The node (1-based) that fetched, from the last hop of the Via the origin saw (0: unknown). */
const fetcherOf = (via) => {
  const last = via.split(',').at(-1)?.trim() ?? '';
  return 1 + nodeIds.findIndex((id) => last.endsWith(`coral-${id.slice(0, 12)}`));
};

/**
 * An origin fetch is the member audit's refetch when the node that made it had just served that
 * object to a client from a member's copy (the audit samples the copies a node stores from
 * members and fetches them again from the origin at once, in the background): within
 * AUDIT_LAG_MS after that response ended, or AUDIT_LEAD_MS before (the copy is stored, and the
 * audit starts, as the body arrives, which may be before the bench has read all of it). Each such
 * response accounts for one refetch at most, and a generation's first fetch is never one; the
 * nodes' own count (`coral_member_audit_fetches_total`, per process, summed over restarts) must
 * be at least what is attributed to each node, or the target fails.
 */
const AUDIT_LAG_MS = 15_000;
const AUDIT_LEAD_MS = 5_000;
let classified = 0;
const seenGenerations = new Set();
const usedServes = new Set();
/** Mark each logged origin fetch before `upTo` as the audit's refetch (`f.audit`) or not. */
function classify(upTo) {
  for (; classified < fetches.length && fetches[classified].t < upTo; classified++) {
    const f = fetches[classified];
    const g = generation(f);
    f.audit = false;
    if (!seenGenerations.has(g)) {
      seenGenerations.add(g);
      continue;
    }
    const node = fetcherOf(f.via);
    if (node === 0) continue;
    const key = `${node - 1}|${f.path}`;
    const served = peerServed.get(key) ?? [];
    const k = served.findIndex(
      (t, j) =>
        !usedServes.has(`${key}#${j}`) && f.t >= t - AUDIT_LEAD_MS && f.t <= t + AUDIT_LAG_MS,
    );
    if (k < 0) continue;
    usedServes.add(`${key}#${k}`);
    f.audit = true;
    f.auditLag = f.t - served[k];
  }
}

/** The table's two header lines, each column as wide as row()'s cells. */
function header() {
  const ns = fleet.nodes.map((n) => `n${n.index + 1} `.padStart(5)).join('');
  const w = ns.length;
  const line = (cells) => cells.join(' │ ') + '\n';
  process.stdout.write('\n');
  process.stdout.write(
    line([
      ''.padEnd(4),
      'RSS MB'.padEnd(w),
      'descriptors'.padEnd(w),
      ''.padEnd(13),
      'client errors'.padEnd(19),
      'origin'.padStart(12),
      'audit'.padStart(9),
      'slowloris'.padEnd(24),
      '',
    ]),
  );
  process.stdout.write(
    line([
      ' min',
      ns,
      ns,
      `${'req'.padStart(5)} ${'p99 ms'.padStart(7)}`,
      `${'http h/r'.padStart(8)} │ ${'dns h/r'.padStart(8)}`,
      'fetches/obj'.padStart(12),
      'refetches'.padStart(5),
      'open / closed (held)'.padEnd(24),
      'events',
    ]),
  );
}

const minuteRows = [];
function row(m, loris) {
  const from = t0 + m * MIN;
  const to = m === rowsTotal - 1 ? Infinity : from + MIN;
  const b = buckets[m] ?? bucket(from);
  // Each node's last reading in the minute, and whether a restart window of it touched the minute.
  const readings = fleet.nodes.map((n) => ({
    last: samples.filter((x) => x.node === n.index && x.t >= from && x.t < to).at(-1),
    restarted: windows.some(
      (w) => w.node === n.index && w.start < to && (w.end ?? Infinity) >= from,
    ),
  }));
  const cell = (metric, scale) =>
    readings
      .map(({ last, restarted }) =>
        `${last ? scale(last[metric]) : '-'}${restarted ? '*' : ' '}`.padStart(5),
      )
      .join('');
  classify(to);
  const mine = fetches.filter((f) => f.t >= from && f.t < to);
  const audits = mine.filter((f) => f.audit).length;
  const objects = new Set(mine.filter((f) => !f.audit).map(generation)).size;
  const memory = (field) =>
    fleet.nodes.map((n) => {
      const x = scrapes.filter((r) => r.node === n.index && r.t >= from && r.t < to).at(-1);
      return x && Number.isFinite(x[field]) ? mb(x[field]) : null;
    });
  const p99 = pct(b.latencies, 0.99);
  const held = loris ? median(loris.lifetimesMs) : NaN;
  minuteRows.push({
    minute: m + 1,
    rssMB: readings.map(({ last }) => (last ? mb(last.rss) : null)),
    fds: readings.map(({ last }) => last?.fds ?? null),
    requests: b.requests,
    p99Ms: Number(p99.toFixed(1)),
    httpErrors: b.httpErrors,
    dnsQueries: b.dns,
    dnsErrors: b.dnsErrors,
    originFetches: mine.length - audits,
    originObjects: objects,
    auditRefetches: audits,
    anonMB: readings.map(({ last }) => (last?.anon != null ? mb(last.anon) : null)),
    heapMB: memory('heap'),
    externalMB: memory('external'),
    memoryCacheMB: memory('memCache'),
    slowloris: loris
      ? {
          open: loris.open,
          closed: loris.closed,
          connectFailed: loris.connectFailed,
          heldS: Number.isNaN(held) ? null : Number(s1(held)),
        }
      : null,
    events: b.events,
  });
  const lorisCell = loris
    ? `${String(loris.open).padStart(4)} / ${String(loris.closed).padStart(4)} (${Number.isNaN(held) ? '-' : `${s1(held)} s`})`
    : 'off';
  process.stdout.write(
    [
      String(m + 1).padStart(4),
      cell('rss', mb),
      cell('fds', (v) => v),
      `${String(b.requests).padStart(5)} ${p99.toFixed(1).padStart(7)}`,
      `${b.httpErrors.healthy} / ${b.httpErrors.restarting}`.padStart(8),
      `${b.dnsErrors.healthy} / ${b.dnsErrors.restarting}`.padStart(8),
      `${mine.length - audits} / ${objects}`.padStart(12),
      String(audits).padStart(9),
      lorisCell.padEnd(24),
      b.events.join('; '),
    ].join(' │ ') + '\n',
  );
}

/** Growth of `metric` over the last half, per node (see the header: the window medians). */
function growth(metric, readings = samples) {
  const half = t0 + (tStop - t0) / 2;
  const w = Math.min(MIN, (tStop - t0) / 6);
  return fleet.nodes.map((n) => {
    const mine = readings.filter((x) => x.node === n.index && Number.isFinite(x[metric]));
    const last = mine.filter((x) => x.t >= half);
    const pids = new Set(last.map((x) => x.pid));
    const started = mine.find((x) => x.pid === last[0]?.pid)?.t ?? Infinity;
    if (last.length < 2 || pids.size > 1 || started > half - w) {
      const r = restarts.filter((x) => x.node === n.index + 1).at(-1);
      return {
        node: n.index + 1,
        checked: false,
        why: r ? `restarted at ${r.at} s` : 'too few readings',
      };
    }
    // Each window holds at least one reading (the first, the last) whatever the run's length.
    const first = last.filter((x) => x.t <= half + w);
    const end = last.filter((x) => x.t >= tStop - w);
    const a = median((first.length ? first : last.slice(0, 1)).map((x) => x[metric]));
    const b = median((end.length ? end : last.slice(-1)).map((x) => x[metric]));
    return {
      node: n.index + 1,
      checked: true,
      start: a,
      end: b,
      growthPct: Number((100 * (b / a - 1)).toFixed(1)),
    };
  });
}

/** The restart window that ended last before `t`: its node and how long before `t` it ended. */
function sinceRestart(t) {
  const w = windows.filter((x) => x.end <= t).sort((a, b) => b.end - a.end)[0];
  return w ? { node: w.node + 1, seconds: Number(s1(t - w.end)) } : null;
}

/** Origin fetches per object generation, outside restart windows (see the header). */
function originAccounting() {
  classify(Infinity);
  // No node made more audit refetches than it counted: where the attribution found more (a
  // node that fetched an object again for a client soon after serving it from a member's copy),
  // the ones latest after their response are taken back, and count as fetches for clients.
  const countedByNodes = auditFetchesByNode();
  const takenBack = fleet.nodes.map(() => 0);
  for (const n of fleet.nodes) {
    const mine = fetches
      .filter((f) => f.audit && fetcherOf(f.via) === n.index + 1)
      .sort((a, b) => b.auditLag - a.auditLag);
    for (const f of mine.slice(0, Math.max(0, mine.length - countedByNodes[n.index]))) {
      f.audit = false;
      takenBack[n.index]++;
    }
  }
  const gens = new Map();
  for (const f of fetches) {
    const g = generation(f);
    const e = gens.get(g) ?? { first: f.t, all: [] };
    e.all.push(f);
    gens.set(g, e);
  }
  let counted = 0;
  let countedFetches = 0;
  let excludedObjects = 0;
  let fetchesInWindows = 0;
  let auditRefetches = 0;
  const duplicates = [];
  for (const [g, e] of gens) {
    const outside = e.all.filter((f) => !inWindow(f.t));
    fetchesInWindows += e.all.length - outside.length;
    if (inWindow(e.first)) {
      excludedObjects++;
      continue;
    }
    counted++;
    countedFetches += outside.length;
    const forClients = outside.filter((f) => !f.audit);
    auditRefetches += outside.length - forClients.length;
    if (forClients.length > 1)
      duplicates.push({
        object: g,
        fetches: outside.map((f) => ({
          at: Number(s1(f.t - t0)),
          node: fetcherOf(f.via),
          ...(f.audit ? { audit: true } : {}),
        })),
        afterRestart: sinceRestart(forClients[1].t),
      });
  }
  const attributed = fleet.nodes.map(() => 0);
  for (const f of fetches) if (f.audit) attributed[fetcherOf(f.via) - 1]++;
  return {
    requests: fetches.length,
    objects: gens.size,
    countedObjects: counted,
    countedFetches,
    auditRefetches,
    perObject: counted ? Number(((countedFetches - auditRefetches) / counted).toFixed(3)) : null,
    perObjectWithAudits: counted ? Number((countedFetches / counted).toFixed(3)) : null,
    excludedObjects,
    fetchesInWindows,
    audit: {
      attributedByNode: attributed,
      countedByNodes,
      takenBack,
    },
    duplicates,
  };
}

/** The sum of one counter over the nodes' /metrics (since each node's last start). */
async function scrape() {
  const texts = await Promise.all(fleet.nodes.map((n) => n.admin.text('/metrics').catch(() => '')));
  const sum = (re) =>
    texts.reduce((s, t) => s + [...t.matchAll(re)].reduce((a, m) => a + Number(m[1]), 0), 0);
  const target = texts[lorisNode] ?? '';
  return {
    originFetchesOk: sum(/^coral_origin_fetches_total\{outcome="ok"\} (\d+)/gm),
    originFetchesError: sum(/^coral_origin_fetches_total\{outcome="error"\} (\d+)/gm),
    peerFetchErrors: sum(/^coral_peer_fetches_total\{outcome="error"\} (\d+)/gm),
    commitsRefused: sum(/^coral_commits_refused_total (\d+)/gm),
    memberDead: sum(/^coral_dsht_member_events_total\{event="dead"\} (\d+)/gm),
    // Whatever the slowloris target says about its connections (connection budgets, header and
    // idle timeouts, shedding: names of metrics yet to come, so matched loosely), non-zero only.
    lorisTargetConnectionMetrics: target
      .split('\n')
      .filter((l) => /^coral_\w*(connection|conn_|header|idle|shed|budget|descriptor)\w*/.test(l))
      .filter((l) => !/ 0$/.test(l)),
  };
}

// ---------------------------------------------------------------------------------------------
// The run.

let exitCode = 0;
let result;
try {
  origin = await startOrigin();
  origin.lines.on('line', (line) => {
    const f = JSON.parse(line);
    if (isWarm(f.path)) return;
    fetches.push(f);
    lastFetch.set(f.path, f.t);
  });
  name = `www.origin.test.${origin.port}.${values.zone}`;
  originUrl = (path) => `http://www.origin.test:${origin.port}${path}`;
  fleet = new Fleet({
    nodes,
    dataRoot,
    env: {
      CORAL_ZONE: values.zone,
      CORAL_ALLOW_PRIVATE_ORIGINS: 'true',
      CORAL_HOSTS: 'www.origin.test=127.0.0.1',
      // The node's default (the launcher turns the sampled audit off for tests).
      CORAL_PROXY_AUDIT_FRACTION: String(AUDIT_FRACTION),
    },
  });
  process.stdout.write(
    `bench:soak: ${nodes} nodes, ${minutes} min, ${restartEveryMs ? `a restart every ${restartEveryMs / MIN} min` : 'no restarts'}, ` +
      `${clients} clients, ${lorisCount ? `${lorisCount} slowloris connections on node ${lorisNode + 1}` : 'no slowloris crowd'}, ` +
      `large objects ${largeBytes.map((b) => `${b / MiB} MiB`).join(' ') || 'none'}\n`,
  );
  await fleet.start();
  for (const n of fleet.nodes) watch(n);
  // The load meets a formed fleet: every node knows every other as a live member (bounded).
  const formed = await until(everyoneLive, 60_000);
  nodeIds = await Promise.all(
    fleet.nodes.map(async (n) => (await n.admin.json('GET', '/v1/node')).nodeId),
  );
  const target = fleet.nodes[lorisNode];
  const limits = descriptorLimits(target.process.pid);
  process.stdout.write(
    `fleet up on 127.0.${fleet.subnet}.x (${formed ? 'every node sees every other' : 'NOT every node sees every other after 60 s'}); ` +
      `node ${lorisNode + 1}'s descriptor limit ${limits ? `${limits.soft} (hard ${limits.hard})` : 'unknown'}\n`,
  );
  const firstWarm = await warmUp(
    fleet.nodes.map((n) => n.index),
    'before the run',
  );
  if (firstWarm) process.stdout.write(warmText(firstWarm) + '\n');

  await Promise.all(fleet.nodes.map((n) => scrapeNode(n, { base: true })));
  measuring = true;
  t0 = Date.now();
  const crowd =
    lorisCount > 0
      ? new SlowlorisCrowd({
          ip: target.ip,
          port: target.proxyPort,
          host: name,
          path: `/obj/${HOT_BASE}`,
          connections: lorisCount,
          sources: Array.from({ length: lorisSources }, (_, k) => `127.66.0.${1 + k}`),
          intervalMs: lorisIntervalMs,
        })
      : undefined;
  crowd?.start();
  sampleNodes();
  const sampler = setInterval(sampleNodes, sampleEveryMs);
  const loops = [
    ...Array.from({ length: clients }, (_, k) => client(k)),
    largeLoop(),
    dnsLoop(),
    purgeLoop(),
    dshtLoop(),
    restartLoop(),
  ];
  header();
  // A row a second and a half after each minute (the origin's log arrives within 100 ms).
  let m = 0;
  for (; t0 + (m + 1) * MIN < t0 + durationMs; m++) {
    if (!(await pause(t0 + (m + 1) * MIN + 1_500 - Date.now()))) break;
    row(m, crowd?.take());
  }
  await pause(t0 + durationMs - Date.now());
  done.abort();
  tStop = Date.now();
  await Promise.allSettled(loops);
  clearInterval(sampler);
  await sleep(300); // the origin's last log lines
  const lastLoris = crowd?.take();
  crowd?.stop();
  const lastRow = Math.min(rowsTotal, Math.ceil((tStop - t0) / MIN)) - 1;
  for (; m <= lastRow; m++) row(m, m === lastRow ? lastLoris : undefined);
  for (const w of windows) w.end ??= Infinity;
  const metrics = await scrape();
  result = {
    lorisTotals: crowd?.totals,
    lorisTargetLimits: limits,
    metrics,
    origin: originAccounting(),
    rss: growth('rss'),
    fds: growth('fds'),
    anon: growth('anon'),
    heap: growth('heap', scrapes),
    external: growth('external', scrapes),
    memoryCache: growth('memCache', scrapes),
  };
} catch (err) {
  console.error(String(err?.stack ?? err));
  exitCode = 1;
} finally {
  measuring = false;
  for (let i = 0; i < (fleet?.nodes.length ?? 0); i++) planned.add(i);
  await fleet?.stop().catch(() => {});
  if (alive(origin?.child)) {
    origin.child.stdin.end();
    origin.child.kill('SIGTERM');
    await once(origin.child, 'exit').catch(() => {});
  }
  if (KEEP) process.stdout.write(`kept logs and data in ${dataRoot}\n`);
}

if (result) {
  const runS = (tStop - t0) / 1000;
  const o = result.origin;
  const healthyErrors = tally.httpErrors.healthy + tally.dnsErrors.healthy;
  const checked = (g) => g.filter((x) => x.checked);
  // No node checked (a run too short for readings in its last half): not a pass.
  const flat = (g) => checked(g).length > 0 && checked(g).every((x) => x.growthPct <= 5);
  const maxGrowth = (g) =>
    checked(g).length ? Math.max(...checked(g).map((x) => x.growthPct)) : null;
  const showGrowth = (g, unit) =>
    g
      .map((x) =>
        x.checked
          ? `n${x.node} ${unit(x.start)}→${unit(x.end)} (${x.growthPct >= 0 ? '+' : ''}${x.growthPct} %)`
          : `n${x.node} not checked (${x.why})`,
      )
      .join(', ');
  const targets = {
    healthyClientErrors: { value: healthyErrors, pass: healthyErrors === 0 },
    rssFlat: { value: maxGrowth(result.rss), pass: flat(result.rss) },
    fdsFlat: { value: maxGrowth(result.fds), pass: flat(result.fds) },
    originFetchesPerObject: {
      value: o.perObject,
      pass: o.duplicates.length === 0,
    },
    noUnplannedExit: { value: crashes.length, pass: crashes.length === 0 },
    restartsCameBack: {
      value: restarts.filter((r) => !r.back && !r.interrupted).length,
      pass: restarts.every((r) => r.back || r.interrupted),
    },
  };
  const pass = Object.values(targets).every((t) => t.pass);
  if (!pass) exitCode = 1;
  const mark = (t) => (t.pass ? 'PASS' : 'FAIL');
  const maxText = (v) => (v === null ? 'no node could be checked' : `max ${v} %`);
  const rows = [
    [
      'run',
      `${s1(runS * 1000)} s${interrupted ? ` (interrupted by ${interrupted})` : ''}, seed ${seed}`,
    ],
    [
      'client requests',
      `${tally.http.requests} (hot ${tally.http.byKind.hot}, new ${tally.http.byKind.new}, recent ${tally.http.byKind.recent}, large ${tally.http.byKind.large}); served local/peer/origin ${tally.servedBy.local} / ${tally.servedBy.peer} / ${tally.servedBy.origin}`,
    ],
    [
      'p50 / p99 latency (ms)',
      `${pct(latencies, 0.5).toFixed(1)} / ${pct(latencies, 0.99).toFixed(1)} (large objects excepted)`,
    ],
    [
      'large objects',
      `${tally.large.ok} of ${tally.large.downloads} downloads verified, ${tally.large.ms ? (tally.large.bytes / 1e6 / (tally.large.ms / 1000)).toFixed(0) : '-'} MB/s`,
    ],
    [
      'http errors healthy/restarting',
      `${tally.httpErrors.healthy} / ${tally.httpErrors.restarting} (wrong bodies: ${tally.http.corrupt})`,
    ],
    [
      'dns queries / errors h/r',
      `${tally.dns.queries} / ${tally.dnsErrors.healthy} / ${tally.dnsErrors.restarting} (answers naming a stopped node: ${tally.dns.namingStopped})`,
    ],
    [
      'purges',
      `${tally.purges.sent} sent, ${tally.purges.complete} complete, ${tally.purges.incomplete} not on every member, ${tally.purges.errors} failed; ${tally.purges.dropped} stored responses dropped (${tally.purges.droppedNothing} purges dropped none)`,
    ],
    [
      'dsht put / get',
      `${tally.dsht.puts} put (${tally.dsht.putErrors} failed); ${tally.dsht.gets} got: ${tally.dsht.found} found, ${tally.dsht.missing} missing, ${tally.dsht.getErrors} failed`,
    ],
    [
      'restarts',
      restarts
        .map(
          (r) =>
            `n${r.node} at ${r.at} s (exit ${r.exitCode}, ready ${r.readyS} s, live ${r.rejoinS} s${r.back ? '' : ', NOT BACK'})`,
        )
        .join('; ') || 'none',
    ],
    [
      'unplanned exits',
      crashes.map((c) => `n${c.node} at ${c.at} s (${c.signal ?? `code ${c.code}`})`).join('; ') ||
        'none',
    ],
    [
      'origin',
      `${o.requests} requests for ${o.objects} objects; outside restarts ${o.countedFetches} for ${o.countedObjects} (${o.auditRefetches} of them audit refetches); ${o.excludedObjects} objects first fetched in a restart window, ${o.fetchesInWindows} fetches in windows`,
    ],
    [
      'audit refetches per node',
      `${o.audit.attributedByNode.map((a, k) => `n${k + 1} ${a} (counted ${o.audit.countedByNodes[k]}${o.audit.takenBack[k] ? `, ${o.audit.takenBack[k]} taken back` : ''})`).join(', ')}: attributed from the origin's log / coral_member_audit_fetches_total`,
    ],
    [
      'nodes: origin fetches ok/error',
      `${result.metrics.originFetchesOk} / ${result.metrics.originFetchesError} (peer fetch errors ${result.metrics.peerFetchErrors}, commits refused ${result.metrics.commitsRefused}, members declared dead ${result.metrics.memberDead}; since each node's last start)`,
    ],
  ];
  if (result.lorisTotals) {
    const t = result.lorisTotals;
    rows.push([
      `slowloris on n${lorisNode + 1}`,
      `${t.opened} connected, ${t.closedByServer} closed by the node, ${t.connectFailed} connects failed; ends: ${
        Object.entries(t.ends)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ') || 'none'
      }`,
    ]);
    rows.push([
      `n${lorisNode + 1} connection metrics`,
      result.metrics.lorisTargetConnectionMetrics.join('; ') ||
        'none (no connection-budget metric exposed)',
    ]);
  }
  for (const w of warmups) rows.push(['warm-up', warmText(w)]);
  rows.push(['RSS MB, last half', showGrowth(result.rss, mb)]);
  rows.push(['  of it anonymous', showGrowth(result.anon, mb)]);
  rows.push(['  JS heap used', showGrowth(result.heap, mb)]);
  rows.push(['  external (Buffers)', showGrowth(result.external, mb)]);
  rows.push(['  memory tier', showGrowth(result.memoryCache, mb)]);
  rows.push(['descriptors, last half', showGrowth(result.fds, (v) => v)]);
  process.stdout.write('\n');
  for (const [k, v] of rows) process.stdout.write(`${k.padEnd(31)} ${v}\n`);
  for (const d of o.duplicates.slice(0, 10))
    process.stdout.write(
      `  fetched twice: ${d.object} by ${d.fetches.map((f) => `n${f.node || '?'} at ${f.at} s${f.audit ? ' (audit)' : ''}`).join(', ')}${d.afterRestart ? ` (the second ${d.afterRestart.seconds} s after n${d.afterRestart.node}'s restart window)` : ''}\n`,
    );
  if (errorSamples.size) {
    process.stdout.write('errors (count):\n');
    for (const [k, v] of [...errorSamples].sort((a, b) => b[1] - a[1]).slice(0, 15))
      process.stdout.write(`  ${v} × ${k}\n`);
  }
  for (const c of crashes)
    process.stdout.write(`node ${c.node}'s log before it exited:\n${c.log}\n`);
  process.stdout.write('\ntargets\n');
  const lines = [
    [targets.healthyClientErrors, `0 client errors on healthy nodes: ${healthyErrors}`],
    [
      targets.rssFlat,
      `RSS flat after warm-up (growth ≤ 5 % over the last half): ${maxText(targets.rssFlat.value)}`,
    ],
    [
      targets.fdsFlat,
      `descriptors flat after warm-up (growth ≤ 5 %): ${maxText(targets.fdsFlat.value)}`,
    ],
    [
      targets.originFetchesPerObject,
      `1.00 origin fetches per object outside restarts, audit refetches apart: ${o.perObject?.toFixed(3) ?? '-'} (${o.countedFetches - o.auditRefetches} / ${o.countedObjects}, ${o.duplicates.length} fetched twice; with the ${o.auditRefetches} audit refetches ${o.perObjectWithAudits?.toFixed(3) ?? '-'})`,
    ],
    [targets.noUnplannedExit, `no node exited unless stopped: ${crashes.length} exits`],
    [
      targets.restartsCameBack,
      `every restarted node came back: ${restarts.filter((r) => r.back).length} of ${restarts.length}`,
    ],
  ];
  for (const [t, text] of lines) process.stdout.write(`  ${mark(t)}  ${text}\n`);
  process.stdout.write(`  => ${pass ? 'PASS' : 'FAIL'}\n`);
  process.stdout.write(
    JSON.stringify({
      bench: 'soak',
      nodes,
      minutes,
      restartEveryMinutes: restartEveryMs / MIN,
      clients,
      slowloris: lorisCount,
      slowlorisNode: lorisNode + 1,
      largeBytes,
      seed,
      interrupted,
      runSeconds: Number(runS.toFixed(1)),
      pass,
      targets,
      requests: tally.http,
      servedBy: tally.servedBy,
      httpErrors: tally.httpErrors,
      dns: { ...tally.dns, errors: tally.dnsErrors },
      p50Ms: Number(pct(latencies, 0.5).toFixed(1)),
      p99Ms: Number(pct(latencies, 0.99).toFixed(1)),
      large: tally.large,
      purges: tally.purges,
      dsht: tally.dsht,
      restarts,
      warmups,
      unplannedExits: crashes.map(({ log: _log, ...c }) => c),
      origin: { ...o, duplicates: o.duplicates.slice(0, 20) },
      rssGrowth: result.rss,
      fdsGrowth: result.fds,
      anonGrowth: result.anon,
      heapGrowth: result.heap,
      externalGrowth: result.external,
      memoryCacheGrowth: result.memoryCache,
      slowlorisTotals: result.lorisTotals ?? null,
      slowlorisTargetLimits: result.lorisTargetLimits,
      nodeMetrics: result.metrics,
      perMinute: minuteRows,
      errorSamples: Object.fromEntries([...errorSamples].slice(0, 20)),
    }) + '\n',
  );
}
process.exit(exitCode);
