#!/usr/bin/env node
// npm run bench:http — cache hits of the node users run, `coral-node start`, in Coral mode and in
// site mode, against a plain node:http server sending the same bytes and headers from memory (the
// baseline) and against nginx proxy_cache in front of the same origin when nginx is installed, in
// one run.
//
// Servers under test (row names; JSON key prefixes in brackets), each a process of its own:
// - plain [plain]: bench/http-server.mjs, role plain — node:http sending, for GET /1k and /100k,
//   the body and the very header list of the node's Coral-mode hit (captured at start-up) from
//   memory: the runtime's own cost of an answer, none of the proxy's work.
// - node-coral [coral]: `coral-node start` (the built packages/node/dist/cli.js) with a JSON
//   configuration file written for the run (`--config`; no CORAL_* variable is passed on, so the
//   file is the whole configuration), its LevelDB data dir in the temp folder, the node's
//   NODE_RUNTIME_ENV (glibc malloc settings, as `npm start` and the image set them), keyed (it
//   generates its fleet key, as a first node does), DNS, DSHT and admin API on free loopback
//   ports, `allowPrivateOrigins` and `hosts: { origin.test: 127.0.0.1 }` for the loopback origin,
//   the bench's certificate as `tls.cert`/`tls.key`, and `proxy.clientRateLimitPerSecond` set high
//   enough not to refuse the one benchmark client (the default, 200/s per client address, would).
//   Requests name the Coralized host origin.test.<port>.nyud.net.
//   Its access log is on, as by default: one JSON line per request on its stdout (the node's log
//   file here).
// - node-coral-nolog [coralNolog]: the same as node-coral with `log.access.destination: off`: what
//   the access log costs is node-coral ÷ this row (coralCoralNologRatio1k; issue 29's target:
//   ≥ 0.9). `--no-nolog` leaves it out.
// - node-site [site]: the same, a second process, in site (accelerator) mode: `proxy.sites` maps
//   site.test to http://origin.test:<port>; no `allowPrivateOrigins` (a site's origin may be
//   private by its mapping alone). Requests name site.test.
// - bare-proxy [bare]: bench/http-server.mjs, role proxy — a CoralProxy alone (in-memory index, disk
//   store), without the node around it (blocklist gate, traffic observer, prom-client counters,
//   DSHT, DNS, admin API): what the node's composition costs is node-coral minus this row.
//   `--no-bare` leaves it out.
// - nginx [nginx]: nginx proxy_cache (generated nginx.conf, one worker; below).
// The fast path: after the rounds the bench reads each node's /metrics and prints the share of its
// hits answered on the fast path (coral_http_fast_hits_total ÷ the hits of coral_http_requests_total;
// JSON coralFastHitShare, siteFastHitShare): well under 1 means hits took the full path.
//
// Layout. Every server under test is pinned to CPU 0 with taskset (all its threads; nginx's master
// and worker); the load generator is pinned to CPU 1: wrk when installed (one thread), otherwise
// autocannon in bench/http-load.mjs. The origin and this script run unpinned and are idle while a
// case is measured (every request is a cache hit). Keep-alive connections, 1 KiB and 100 KiB
// objects, over http and over https (issue 11: every server also listens over TLS with one
// certificate from a test CA made here — ECDSA P-256, HTTP/1.1 by ALPN; wrk resumes no sessions,
// so each connection's handshake is paid once, during the warm-up, and the rows measure requests
// on established TLS connections).
//
// Saturation. Each run reports, over its middle (0.5 s after the start to 0.5 s before the end),
// the server's CPU (utime + stime of its processes from /proc/<pid>/stat, % of one core), the
// generator's, and each CPU's busy and interrupt share from /proc/stat (loopback TCP runs in
// softirqs, mostly in the context of the process that sends, and is charged to it). A run whose
// server stayed under 90 % is flagged `!`: it measured the generator or the neighbours. One wrk
// thread on one core keeps a Node server busy at 1 KiB; at 100 KiB reading the answers costs the
// generator more than sending them costs the server, so the server's CPU per request (and the
// requests per CPU-second ratios, *CpuRatio*) is what compares the servers there.
//
// Noise. The cases alternate in rounds (the order of the servers rotates each round), so a burst of
// load from elsewhere hits one round, not one server. Each run records the hypervisor's steal on
// CPUs 0 and 1 (from /proc/stat, as bench:dns does) and the CPU of every other process on the
// machine (other jobs, other helpers; processes that start and end inside the run count through
// their parent); a run is quiet when steal stayed under 0.5 % and the others under 5 % of a core.
// A ratio is the median of the within-round ratios over the rounds where both runs were quiet;
// else the ratio of the two cases' quiet medians; else the median over all rounds (the JSON's
// *Basis says which). Rounds repeat until every ratio has --rounds quiet pairs, at most
// --max-rounds.
//
// Ratios (per scheme and size; https keys start with `https`, e.g. httpsSiteCoralRatio1k), each
// req/s a ÷ b (`…Ratio`), p99 (`…P99Ratio`) and requests per CPU-second (`…CpuRatio`):
// coral, site and bare ÷ plain (coralRatio1k, siteRatio1k, bareRatio1k), ÷ nginx (coralNginxRatio1k,
// siteNginxRatio1k, bareNginxRatio1k), site ÷ coral (siteCoralRatio1k), and the access log's cost,
// coral ÷ coral-nolog (coralCoralNologRatio1k). Targets (issue 26): siteCoral ≥ 0.95, coralNginx
// and siteNginx ≥ 1.0 on one pinned core; (issue 29) coralCoralNolog ≥ 0.9; the summary says
// which were met.
//
// Cache hits are checked, not assumed: after warm-up and after every round every Coral server must
// answer with Cache-Status `hit` and nginx with `$upstream_cache_status` HIT, else the bench fails.
//
// Options: --seconds N (per run, default 3), --warmup N (s per case before the rounds, default 2),
// --rounds N (quiet pairs wanted per ratio, default 3), --max-rounds N (default 10),
// --connections N (default 64), --threads N (wrk threads, default 1), --node-generator, --no-pin,
// --no-nginx, --no-https, --no-bare, --no-nolog.
//
// Prints a table per case and round, a summary, and ONE JSON line at the end.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, request } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { NODE_RUNTIME_ENV } from '@coral/node';
import { issueCert, makeTestCa } from '@coral/testkit';
import { bodyFor } from './lib/bodies.mjs';
import {
  canPin,
  childPids,
  cpuWindow,
  installed,
  median,
  nextMessage,
  pinned,
} from './lib/system.mjs';

