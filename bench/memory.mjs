#!/usr/bin/env node
// npm run bench:memory — what a Coral node's memory costs (issue 12, Must show 2). The node under
// measurement runs in a child process of its own (bench/memory-node.mjs, --expose-gc), started
// with the environment every long-running node gets (@coral/node's NODE_RUNTIME_ENV: glibc malloc
// settings, also in the Dockerfile and `npm start`); the origin and every client run in this
// process, so the RSS read from /proc/<pid>/status is the node's.
//
// (a) metadata: one node — a proxy in site mode with its disk store and a DSHT node it announces
//     through (@coral/node's DshtContentIndex) — is filled through the proxy over HTTP as a real
//     node is, with --objects cached 1 KiB objects (default 100,000): one origin fetch, one store
//     commit and two DSHT puts (fetching, then complete) each, so the node ends up holding the
//     metadata of 100,000 cached objects and 100,000 DSHT values. When everything is committed
//     and announced: RSS, heap and bytes per object after a full GC at once (`rss100kAfterFillMB`:
//     V8 still holds the young generation and old-space pages the fill grew), then after
//     --rest-seconds (30) without requests, the node at rest holding its data (`rss100kMB`,
//     target ≤ 150 MB: V8's memory reducer has run by then, as it does in any idle node); then
//     the node is restarted on the same directories and measured the same two ways (what it
//     holds reloaded from disk, `rss100kRestartedMB` at rest). The proxy's
//     hot-object cache (bodies kept in memory, a budget of its own) is set to --hot-budget-mb
//     (default 8) so that the figure is the metadata's, not the body budget's.
// (b) slow readers: --clients (200) clients ask for one --object-mb (50 MiB) object at once while
//     the proxy fetches it from an origin that sends --origin-mib-per-s (4 MiB/s, the whole
//     object in ~12.5 s); each reads at --reader-kib-per-s (20 KiB/s) over a real socket (no
//     'data' listener: paced socket.read() calls with a 4 KiB readable buffer; the kernel's TCP
//     buffers are the system's defaults, Node has no SO_RCVBUF for TCP). After --slow-seconds
//     (15 s): the node's RSS growth since just before the clients came (`slowReadersRssGrowthMB`,
//     target ≤ 64 MB), the node settled first (its start's first heap trim done: the proxies here
//     run the node's heap trim, bench/lib/heap-trim.mjs). Then every client reads the rest at full speed and each body's SHA-256 is
//     checked.
// (c) the same, joined on a peer fetch: two proxies share one index (the bench's, over IPC); a
//     seed client makes the first fetch the object from the slow origin, then the clients ask the
//     second, which fetches it from the first as a peer while they join
//     (`peerSlowReadersRssGrowthMB`, the second node's growth). The origin must see one request.
//
// MB are 10^6 bytes. Options: --phases a,b,c; --objects; --hot-budget-mb; --fill-connections (32);
// --clients; --object-mb; --origin-mib-per-s; --reader-kib-per-s; --slow-seconds;
// --read-timeout-s (time allowed for the full-speed reads, default 240); --rest-seconds;
// --heap-snapshots DIR (a V8 heap snapshot of the node at each measurement, for profiling: the
// snapshot itself costs memory, so figures from such a run are not results); --smaps (where (a)'s
// RSS is, by mapping, from /proc/<pid>/smaps: V8's heap pages, malloc's heap and arenas, the node
// binary, LevelDB's mapped tables). For diagnosis (figures from such runs are not results):
// --node-wrap 'CMD ARGS' runs the node's command line under CMD (e.g. `heaptrack -o FILE`; phase
// (a) only: (b) and (c) read the RSS of the process spawned, which is then the wrapper);
// --node-env K=V,K=V sets variables in the node's environment after NODE_RUNTIME_ENV's (e.g. to
// try another malloc setting without changing the product's).
//
// Prints a table and ends with ONE JSON line.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { connect } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { InMemoryContentIndex } from '@coral/httpprx';
import { NODE_RUNTIME_ENV } from '@coral/node';
import { bodyFor, sha256 } from './lib/bodies.mjs';
import { ipcPeer } from './lib/ipc.mjs';
import { median, processMemory } from './lib/system.mjs';