const { values: opt } = parseArgs({
  options: {
    seconds: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '3' },
    'max-rounds': { type: 'string', default: '10' },
    connections: { type: 'string', default: '64' },
    threads: { type: 'string', default: '1' },
    'node-generator': { type: 'boolean', default: false },
    'no-pin': { type: 'boolean', default: false },
    'no-nginx': { type: 'boolean', default: false },
    'no-https': { type: 'boolean', default: false },
    'no-bare': { type: 'boolean', default: false },
    'no-nolog': { type: 'boolean', default: false },
  },
});
const SECONDS = Number(opt.seconds);
const WARMUP = Number(opt.warmup);
const QUIET_ROUNDS = Number(opt.rounds);
const MAX_ROUNDS = Math.max(QUIET_ROUNDS, Number(opt['max-rounds']));
const CONNECTIONS = Number(opt.connections);
const THREADS = Number(opt.threads);
if (!(SECONDS >= 2) || !(CONNECTIONS >= 1) || !(THREADS >= 1) || !(QUIET_ROUNDS >= 1)) {
  console.error('--seconds ≥ 2, --connections ≥ 1, --threads ≥ 1, --rounds ≥ 1');
  process.exit(2);
}

/** Quiet: steal under this % on the CPUs used ... */
const QUIET_STEAL_PCT = 0.5;
/** ... and every other process on the machine together under this % of one core. */
const QUIET_OTHERS_PCT = 5;
/** A server busy less than this (% of its core) was not saturated. */
const SATURATED_PCT = 90;

const PIN = !opt['no-pin'] && canPin();
const SERVER_CPU = PIN ? 0 : undefined;
const GENERATOR_CPU = PIN ? 1 : undefined;
const GENERATOR = !opt['node-generator'] && installed('wrk', ['--version']) ? 'wrk' : 'autocannon';

/** Object sizes, by the name used in URLs, rows and JSON keys. */
const SIZES = { '1k': 1024, '100k': 100 * 1024 };
/**
 * Schemes measured, each with its JSON key prefix: rows and JSON keys (httpsRatio1k, ...) follow
 * from this table and from the ports each server answers. (wrk does not verify certificates and
 * names no server (the URL's host is 127.0.0.1): each TLS listener has one certificate; the Host
 * header still names the site.)
 */
const HTTPS = !opt['no-https'];
const SCHEMES = HTTPS ? { http: '', https: 'https' } : { http: '' };

const tmp = mkdtempSync(join(os.tmpdir(), 'coral-bench-http-'));
const children = new Set();
/** Processes that are not our children but must not outlive the bench (nginx's worker). */
const stray = [];
const cleanup = () => {
  // nginx's master stops its worker itself on SIGTERM; a SIGKILLed master would leave it running.
  for (const c of children)
    c.kill(c.spawnfile === 'nginx' || c.spawnargs.includes('nginx') ? 'SIGTERM' : 'SIGKILL');
  for (const pid of stray) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  rmSync(tmp, { recursive: true, force: true });
};
process.on('exit', cleanup);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

// ---------------------------------------------------------------------------------------------
// The origin (this process): every size with the headers a static file server would send.

const bodies = Object.fromEntries(Object.entries(SIZES).map(([k, n]) => [k, bodyFor(n)]));
let originRequests = 0;
const origin = createServer((req, res) => {
  originRequests++;
  const b = bodies[req.url.slice(1)];
  if (!b) return res.writeHead(404).end();
  res.writeHead(200, {
    'content-type': 'application/octet-stream',
    'content-length': String(b.length),
    'cache-control': 'public, max-age=3600',
    'last-modified': 'Mon, 01 Dec 2025 00:00:00 GMT',
    etag: `"${req.url.slice(1)}-v1"`,
  });
  res.end(b);
});
await new Promise((r) => origin.listen(0, '127.0.0.1', r));
const originPort = origin.address().port;

/** Names the servers answer for: the Coralized name of the origin, the site, the others' Hosts. */
const CORAL_HOST = `origin.test.${originPort}.nyud.net`;
const SITE_HOST = 'site.test';
/** One certificate for every TLS listener, from a CA made for this run (the checks verify it). */
const ca = HTTPS ? await makeTestCa({ name: 'Coral bench CA' }) : undefined;
const leaf = ca
  ? await issueCert(ca, {
      dnsNames: [CORAL_HOST, '*.nyud.net', 'nyud.net', SITE_HOST, 'plain.test', 'nginx.test'],
      ipAddresses: ['127.0.0.1'],
    })
  : undefined;
const tls = leaf ? { cert: leaf.cert, key: leaf.key } : undefined;

// ---------------------------------------------------------------------------------------------
// Servers under test. Each: { name, key (JSON prefix), pids (for CPU accounting), ports
// ({ scheme: port }), host (Host header), check(size) (throws unless the answer is a cache hit) }.

function get(port, path, host, scheme = 'http') {
  return new Promise((resolve, reject) => {
    const options = { host: '127.0.0.1', port, path, headers: { host } };
    const send =
      scheme === 'https'
        ? (cb) => httpsRequest({ ...options, ca: ca.cert, servername: host, agent: false }, cb)
        : (cb) => request(options, cb);
    const req = send((res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ res, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function startNodeServer(config) {
  const [cmd, args] = pinned(SERVER_CPU, process.execPath, [
    new URL('./http-server.mjs', import.meta.url).pathname,
  ]);
  // Both Node servers run with the environment every long-running node gets (NODE_RUNTIME_ENV:
  // glibc malloc settings, also in the Dockerfile and `npm start`), so that the rows differ only
  // in the handler: with the settings on the proxy alone, the plain row measured a different
  // malloc (its fixed trim threshold costs the proxy's process brk calls under load).
  const env = { ...process.env, ...NODE_RUNTIME_ENV };
  const child = spawn(cmd, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env });
  children.add(child);
  child.send(config);
  const { ports } = await nextMessage(child, `${config.role} server`);
  return { child, ports };
}

/**
 * A server under test: `check(size)` fetches the object once and throws unless the answer is 200,
 * has the right bytes and `isHit(res)` says it came from the cache; it returns the response.
 */
function serverUnderTest({ name, key, pids, ports, host, isHit = () => true }) {
  return {
    name,
    key,

    pids,
    ports,
    host,
    /** Over every scheme the server listens on (https: verified against the bench's CA). */
    async check(size) {
      let first;
      for (const scheme of Object.keys(SCHEMES)) {
        if (ports[scheme] === undefined) continue;
        const { res, body } = await get(ports[scheme], `/${size}`, host, scheme);
        if (res.statusCode !== 200 || !isHit(res) || !body.equals(bodies[size])) {
          const s = JSON.stringify(res.headers['cache-status'] ?? res.headers['x-cache-status']);
          throw new Error(
            `${name} ${scheme} /${size}: ${res.statusCode} ${s}, not a correct cache hit`,
          );
        }
        first ??= res;
      }
      return first;
    },
  };
}

/** A Cache-Status of the proxy's: a hit. */
const coralHit = (res) => /; hit/.test(String(res.headers['cache-status']));

/** The bare CoralProxy (bench/http-server.mjs, role proxy): the proxy without the node. */
async function startBareProxy() {
  const { child, ports } = await startNodeServer({
    role: 'proxy',
    originPort,
    dataDir: join(tmp, 'bare-proxy'),
    tls,
  });
  return serverUnderTest({
    name: 'bare-proxy',
    key: 'bare',
    pids: [child.pid],
    ports,
    host: CORAL_HOST,
    isHit: coralHit,
  });
}

const CORAL_CLI = fileURLToPath(new URL('../packages/node/dist/cli.js', import.meta.url));

/** The tail of a log file, for an error message. */
function tailOf(file, lines = 20) {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/**
 * A `coral-node start` process (see the header comment): `mode` 'coral' (requests name the
 * Coralized host) or 'site' (`proxy.sites` maps site.test to the origin). Its configuration file,
 * data dir and log (stdout and stderr) are in the temp folder; `admin` is its admin API's port.
 */
async function startCoralNode(mode, { accessLog = true } = {}) {
  const name = `node-${mode}${accessLog ? '' : '-nolog'}`;
  const dir = join(tmp, name);
  mkdirSync(dir, { recursive: true });
  const [port, tlsPort, dshtPort, dnsPort, adminPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const config = {
    dataDir: join(dir, 'data'),
    host: '127.0.0.1',
    hosts: { 'origin.test': '127.0.0.1' },
    // The Coralized name's origin is on loopback; a site's origin is allowed by its mapping.
    ...(mode === 'coral' ? { allowPrivateOrigins: true } : {}),
    proxy: {
      port,
      tlsPort,
      // The default (200/s per client address) would refuse the one benchmark client.
      clientRateLimitPerSecond: 1_000_000_000,
      ...(mode === 'site' ? { sites: { [SITE_HOST]: `http://origin.test:${originPort}` } } : {}),
    },
    dsht: { port: dshtPort },
    dns: { port: dnsPort },
    admin: { port: adminPort },
    // The access log is on by default (stdout: the node's log file here); off for the -nolog row.
    ...(accessLog ? {} : { log: { access: { destination: 'off' } } }),
  };
  if (tls) {
    writeFileSync(join(dir, 'cert.pem'), tls.cert);
    writeFileSync(join(dir, 'key.pem'), tls.key);
    config.tls = { cert: join(dir, 'cert.pem'), key: join(dir, 'key.pem') };
  }
  const configFile = join(dir, 'coral.json');
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  // The file is the whole configuration: no CORAL_* variable of this shell reaches the node.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('CORAL_')),
  );
  Object.assign(env, NODE_RUNTIME_ENV);
  const logFile = join(dir, 'node.log');
  const log = openSync(logFile, 'a');
  const [cmd, args] = pinned(SERVER_CPU, process.execPath, [
    CORAL_CLI,
    'start',
    '--config',
    configFile,
  ]);
  const child = spawn(cmd, args, { stdio: ['ignore', log, log], env });
  closeSync(log);
  children.add(child);
  const exited = once(child, 'exit').then(([code]) => {
    throw new Error(`${name} exited (${code}) before listening:\n${tailOf(logFile)}`);
  });
  exited.catch(() => {}); // only raced below
  // The proxy listens last but one (the TLS listener, then DNS and the admin API come after it).
  for (const p of [port, ...(tls ? [tlsPort] : []), adminPort]) {
    await Promise.race([waitForPort(p, 60_000), exited]);
  }
  child.once('exit', (code) => {
    if (children.has(child)) console.error(`${name} exited (${code}):\n${tailOf(logFile)}`);
  });
  return {
    ...serverUnderTest({
      name,
      key: accessLog ? mode : `${mode}Nolog`,
      // With workers (issue 26), their processes count too.
      pids: [child.pid, ...childPids(child.pid)],
      ports: tls ? { http: port, https: tlsPort } : { http: port },
      host: mode === 'site' ? SITE_HOST : CORAL_HOST,
      isHit: coralHit,
    }),
    adminPort,
    logFile,
  };
}

/**
 * The share of a node's hits answered on its fast path, from its /metrics: fast hits ÷ every
 * response counted with cache_status "hit".
 */
async function fastHitShare(node) {
  const text = await new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: node.adminPort, path: '/metrics' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.end();
  });
  const fast = Number(/^coral_http_fast_hits_total (\S+)$/m.exec(text)?.[1] ?? NaN);
  let hits = 0;
  for (const m of text.matchAll(
    /^coral_http_requests_total\{[^}]*cache_status="hit"[^}]*\} (\S+)$/gm,
  ))
    hits += Number(m[1]);
  return { fast, hits, share: hits > 0 ? fast / hits : NaN };
}

/** The baseline: a node's hit headers (captured from it) and the same body, from memory. */
async function startPlain(node) {
  const headers = {};
  for (const size of Object.keys(SIZES)) {
    const { rawHeaders } = await node.check(size);
    headers[size] = rawHeaders.filter((_, i) => {
      const name = rawHeaders[i - (i % 2)].toLowerCase();
      return name !== 'connection' && name !== 'keep-alive' && name !== 'transfer-encoding';
    });
  }
  const { child, ports } = await startNodeServer({ role: 'plain', sizes: SIZES, headers, tls });
  return serverUnderTest({
    name: 'plain',
    key: 'plain',
    pids: [child.pid],
    ports,
    host: 'plain.test',
  });
}

/** Retry `fn` until it resolves (every 50 ms, for at most 5 s). */
async function eventually(fn) {
  const until = Date.now() + 5_000;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (Date.now() > until) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function waitForPort(port, deadlineMs) {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const s = connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nothing listens on ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * nginx with proxy_cache in front of the same origin: a generated nginx.conf in the temp dir, one
 * worker, keep-alive to clients (no request cap per connection, as node:http has none) and to the
 * origin, sendfile, access log off; `X-Cache-Status: $upstream_cache_status` on every answer.
 */
async function startNginx() {
  const dir = join(tmp, 'nginx');
  const port = await freePort();
  const sslPort = tls ? await freePort() : undefined;
  mkdirSync(dir, { recursive: true });
  if (tls) {
    writeFileSync(join(dir, 'cert.pem'), tls.cert);
    writeFileSync(join(dir, 'key.pem'), tls.key);
  }
  // As the Node servers: TLS 1.2 and 1.3, HTTP/1.1, one certificate, no session cache to warm.
  const ssl = tls
    ? `
    listen 127.0.0.1:${sslPort} ssl;
    ssl_certificate ${dir}/cert.pem;
    ssl_certificate_key ${dir}/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;`
    : '';
  const conf = `
daemon off;
master_process on;${process.getuid?.() === 0 ? '\nuser root;' : ''}
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nodelay on;
  keepalive_timeout 65;
  keepalive_requests 1000000000;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy_temp;
  fastcgi_temp_path ${dir}/fastcgi_temp;
  uwsgi_temp_path ${dir}/uwsgi_temp;
  scgi_temp_path ${dir}/scgi_temp;
  proxy_cache_path ${dir}/cache levels=1:2 keys_zone=coral:10m max_size=1g inactive=1h use_temp_path=off;
  upstream origin { server 127.0.0.1:${originPort}; keepalive 8; }
  server {
    listen 127.0.0.1:${port};${ssl}
    location / {
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_cache coral;
      # One entry per URL whichever scheme the client used, as the proxy keeps it (the default
      # key starts with $scheme).
      proxy_cache_key $proxy_host$request_uri;
      add_header X-Cache-Status $upstream_cache_status always;
    }
  }
}
`;
  writeFileSync(join(dir, 'nginx.conf'), conf);
  const [cmd, args] = pinned(SERVER_CPU, 'nginx', [
    '-p',
    dir,
    '-c',
    join(dir, 'nginx.conf'),
    '-e',
    join(dir, 'error.log'),
  ]);
  const child = spawn(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  children.add(child);
  child.once('exit', (code) => {
    if (children.has(child))
      console.error(
        `nginx exited (${code}): ${readFileSync(join(dir, 'error.log'), 'utf8').trim()}`,
      );
  });
  await waitForPort(port, 5_000);
  return serverUnderTest({
    name: 'nginx',
    key: 'nginx',
    pids: [child.pid],
    ports: sslPort ? { http: port, https: sslPort } : { http: port },
    host: 'nginx.test',
    isHit: (res) => res.headers['x-cache-status'] === 'HIT',
  });
}

// ---------------------------------------------------------------------------------------------
// Load generators: one run against a URL, pinned to GENERATOR_CPU. The CPU window covers the
// middle of the run, while the generator is alive (its /proc entry is gone once it exits).

const WRK_SCRIPT = join(tmp, 'report.lua');
writeFileSync(
  WRK_SCRIPT,
  `done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('JSON {"requests":%d,"durationS":%f,"bytes":%d,"errors":%d,"non2xx":%d,' ..
    '"p50Ms":%f,"p90Ms":%f,"p99Ms":%f,"p999Ms":%f}\\n',
    summary.requests, summary.duration / 1e6, summary.bytes, e.connect + e.read + e.write + e.timeout,
    e.status, latency:percentile(50) / 1e3, latency:percentile(90) / 1e3,
    latency:percentile(99) / 1e3, latency:percentile(99.9) / 1e3))
end
`,
);

async function generate(url, host, seconds, ours) {
  const argv =
    GENERATOR === 'wrk'
      ? [
          'wrk',
          [
            `-t${THREADS}`,
            `-c${CONNECTIONS}`,
            `-d${seconds}s`,
            '--timeout',
            '10s',
            '-s',
            WRK_SCRIPT,
            '-H',
            `Host: ${host}`,
            url,
          ],
        ]
      : [
          process.execPath,
          [
            new URL('./http-load.mjs', import.meta.url).pathname,
            JSON.stringify({ url, host, connections: CONNECTIONS, seconds }),
          ],
        ];
  const [cmd, args] = pinned(GENERATOR_CPU, ...argv);
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(child);
  let out = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d) => (out += d));
  const exited = once(child, 'exit');
  await new Promise((r) => setTimeout(r, 500));
  const window = cpuWindow();
  await new Promise((r) => setTimeout(r, Math.max(500, seconds * 1000 - 1000)));
  const cpu = window.end({ ...ours, generator: child.pid, bench: process.pid });
  const [code] = await exited;
  children.delete(child);
  if (code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited with ${code}`);
  const line = out.split('\n').find((l) => l.startsWith('JSON ') || l.startsWith('{'));
  if (!line) throw new Error(`no result from ${GENERATOR}: ${out}`);
  const r = JSON.parse(line.replace(/^JSON /, ''));
  return { ...r, rps: r.requests / r.durationS, cpu };
}

// ---------------------------------------------------------------------------------------------
// Start everything, build the case table, warm up, measure in rounds.

/** Fill a Coral server's cache with every object (a miss each), then check that each is a hit. */
async function fill(server) {
  for (const size of Object.keys(SIZES)) {
    await get(server.ports.http, `/${size}`, server.host); // the miss that fills the cache
    await eventually(() => server.check(size)); // the disk store commits after the response ends
  }
  return server;
}

const nodes = [
  await fill(await startCoralNode('coral')),
  ...(opt['no-nolog'] ? [] : [await fill(await startCoralNode('coral', { accessLog: false }))]),
  await fill(await startCoralNode('site')),
];
const bare = opt['no-bare'] ? undefined : await fill(await startBareProxy());
const servers = [await startPlain(nodes[0]), ...nodes, ...(bare ? [bare] : [])];
let nginxNote = 'not installed';
if (opt['no-nginx']) nginxNote = 'left out (--no-nginx)';
else if (installed('nginx', ['-v'])) {
  const nginx = await startNginx();
  for (const size of Object.keys(SIZES)) {
    await get(nginx.ports.http, `/${size}`, nginx.host); // the miss that fills the cache
    await eventually(() => nginx.check(size));
  }
  // The worker answered: it exists now (the master listens before it forks it).
  nginx.pids.push(...childPids(nginx.pids[0]));
  stray.push(...nginx.pids);
  servers.push(nginx);
  nginxNote = 'ran';
}

/** JSON keys: camelCase of the parts, empty ones left out (`hit`, `1k`, `rps` → hit1kRps). */
const camel = (...parts) =>
  parts
    .filter(Boolean)
    .map((p, i) => (i === 0 ? p : p[0].toUpperCase() + p.slice(1)))
    .join('');

/** One case per scheme, size and server that listens on that scheme. */
const groups = [];
for (const [scheme, prefix] of Object.entries(SCHEMES)) {
  for (const size of Object.keys(SIZES)) {
    const cases = servers
      .filter((s) => s.ports[scheme] !== undefined)
      .map((s) => ({
        server: s,
        scheme,
        size,
        id: `${s.name} ${size}${prefix ? ` ${scheme}` : ''}`,
        jsonKey: (field) => camel(prefix, s.key, size, field),
        url: `${scheme}://127.0.0.1:${s.ports[scheme]}/${size}`,
      }));
    if (cases.length > 0) groups.push({ scheme, prefix, size, cases });
  }
}