const { values: opt } = parseArgs({
  options: {
    phases: { type: 'string', default: 'a,b,c' },
    objects: { type: 'string', default: '100000' },
    'hot-budget-mb': { type: 'string', default: '8' },
    'fill-connections': { type: 'string', default: '32' },
    clients: { type: 'string', default: '200' },
    'object-mb': { type: 'string', default: '50' },
    'origin-mib-per-s': { type: 'string', default: '4' },
    'reader-kib-per-s': { type: 'string', default: '20' },
    'slow-seconds': { type: 'string', default: '15' },
    'read-timeout-s': { type: 'string', default: '240' },
    'heap-snapshots': { type: 'string' },
    smaps: { type: 'boolean', default: false },
    'rest-seconds': { type: 'string', default: '30' },
    'node-wrap': { type: 'string', default: '' },
    'node-env': { type: 'string', default: '' },
  },
});
const PHASES = new Set(opt.phases.split(','));
const OBJECTS = Number(opt.objects);
const HOT_BUDGET = Number(opt['hot-budget-mb']) * 2 ** 20;
const FILL_CONNECTIONS = Number(opt['fill-connections']);
const CLIENTS = Number(opt.clients);
const BIG = Math.round(Number(opt['object-mb']) * 2 ** 20);
const ORIGIN_RATE = Number(opt['origin-mib-per-s']) * 2 ** 20;
const READER_RATE = Number(opt['reader-kib-per-s']) * 1024;
const SLOW_MS = Number(opt['slow-seconds']) * 1000;
const READ_TIMEOUT_MS = Number(opt['read-timeout-s']) * 1000;
const REST_MS = Number(opt['rest-seconds']) * 1000;
for (const [k, v] of Object.entries({ OBJECTS, CLIENTS, BIG, ORIGIN_RATE, READER_RATE, SLOW_MS }))
  if (!(v > 0)) throw new Error(`${k} must be > 0`);
const MB = 1e6;
const mb = (bytes) => Number((bytes / MB).toFixed(1));
const TICK_MS = 50;

const tmp = mkdtempSync(join(os.tmpdir(), 'coral-bench-memory-'));
const children = new Set();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(tmp, { recursive: true, force: true });
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

// ---------------------------------------------------------------------------------------------
// The origin: /o/<n> small objects for (a), /big (paced) and /warm for (b) and (c).

const small = bodyFor(1024);
const big = bodyFor(BIG);
const bigSha = sha256(big);
const originCount = new Map();
const origin = createServer((req, res) => {
  const path = req.url.startsWith('/o/') ? '/o/*' : req.url;
  originCount.set(path, (originCount.get(path) ?? 0) + 1);
  const headers = (body) => ({
    'content-type': 'application/octet-stream',
    'content-length': String(body.length),
    'cache-control': 'public, max-age=86400',
    'last-modified': 'Mon, 01 Dec 2025 00:00:00 GMT',
    etag: `"${createHash('sha1').update(req.url).digest('hex').slice(0, 16)}"`,
  });
  if (path === '/o/*' || req.url === '/warm') return res.writeHead(200, headers(small)).end(small);
  if (req.url !== '/big') return res.writeHead(404).end();
  res.writeHead(200, headers(big));
  void sendPaced(res, big, ORIGIN_RATE);
});
await new Promise((r) => origin.listen(0, '127.0.0.1', r));
const originPort = origin.address().port;

/** Send `body` at `rate` bytes/s: every 20 ms what is due since the start, waiting for drains. */
async function sendPaced(res, body, rate) {
  const t0 = performance.now();
  let off = 0;
  res.on('close', () => (off = body.length + 1));
  while (off < body.length) {
    await sleep(20);
    const due = Math.min(body.length, Math.floor(((performance.now() - t0) / 1000) * rate));
    if (due <= off) continue;
    const ok = res.write(body.subarray(off, due));
    off = due;
    if (!ok) await new Promise((r) => res.once('drain', r));
  }
  if (off === body.length) res.end();
}