const run = (c, seconds) =>
  generate(c.url, c.server.host, seconds, { server: c.server.pids }).then((r) => {
    if (r.non2xx > 0) throw new Error(`${c.id}: ${r.non2xx} non-2xx answers`);
    return r;
  });

const load0 = os.loadavg();
const t0 = Date.now();
for (const g of groups) for (const c of g.cases) await run(c, WARMUP);

const quietOf = (r) => {
  if (!r.cpu) return { quiet: true, steal: null, others: null };
  const cpus = PIN ? [SERVER_CPU, GENERATOR_CPU] : Object.keys(r.cpu.cpus);
  const steal = Math.max(...cpus.map((c) => r.cpu.cpus[c]?.stealPct ?? 0));
  const others = r.cpu.othersPct;
  return { quiet: steal < QUIET_STEAL_PCT && others < QUIET_OTHERS_PCT, steal, others };
};

const f = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const header =
  'round | case                   |     req/s |   MB/s | p50 ms | p90 ms | p99 ms | p99.9 ms | errors | srv CPU % | srv µs/req | gen CPU % | CPU0 busy (irq) % | CPU1 busy (irq) % | steal % | others % | quiet';
console.log(
  `HTTP hit path (${GENERATOR} generator${GENERATOR === 'wrk' ? `, ${THREADS} thread` : ''}, ${CONNECTIONS} keep-alive connections) — ${os.cpus().length} CPUs, ${PIN ? `servers on CPU ${SERVER_CPU}, generator on CPU ${GENERATOR_CPU}` : 'not pinned'}; servers ${servers.map((x) => x.name).join(', ')} (node-*: coral-node start; bare-proxy: CoralProxy alone); nginx ${nginxNote}; ${SECONDS} s per case, ${WARMUP} s warm-up; node ${process.version}; loadavg before ${load0.map((x) => x.toFixed(2)).join(' ')}`,
);
console.log(header);
console.log(header.replace(/[^|]/g, '-'));

/** One table line: each cell padded to its column of `header` (text left, numbers right). */
const table = (header, cells) => {
  const cols = header.split('|');
  const widths = cols.map((h, i) => h.length - (i === 0 || i === cols.length - 1 ? 1 : 2));
  return cells
    .map((c, i) => (/^[-\d.]/.test(c) ? c.padStart(widths[i]) : c.padEnd(widths[i])))
    .join(' | ')
    .trimEnd();
};
const busy = (r, cpu) => {
  const c = r.cpu?.cpus[cpu];
  return c ? `${f(c.busyPct, 1)} (${f(c.irqPct, 1)})` : 'n/a';
};
/** The server process's CPU time per request (µs), from its CPU share and the request rate. */
const usPerReq = (r) => (r.cpu ? ((r.cpu.processes.server / 100) * 1e6) / r.rps : NaN);
/**
 * Saturated: the server's processes were busy ≥ SATURATED_PCT of the run. (Their CPU time includes
 * the softirq work run in their context, which /proc/stat also counts as interrupt time.)
 */
const saturated = (r) => !r.cpu || r.cpu.processes.server >= SATURATED_PCT;

/**
 * The pairs whose ratio the bench reports in each group, a ÷ b by server key: each Coral server
 * (coral, site, bare) ÷ plain and ÷ nginx, and site ÷ coral. `name`: the JSON key's stem.
 */