// ---------------------------------------------------------------------------------------------
// Node processes and the fleet's shared index.

const index = new InMemoryContentIndex();
const announced = []; // { nodeId, state } in order

async function startNode(config) {
  // --node-wrap (diagnosis): the node's command line is run by that program.
  const [cmd, ...args] = [
    ...opt['node-wrap'].split(' ').filter(Boolean),
    process.execPath,
    '--expose-gc',
    new URL('./memory-node.mjs', import.meta.url).pathname,
  ];
  const child = spawn(cmd, args, {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: {
      ...process.env,
      ...NODE_RUNTIME_ENV,
      // --node-env K=V,K=V (diagnosis): variables set after NODE_RUNTIME_ENV's.
      ...Object.fromEntries(
        opt['node-env']
          .split(',')
          .filter(Boolean)
          .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
      ),
      ...(opt['heap-snapshots'] ? { CORAL_BENCH_HEAP_SNAPSHOTS: opt['heap-snapshots'] } : {}),
      ...(opt.smaps ? { CORAL_BENCH_SMAPS: '1' } : {}),
    },
  });
  children.add(child);
  const peer = ipcPeer(child, {
    index(op, nodeId, hex, holder, ttl) {
      const view = index.forNode(nodeId);
      const key = Buffer.from(hex, 'hex');
      if (op === 'lookup') return view.lookup(key);
      if (op === 'announce') {
        announced.push({ nodeId, state: holder.state });
        return view.announce(key, holder, ttl);
      }
      return view.withdraw(key);
    },
  });
  child.once('exit', (code, signal) =>
    peer.fail(new Error(`node process exited (${signal ?? `code ${code}`})`)),
  );
  const started = await peer.call('start', { ...config });
  return {
    ...started,
    pid: child.pid,
    call: peer.call,
    async stop() {
      const gone = new Promise((r) => child.once('exit', r));
      await peer.call('stop').catch(() => {});
      await gone;
      children.delete(child);
    },
  };
}

function get(port, path, host, agent) {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent, headers: { host } }, (res) => {
      let n = 0;
      res.on('data', (c) => (n += c.length));
      res.on('end', () => resolve({ status: res.statusCode, bytes: n, headers: res.headers }));
      res.on('error', reject);
    });
    req.setTimeout(30_000, () => req.destroy(new Error(`GET ${path}: no answer in 30 s`)));
    req.on('error', reject);
    req.end();
  });
}

async function waitFor(what, fn, timeoutMs, everyMs = 100) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

const json = { bench: 'memory' };
const row = (label, value) => {
  console.log(`${label.padEnd(46)} ${value}`);
};

// ---------------------------------------------------------------------------------------------
// (a) metadata of --objects cached objects and as many DSHT values.