const PAIRS = [
  ...['coral', 'site', 'bare'].flatMap((a) => [
    [a, 'plain'],
    [a, 'nginx'],
  ]),
  ['site', 'coral'],
  ['coral', 'coralNolog'],
];
const pairs = groups.flatMap((g) => {
  const of = (key) => g.cases.find((c) => c.server.key === key)?.id;
  return PAIRS.filter(([a, b]) => of(a) && of(b)).map(([a, b]) => ({
    g,
    a: of(a),
    b: of(b),
    name: camel(a, b === 'plain' ? '' : b),
  }));
});

const results = []; // { round, c, r, quiet, steal, others }
const rounds = [];
const rowOf = (round, id) => round.rows.find((x) => x.c.id === id);
/** Rounds in which both cases of a pair were quiet. */
const quietFor = (a, b) => rounds.filter((rd) => rowOf(rd, a).quiet && rowOf(rd, b).quiet);
for (let round = 1; round <= MAX_ROUNDS; round++) {
  const rows = [];
  for (const g of groups) {
    const n = g.cases.length;
    for (let i = 0; i < n; i++) {
      const c = g.cases[(i + round - 1) % n]; // the order rotates each round
      const r = await run(c, SECONDS);
      const q = quietOf(r);
      const row = { round, c, r, ...q };
      rows.push(row);
      results.push(row);
      console.log(
        table(header, [
          String(round),
          c.id,
          f(r.rps),
          f(r.bytes / r.durationS / 1e6),
          f(r.p50Ms, 3),
          f(r.p90Ms, 3),
          f(r.p99Ms, 3),
          f(r.p999Ms, 3),
          String(r.errors),
          `${f(r.cpu?.processes.server, 1)}${saturated(r) ? ' ' : '!'}`,
          f(usPerReq(r), 1),
          f(r.cpu?.processes.generator, 1),
          busy(r, 0),
          busy(r, 1),
          f(q.steal, 1),
          f(q.others, 1),
          q.quiet ? 'yes' : 'NO',
        ]),
      );
    }
  }
  // Still hits? (A case that measured misses or errors would be meaningless.)
  for (const s of servers) for (const size of Object.keys(SIZES)) await s.check(size);
  rounds.push({ round, rows });
  if (round >= QUIET_ROUNDS && pairs.every((p) => quietFor(p.a, p.b).length >= QUIET_ROUNDS)) break;
}
const wallS = (Date.now() - t0) / 1000;