async function metadataPhase() {
  const dir = join(tmp, 'metadata');
  const config = { kind: 'metadata', dir, originPort, hotBudgetBytes: HOT_BUDGET, dshtPort: 0 };
  let node = await startNode(config);
  // A restart keeps the DSHT node's address, hence its id (the publisher of its values).
  config.dshtPort = node.dshtPort;
  const before = await node.call('measure', 'a-empty');
  const agent = new Agent({ keepAlive: true, maxSockets: FILL_CONNECTIONS });
  const t0 = performance.now();
  let next = 0;
  let bad = 0;
  await Promise.all(
    Array.from({ length: FILL_CONNECTIONS }, async () => {
      while (next < OBJECTS) {
        const i = next++;
        const r = await get(node.port, `/o/${i}`, 'site.test', agent);
        if (r.status !== 200 || r.bytes !== small.length) bad++;
        if ((i + 1) % 20_000 === 0)
          console.log(
            `  filled ${i + 1} of ${OBJECTS} (${Math.round((i + 1) / ((performance.now() - t0) / 1000))}/s)`,
          );
      }
    }),
  );
  agent.destroy();
  const fillS = (performance.now() - t0) / 1000;
  if (bad > 0) throw new Error(`${bad} fill requests failed`);
  // Commits and DSHT puts finish after the responses: wait until the node holds everything.
  const t1 = performance.now();
  const counts = await waitFor(
    'every object to be committed and announced',
    async () => {
      const c = await node.call('counts');
      return c.cached >= OBJECTS && c.dshtValues >= OBJECTS ? c : undefined;
    },
    180_000,
    2_000,
  );
  const settleS = (performance.now() - t1) / 1000;
  const busy = await node.call('measure', 'a-filled-busy');
  await sleep(REST_MS);
  const after = await node.call('measure', 'a-filled');
  await node.stop();
  const t2 = performance.now();
  node = await startNode(config);
  const restartS = (performance.now() - t2) / 1000;
  const reopenedCounts = await node.call('counts');
  const reopenedBusy = await node.call('measure', 'a-restarted-busy');
  await sleep(REST_MS);
  const reopened = await node.call('measure', 'a-restarted');
  await node.stop();

  const k = OBJECTS === 100_000 ? '100k' : `${OBJECTS}Objects`;
  row('(a) objects cached / DSHT values', `${counts.cached} / ${counts.dshtValues}`);
  row(
    '    fill through the proxy, then settled',
    `${fillS.toFixed(1)} s (${Math.round(OBJECTS / fillS)}/s), ${settleS.toFixed(1)} s`,
  );
  row('    hot-object budget (bodies)', `${mb(HOT_BUDGET)} MB`);
  row(
    '    RSS empty → filled (after full GC)',
    `${mb(before.rss)} → ${mb(busy.rss)} MB (anon ${mb(busy.anon)}, file ${mb(busy.file)}, heap total ${mb(busy.heapTotal)})`,
  );
  row(
    `    RSS filled, after ${REST_MS / 1000} s at rest`,
    `${mb(after.rss)} MB (anon ${mb(after.anon)}, file ${mb(after.file)}, shmem ${mb(after.shmem)})`,
  );
  row(
    '    heap used (total) empty → filled, at rest',
    `${mb(before.heapUsed)} (${mb(before.heapTotal)}) → ${mb(after.heapUsed)} (${mb(after.heapTotal)}) MB`,
  );
  row(
    '    heap spaces filled: committed (used) MB',
    Object.entries(after.spaces)
      .map(([name, [committed, used]]) => `${name} ${committed} (${used})`)
      .join(', '),
  );
  row(
    '    external / array buffers filled',
    `${mb(after.external)} / ${mb(after.arrayBuffers)} MB`,
  );
  if (after.smaps) {
    row('    where the RSS is (smaps, MB): empty', before.smaps.join(', '));
    row('                          filled at rest', after.smaps.join(', '));
    row('                       restarted at rest', reopened.smaps.join(', '));
  }
  const heapPerObject = Math.round((after.heapUsed - before.heapUsed) / OBJECTS);
  const rssPerObject = Math.round((after.rss - before.rss) / OBJECTS);
  row('    bytes per object: heap / RSS', `${heapPerObject} / ${rssPerObject}`);
  row(
    '    restarted on the same dirs: RSS, heap',
    `${mb(reopenedBusy.rss)} MB, ${mb(reopenedBusy.heapUsed)} MB (${reopenedCounts.cached} objects, ${reopenedCounts.dshtValues} values reloaded in ${restartS.toFixed(1)} s)`,
  );
  row(
    `    restarted, after ${REST_MS / 1000} s at rest: RSS, heap`,
    `${mb(reopened.rss)} MB, ${mb(reopened.heapUsed)} MB`,
  );
  const trims = after.heapTrims;
  const trimmedMB = mb(trims.reduce((s, t) => s + t.released, 0));
  const trimLongestMs = Math.max(0, ...trims.map((t) => t.tookMs));
  row(
    '    heap trims until the filled node rested',
    trims.length > 0
      ? `${trims.length}, ${trimmedMB} MB released, longest ${trimLongestMs} ms`
      : 'none (malloc_trim unavailable here)',
  );
  Object.assign(json, {
    objects: OBJECTS,
    [`rss${k}MB`]: mb(after.rss),
    [`rss${k}AfterFillMB`]: mb(busy.rss),
    restSeconds: REST_MS / 1000,
    [`heapUsed${k}MB`]: mb(after.heapUsed),
    [`heapTotal${k}MB`]: mb(after.heapTotal),
    bytesPerObject: heapPerObject,
    rssBytesPerObject: rssPerObject,
    rssEmptyMB: mb(before.rss),
    [`rss${k}RestartedMB`]: mb(reopened.rss),
    [`rss${k}AfterRestartMB`]: mb(reopenedBusy.rss),
    [`heapUsed${k}RestartedMB`]: mb(reopened.heapUsed),
    hotBudgetMB: mb(HOT_BUDGET),
    heapTrims: trims.length,
    heapTrimmedMB: trimmedMB,
    heapTrimLongestMs: trimLongestMs,
    fillSeconds: Number(fillS.toFixed(1)),
  });
}