// ---------------------------------------------------------------------------------------------
// Summary. A case's figures: the median over its quiet runs (over all its runs when none was
// quiet). A ratio: taken within each round, the median over the rounds where both cases were
// quiet (over all rounds when there were none).

const stat = (id, pick) => {
  const all = results.filter((x) => x.c.id === id);
  const quiet = all.filter((x) => x.quiet);
  return median((quiet.length > 0 ? quiet : all).map(pick));
};
/**
 * A ratio a ÷ b: the median of the within-round ratios over the rounds where both runs were quiet;
 * with no such round, the ratio of the two cases' quiet medians (each quiet, at different times);
 * with a case never quiet, the median of the within-round ratios over all rounds.
 */
const ratioOf = (a, b, pick) => {
  const q = quietFor(a, b);
  const within = (rs) => rs.map((rd) => pick(rowOf(rd, a)) / pick(rowOf(rd, b)));
  const all = within(rounds);
  if (q.length > 0) return { value: median(within(q)), quiet: q.length, basis: 'quiet pairs', all };
  const quietA = results.some((x) => x.c.id === a && x.quiet);
  const quietB = results.some((x) => x.c.id === b && x.quiet);
  if (quietA && quietB)
    return { value: stat(a, pick) / stat(b, pick), quiet: 0, basis: 'quiet medians', all };
  return { value: median(all), quiet: 0, basis: 'all rounds (noisy)', all };
};
const rps = (x) => x.r.rps;
const p99 = (x) => x.r.p99Ms;
/** Requests per second of server CPU: what the server would do saturated, whatever the generator. */
const perCpu = (x) => 1 / usPerReq(x.r);

console.log(
  `\n${rounds.length} rounds; a run is quiet when steal < ${QUIET_STEAL_PCT} % on the CPUs used and all other processes < ${QUIET_OTHERS_PCT} % of a core. A case: median over its quiet runs (n), over all its runs when n is 0. A ratio: median over the rounds where both runs were quiet (n), else the ratio of the quiet medians (n = 0), else over all rounds (noisy: see the JSON's *Basis):`,
);
const sumHeader =
  'case                   |     req/s | p50 ms | p99 ms | srv CPU % | srv µs/req | quiet n | ÷ plain req/s (n) | ÷ plain p99 | ÷ plain req/CPU-s | ÷ nginx req/s (n) | ÷ nginx req/CPU-s | ÷ node-coral req/s (n) | ÷ node-coral req/CPU-s';