// ---------------------------------------------------------------------------------------------
// Clients of (b) and (c): raw sockets, an HTTP/1.1 response read by hand (Content-Length only),
// paced until fast() is called.

const paced = new Set();
setInterval(() => {
  const budget = Math.max(1, Math.round((READER_RATE * TICK_MS) / 1000));
  for (const r of paced) r.tick(budget);
}, TICK_MS).unref();

function reader(port, host, path, { slow }) {
  const socket = connect({ port, host: '127.0.0.1', readableHighWaterMark: 4096 });
  socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  let head = Buffer.alloc(0);
  let headers;
  let status = 0;
  let length = -1;
  let received = 0;
  const hash = createHash('sha256');
  let settle;
  const done = new Promise((r) => (settle = r));
  const finish = (error) => {
    paced.delete(self);
    socket.destroy();
    settle({
      status,
      received,
      length,
      cacheStatus: headers?.['cache-status'] ?? '',
      ok: !error && status === 200 && received === length,
      sha256: received === length ? hash.digest('hex') : undefined,
      error,
    });
  };
  const consume = (chunk) => {
    if (!headers) {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      const lines = head.subarray(0, end).toString('latin1').split('\r\n');
      status = Number(lines[0].split(' ')[1]);
      headers = {};
      for (const l of lines.slice(1)) {
        const i = l.indexOf(':');
        headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
      }
      length = Number(headers['content-length'] ?? -1);
      if (length < 0) return finish(`no content-length (status ${status})`);
      chunk = head.subarray(end + 4);
    }
    received += chunk.length;
    hash.update(chunk);
    if (received >= length) finish(received > length ? 'body longer than content-length' : null);
  };
  socket.on('error', (e) => finish(e.code ?? e.message));
  socket.on('end', () => finish(received < length ? `closed at ${received} bytes` : null));
  const self = {
    done,
    get received() {
      return received;
    },
    get headersIn() {
      return headers !== undefined;
    },
    tick(budget) {
      while (budget > 0 && socket.readableLength > 0) {
        const c = socket.read(Math.min(budget, socket.readableLength));
        if (!c) break;
        budget -= c.length;
        consume(c);
      }
    },
    fast() {
      paced.delete(self);
      socket.on('data', consume);
    },
  };
  if (slow) paced.add(self);
  else self.fast();
  return self;
}

/** RSS of `pid` every 200 ms until stop(); returns the samples. */
function sampleRss(pid) {
  const samples = [];
  const timer = setInterval(() => {
    const m = processMemory(pid);
    if (m) samples.push({ t: performance.now(), rss: m.rss });
  }, 200);
  return {
    samples,
    stop: () => clearInterval(timer),
  };
}

/**
 * The slow-reader experiment against `node` (already started and warmed): baseline, CLIENTS slow
 * readers of /big, RSS after SLOW_MS, then full speed and checks. Returns the figures.
 */
async function slowReaders(node, host) {
  // A settled node: its start's garbage already given back by the heap trim (as on a node that
  // has been running), so that a trim during the slow reads does not count it as negative growth.
  if (node.heapTrim)
    await waitFor(
      "the node's first heap trim",
      async () => (await node.call('usage')).heapTrims.length > 0,
      30_000,
      500,
    );
  const base = await node.call('measure');
  try {
    writeFileSync(`/proc/${node.pid}/clear_refs`, '5'); // reset VmHWM: the peak from here on
  } catch {
    /* not Linux, or not allowed: the samples still give a peak */
  }
  const sampler = sampleRss(node.pid);
  const t0 = performance.now();
  const readers = Array.from({ length: CLIENTS }, () =>
    reader(node.port, host, '/big', { slow: true }),
  );
  const timeline = [];
  for (let s = 5_000; s < SLOW_MS; s += 5_000) {
    await sleep(t0 + s - performance.now());
    timeline.push({ s: s / 1000, rss: processMemory(node.pid)?.rss });
  }
  await sleep(t0 + SLOW_MS - performance.now());
  const atSlow = await node.call('usage');
  const receivedAtSlow = readers.map((r) => r.received);
  const withHeaders = readers.filter((r) => r.headersIn).length;
  for (const r of readers) r.fast();
  const results = await Promise.race([
    Promise.all(readers.map((r) => r.done)),
    sleep(READ_TIMEOUT_MS).then(() => {
      throw new Error(`full-speed reads not done after ${READ_TIMEOUT_MS / 1000} s`);
    }),
  ]);
  const readS = (performance.now() - t0 - SLOW_MS) / 1000;
  sampler.stop();
  const end = await node.call('usage');
  const peak = Math.max(end.hwm ?? 0, ...sampler.samples.map((x) => x.rss));
  const correct = results.filter((r) => r.ok && r.sha256 === bigSha).length;
  const errors = [...new Set(results.filter((r) => !r.ok).map((r) => r.error ?? r.status))];
  return {
    base,
    atSlow,
    timeline,
    growth: atSlow.rss - base.rss,
    peakGrowth: peak - base.rss,
    endGrowth: end.rss - base.rss,
    receivedMedian: median(receivedAtSlow),
    withHeaders,
    correct,
    errors,
    collapsed: results.filter((r) => /collapsed/.test(r.cacheStatus)).length,
    fromPeer: results.filter((r) => /fwd=peer/.test(r.cacheStatus)).length,
    readS,
  };
}

function report(label, key, r) {
  row(
    `${label} RSS before → after ${SLOW_MS / 1000} s`,
    `${mb(r.base.rss)} → ${mb(r.atSlow.rss)} MB: growth ${mb(r.growth)} MB (heap ${mb(r.atSlow.heapUsed)}, array buffers ${mb(r.atSlow.arrayBuffers)} MB)`,
  );
  row(
    '    RSS growth at 5 s steps',
    r.timeline.map((x) => `${x.s} s: ${mb(x.rss - r.base.rss)}`).join(', ') || 'n/a',
  );
  row(
    `    clients with headers / median bytes read`,
    `${r.withHeaders} of ${CLIENTS} / ${Math.round(r.receivedMedian / 1024)} KiB at ${SLOW_MS / 1000} s`,
  );
  row(
    '    full speed: bodies sha256-correct',
    `${r.correct} of ${CLIENTS} in ${r.readS.toFixed(1)} s${r.errors.length ? ` (errors: ${r.errors.join(', ')})` : ''}`,
  );
  row('    peak / end RSS growth', `${mb(r.peakGrowth)} / ${mb(r.endGrowth)} MB`);
  const trims = r.atSlow.heapTrims ?? [];
  row(
    `    heap trims from its start to ${SLOW_MS / 1000} s`,
    `${trims.length}, ${mb(trims.reduce((sum, t) => sum + t.released, 0))} MB released, longest ${Math.max(0, ...trims.map((t) => t.tookMs))} ms`,
  );
  row('    answers joined (collapsed) / from a peer', `${r.collapsed} / ${r.fromPeer}`);
  Object.assign(json, {
    [`${key}RssGrowthMB`]: mb(r.growth),
    [`${key}HeapTrims`]: trims.length,
    [`${key}PeakRssGrowthMB`]: mb(r.peakGrowth),
    [`${key}BodiesOk`]: r.correct,
    [`${key}Joined`]: r.collapsed,
  });
}

// ---------------------------------------------------------------------------------------------
// (b) slow readers joined on an origin fetch.