console.log(sumHeader);
console.log(sumHeader.replace(/[^|]/g, '-'));
const json = {
  bench: 'http',
  generator: GENERATOR,
  pinned: PIN,
  connections: CONNECTIONS,
  threads: GENERATOR === 'wrk' ? THREADS : undefined,
  secondsPerCase: SECONDS,
  nginx: nginxNote === 'ran',
};
for (const g of groups) {
  for (const c of g.cases) {
    const cell = (other, pick, withN = true) => {
      const p = pairs.find((x) => x.a === c.id && x.b === other?.id);
      if (!p) return 'n/a';
      const r = ratioOf(p.a, p.b, pick);
      return withN ? `${f(r.value, 3)} (${r.quiet})` : f(r.value, 3);
    };
    const plain = g.cases.find((x) => x.server.key === 'plain');
    const nginx = g.cases.find((x) => x.server.key === 'nginx');
    const coral = g.cases.find((x) => x.server.key === 'coral');
    const quietN = results.filter((x) => x.c.id === c.id && x.quiet).length;
    console.log(
      table(sumHeader, [
        c.id,
        f(stat(c.id, rps)),
        f(
          stat(c.id, (x) => x.r.p50Ms),
          3,
        ),
        f(stat(c.id, p99), 3),
        f(
          stat(c.id, (x) => x.r.cpu?.processes.server ?? NaN),
          1,
        ),
        f(
          stat(c.id, (x) => usPerReq(x.r)),
          1,
        ),
        String(quietN),
        cell(plain, rps),
        cell(plain, p99, false),
        cell(plain, perCpu, false),
        cell(nginx, rps),
        cell(nginx, perCpu, false),
        cell(coral, rps),
        cell(coral, perCpu, false),
      ]),
    );
    json[c.jsonKey('rps')] = Math.round(stat(c.id, rps));
    json[c.jsonKey('p99Ms')] = Number(f(stat(c.id, p99), 3));
    json[c.jsonKey('serverUsPerReq')] = Number(
      f(
        stat(c.id, (x) => usPerReq(x.r)),
        1,
      ),
    );
    json[c.jsonKey('serverCpuPct')] = Number(
      f(
        stat(c.id, (x) => x.r.cpu?.processes.server ?? NaN),
        1,
      ),
    );
  }
}
for (const p of pairs) {
  const k = (field) => camel(p.g.prefix, p.name, field) + p.g.size;
  const name = 'ratio';
  const r = ratioOf(p.a, p.b, rps);
  json[k(name)] = Number(f(r.value, 3));
  json[k('p99Ratio')] = Number(f(ratioOf(p.a, p.b, p99).value, 3));
  json[k('cpuRatio')] = Number(f(ratioOf(p.a, p.b, perCpu).value, 3));
  json[`${k(name)}QuietRounds`] = r.quiet;
  json[`${k(name)}Basis`] = r.basis;
  // Was the server the bottleneck? (At 100 KiB one wrk thread on one core may not keep up.)
  const both = rounds.filter((rd) => saturated(rowOf(rd, p.a).r) && saturated(rowOf(rd, p.b).r));
  json[`${k(name)}SaturatedRounds`] = both.length;
  json[`${k(name)}Rounds`] = r.all.map((x) => Number(f(x, 3)));
}
// The targets of issues 26 and 29, per group: site ÷ coral, each node ÷ nginx, and the access
// log's cost (coral ÷ coral-nolog), req/s.
const TARGETS = [
  ['siteCoral', 0.95],
  ['coralNginx', 1.0],
  ['siteNginx', 1.0],
  ['coralCoralNolog', 0.9],
];
for (const g of groups) {
  const parts = [];
  for (const [name, min] of TARGETS) {
    const p = pairs.find((x) => x.g === g && x.name === name);
    if (!p) continue;
    const v = ratioOf(p.a, p.b, rps).value;
    parts.push(`${name} ${f(v, 3)} ${v >= min ? 'met' : 'NOT met'} (≥ ${min})`);
  }
  if (parts.length > 0)
    console.log(`targets ${g.size}${g.prefix ? ` ${g.scheme}` : ''}: ${parts.join('; ')}`);
}
// Did the nodes' hits take the fast path? (From their /metrics, over the whole run.)
for (const node of nodes) {
  const { fast, hits, share } = await fastHitShare(node);
  console.log(
    `${node.name}: ${fast} of ${hits} hits answered on the fast path (${f(100 * share, 2)} %)`,
  );
  json[`${node.key}FastHitShare`] = Number(f(share, 4));
}
const unsaturated = results.filter((x) => !saturated(x.r)).length;
if (unsaturated > 0)
  console.log(
    `! ${unsaturated} of ${results.length} runs had the server's CPU under ${SATURATED_PCT} %: not saturated (generator-bound or starved by other processes)`,
  );
console.log(
  `origin requests: ${originRequests} (the fills only); wall ${f(wallS, 1)} s; loadavg after ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
Object.assign(json, {
  rounds: rounds.length,
  quietRuns: results.filter((x) => x.quiet).length,
  runs: results.length,
  unsaturatedRuns: unsaturated,
  stealPctMax: Number(f(Math.max(...results.map((x) => x.steal ?? 0)), 1)),
  othersPctMedian: Number(f(median(results.map((x) => x.others ?? 0)), 1)),
  originRequests,
  wallSeconds: Number(f(wallS, 1)),
});
// Stop the servers and wait for them (nginx's master reaps its worker before it exits).
await Promise.all(
  [...children].map(async (c) => {
    const exited = once(c, 'exit');
    children.delete(c);
    c.kill(c.spawnargs.includes('nginx') ? 'SIGTERM' : 'SIGKILL');
    await exited;
  }),
);
stray.length = 0;
origin.close();
console.log(JSON.stringify(json));
process.exit(0);