const bigHost = `origin.test.${originPort}.nyud.net`;
const proxyConfig = (name, nodeId) => ({
  kind: 'proxy',
  dir: join(tmp, name),
  nodeId,
  maxObjectBytes: Math.max(BIG, 64 * 2 ** 20),
});

async function originPhase() {
  const node = await startNode(proxyConfig('b', 'b0'.repeat(20)));
  await get(node.port, '/warm', bigHost); // lazy start-up costs are not the readers'
  const before = originCount.get('/big') ?? 0;
  const r = await slowReaders(node, bigHost);
  await node.stop();
  const originRequests = (originCount.get('/big') ?? 0) - before;
  row(
    `(b) ${CLIENTS} slow readers on an origin fetch`,
    `origin requests for it: ${originRequests}`,
  );
  report('   ', 'slowReaders', r);
  json.slowReadersOriginRequests = originRequests;
}

// ---------------------------------------------------------------------------------------------
// (c) slow readers joined on a peer fetch.

async function peerPhase() {
  const a = await startNode(proxyConfig('c-a', 'ca'.repeat(20)));
  const b = await startNode(proxyConfig('c-b', 'cb'.repeat(20)));
  const members = [a, b].map((n) => ({ nodeId: n.nodeId, ip: '127.0.0.1', httpPort: n.port }));
  await Promise.all([a.call('fleet', members), b.call('fleet', members)]);
  // Warm both, and check that the second really fetches from the first (the peer path works).
  await get(a.port, '/warm', bigHost);
  await waitFor(
    "the first node's announcement",
    () => announced.some((x) => x.nodeId === a.nodeId && x.state === 'complete'),
    10_000,
  );
  const warm = await get(b.port, '/warm', bigHost);
  const peerWorks = /fwd=peer/.test(String(warm.headers['cache-status']));
  if (!peerWorks)
    console.log(
      `  ! the second node did not fetch /warm from its peer (${warm.headers['cache-status']}): see the ADAPTER in bench/memory-node.mjs`,
    );
  const before = originCount.get('/big') ?? 0;
  const seen = announced.length;
  const seed = reader(a.port, bigHost, '/big', { slow: false });
  await waitFor(
    "the first node's fetching announcement",
    () => announced.slice(seen).some((x) => x.nodeId === a.nodeId && x.state === 'fetching'),
    10_000,
    20,
  );
  const r = await slowReaders(b, bigHost);
  const s = await seed.done;
  const aEnd = await a.call('usage');
  await Promise.all([a.stop(), b.stop()]);
  const originRequests = (originCount.get('/big') ?? 0) - before;
  row(
    `(c) ${CLIENTS} slow readers on a peer fetch`,
    `origin requests for it: ${originRequests} (1 = the second node fetched from its peer); seed client ${s.ok && s.sha256 === bigSha ? 'sha256-correct' : `FAILED (${s.error ?? s.status})`}`,
  );
  report('   ', 'peerSlowReaders', r);
  row('    first node (the peer) RSS at the end', `${mb(aEnd.rss)} MB`);
  Object.assign(json, {
    peerFetch: peerWorks && originRequests === 1 && r.fromPeer > 0,
    peerSlowReadersOriginRequests: originRequests,
  });
}

const t0 = performance.now();
console.log(
  `Coral node memory — node ${process.version}, ${os.cpus().length} CPUs, ${mb(os.totalmem())} MB RAM, loadavg ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}; MB = 10^6 bytes`,
);
if (PHASES.has('a')) await metadataPhase();
if (PHASES.has('b') || PHASES.has('c'))
  console.log(
    `(b), (c): ${CLIENTS} clients, one ${mb(BIG)} MB object, origin ${mb(ORIGIN_RATE)} MB/s, readers ${(READER_RATE / 1024).toFixed(0)} KiB/s each for ${SLOW_MS / 1000} s`,
  );
if (PHASES.has('b')) await originPhase();
if (PHASES.has('c')) await peerPhase();
json.wallSeconds = Number(((performance.now() - t0) / 1000).toFixed(1));
row('wall', `${json.wallSeconds} s`);
origin.close();
console.log(JSON.stringify(json));
process.exit(0);
