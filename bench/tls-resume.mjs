#!/usr/bin/env node
// npm run bench:tls-resume — new TLS connections per second, full handshakes against resumed ones
// (session tickets), Coral against nginx, in one run (issue 28's handshake row).
//
// Servers under test, each a process of its own, all pinned to CPU 0 (only one is loaded at a
// time):
// - coral-a, coral-b: two `coral-node start` processes (the built packages/node/dist/cli.js) of one
//   fleet — the same `fleet.keys`, so the same session-ticket keys (trust/ticket-keys.ts) — with
//   one certificate from a test CA made here (ECDSA P-256) as `tls.cert`/`tls.key`, every other
//   service on free loopback ports, log level warn.
// - nginx-a, nginx-b: two nginx processes (one worker each) with the same certificate and the
//   same `ssl_session_ticket_key` file (48 random bytes: AES-128, as Node's), TLS 1.2 and 1.3,
//   no session cache (`ssl_session_cache` left at its default: tickets only, as Coral), a
//   `return 204` site. Skipped when nginx is not installed (--no-nginx).
//
// The generator is this script again (`--generator`), pinned to CPU 1: `--concurrency` loops, each
// opening a TLS connection to the server (tls.connect, SNI www-example-com.nyud.net, ALPN
// http/1.1, no certificate verification: the generator's CPU goes to handshakes, not to checking
// a test chain), counting it when the handshake completes, then destroying it; no HTTP request is
// sent. Modes:
// - full: no session offered — a full handshake every time (ECDHE + the server's ECDSA signature);
// - resumed: the session of one earlier visit to the same server offered every time;
// - member: the session got from the *other* member of the pair (coral-a's ticket offered to
//   coral-b, nginx-a's to nginx-b): resumption on another member of the fleet counts as resumed.
// Every resumed or member run must resume ≥ 99 % of its handshakes (isSessionReused()), else the
// row is marked `!` and the bench exits 1. TLS 1.3 (resumption with a fresh ECDHE: psk_dhe_ke) and
// TLS 1.2 (resumption without one) are separate rows.
//
// Each row reports handshakes per second, the server's CPU (utime + stime of its processes from
// /proc/<pid>/stat, % of one core, over the run's middle), its CPU per handshake (µs), the
// generator's CPU and that of every other process on the machine (other helpers' work: the run
// was not quiet when it is more than a few %). A server under 90 % of its core is flagged `~`:
// the generator (one Node process on one core) was the limit, and the server's CPU per handshake
// is the figure to compare. Rows repeat in
// --rounds rounds (the server order rotates); a row's figures are the medians over rounds.
// Ratios: coral ÷ nginx handshakes per server CPU-second (…CpuRatio) and per second (…Ratio), and
// resumed ÷ full per server (…ResumeSpeedup).
//
// Options: --seconds N (per run, default 3), --rounds N (default 3), --concurrency N (default 16),
// --no-nginx, --no-pin, --tls12-only, --tls13-only.
//
// Prints a table per round, a summary, and ONE JSON line at the end.
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
import { randomBytes } from 'node:crypto';
import { connect as netConnect, createServer } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values: opt } = parseArgs({
  options: {
    seconds: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '16' },
    'no-nginx': { type: 'boolean', default: false },
    'no-pin': { type: 'boolean', default: false },
    'tls12-only': { type: 'boolean', default: false },
    'tls13-only': { type: 'boolean', default: false },
    // Internal: run as the load generator.
    generator: { type: 'string' },
  },
});

const SERVERNAME = 'www-example-com.nyud.net';

// ---------------------------------------------------------------------------------------------
// Generator mode: one run against one server, its result as one JSON line on stdout.

/** One TLS connection; resolves with whether it resumed and the session it got (if any). */
function handshake(port, version, session, wantSession = false) {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({
      host: '127.0.0.1',
      port,
      servername: SERVERNAME,
      rejectUnauthorized: false,
      ALPNProtocols: ['http/1.1'],
      minVersion: version,
      maxVersion: version,
      ...(session ? { session } : {}),
    });
    let got;
    const done = () => {
      const reused = socket.isSessionReused();
      socket.destroy();
      resolve({ reused, session: got });
    };
    socket.on('session', (s) => {
      got ??= s;
      if (wantSession) done();
    });
    socket.once('secureConnect', () => {
      if (!wantSession) done();
    });
    socket.on('error', (err) => {
      socket.destroy();
      reject(err);
    });
  });
}

async function generate(spec) {
  const { port, sessionPort, mode, version, seconds, concurrency } = spec;
  let session;
  if (mode !== 'full') {
    ({ session } = await handshake(sessionPort, version, undefined, true));
    if (!session) throw new Error(`no session from port ${sessionPort}`);
  }
  let count = 0;
  let reused = 0;
  let errors = 0;
  const until = performance.now() + seconds * 1000;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        try {
          const r = await handshake(port, version, session);
          count++;
          if (r.reused) reused++;
        } catch {
          errors++;
        }
      }
    }),
  );
  const wallS = (performance.now() - t0) / 1000;
  process.stdout.write(`${JSON.stringify({ count, reused, errors, wallS })}\n`);
}

if (opt.generator) {
  await generate(JSON.parse(opt.generator));
  process.exit(0);
}

// ---------------------------------------------------------------------------------------------
// Orchestrator.

const { NODE_RUNTIME_ENV } = await import('@coral/node');
const { issueCert, makeTestCa } = await import('@coral/testkit');
const { canPin, childPids, cpuWindow, installed, pinned } = await import('./lib/system.mjs');

const SECONDS = Number(opt.seconds);
const ROUNDS = Number(opt.rounds);
const CONCURRENCY = Number(opt.concurrency);
const PIN = !opt['no-pin'] && canPin();
const SERVER_CPU = PIN ? 0 : undefined;
const GENERATOR_CPU = PIN ? 1 : undefined;
const NGINX = !opt['no-nginx'] && installed('nginx', ['-v']);
const VERSIONS = opt['tls12-only']
  ? ['TLSv1.2']
  : opt['tls13-only']
    ? ['TLSv1.3']
    : ['TLSv1.3', 'TLSv1.2'];
const MODES = ['full', 'resumed', 'member'];
const SATURATED_PCT = 90;
const CORAL_CLI = fileURLToPath(new URL('../packages/node/dist/cli.js', import.meta.url));
const SELF = fileURLToPath(import.meta.url);

const tmp = mkdtempSync(join(os.tmpdir(), 'coral-bench-tls-resume-'));
const children = new Set();
const cleanup = () => {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
  rmSync(tmp, { recursive: true, force: true });
};
process.on('exit', cleanup);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    cleanup();
    process.exit(130);
  });
}

const ca = await makeTestCa({ name: 'Coral bench CA' });
const leaf = await issueCert(ca, { dnsNames: ['*.nyud.net', 'nyud.net'] });
const certFile = join(tmp, 'cert.pem');
const keyFile = join(tmp, 'key.pem');
writeFileSync(certFile, leaf.chain);
writeFileSync(keyFile, leaf.key, { mode: 0o600 });
const FLEET_KEY = randomBytes(32).toString('hex');

function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function waitForPort(port, deadlineMs, exited) {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const s = netConnect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (exited()) throw new Error(`the server for port ${port} exited`);
    if (Date.now() > until) throw new Error(`nothing listens on ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function tailOf(file, lines = 20) {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

function track(name, child, logFile) {
  children.add(child);
  let gone = false;
  child.once('exit', (code) => {
    gone = true;
    if (children.has(child)) console.error(`${name} exited (${code}):\n${tailOf(logFile)}`);
  });
  return () => gone;
}

/** A `coral-node start` process of the bench's fleet; resolves once its TLS port answers. */
async function startCoral(name) {
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
    fleet: { keys: [FLEET_KEY] },
    proxy: { port, tlsPort },
    dsht: { port: dshtPort },
    dns: { port: dnsPort },
    admin: { port: adminPort },
    tls: { cert: certFile, key: keyFile },
    log: { level: 'warn' },
  };
  const configFile = join(dir, 'coral.json');
  writeFileSync(configFile, JSON.stringify(config, null, 2));
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
  const exited = track(name, child, logFile);
  await waitForPort(tlsPort, 60_000, exited);
  await waitForPort(adminPort, 60_000, exited);
  return { name, kind: 'coral', port: tlsPort, pids: () => [child.pid, ...childPids(child.pid)] };
}

const ticketKeyFile = join(tmp, 'nginx-ticket.key');
writeFileSync(ticketKeyFile, randomBytes(48), { mode: 0o600 });

/** An nginx process of the bench's pair (the same ticket key file); resolves once it listens. */
async function startNginx(name) {
  const dir = join(tmp, name);
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const conf = `
daemon off;
master_process on;${process.getuid?.() === 0 ? '\nuser root;' : ''}
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy_temp;
  fastcgi_temp_path ${dir}/fastcgi_temp;
  uwsgi_temp_path ${dir}/uwsgi_temp;
  scgi_temp_path ${dir}/scgi_temp;
  server {
    listen 127.0.0.1:${port} ssl;
    ssl_certificate ${certFile};
    ssl_certificate_key ${keyFile};
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_tickets on;
    ssl_session_ticket_key ${ticketKeyFile};
    location / { return 204; }
  }
}
`;
  writeFileSync(join(dir, 'nginx.conf'), conf);
  const logFile = join(dir, 'error.log');
  const [cmd, args] = pinned(SERVER_CPU, 'nginx', [
    '-p',
    dir,
    '-c',
    join(dir, 'nginx.conf'),
    '-e',
    logFile,
  ]);
  const child = spawn(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  const exited = track(name, child, logFile);
  await waitForPort(port, 10_000, exited);
  return { name, kind: 'nginx', port, pids: () => [child.pid, ...childPids(child.pid)] };
}

/** One generator run; its result and the CPU of the server and of the generator over its middle. */
async function measure(server, sessionServer, mode, version) {
  const spec = {
    port: server.port,
    sessionPort: sessionServer.port,
    mode,
    version,
    seconds: SECONDS,
    concurrency: CONCURRENCY,
  };
  const [cmd, args] = pinned(GENERATOR_CPU, process.execPath, [
    SELF,
    '--generator',
    JSON.stringify(spec),
  ]);
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  // The CPU window: the run's middle (0.5 s in, 0.5 s before the end, for runs of 2 s or more).
  const edge = SECONDS >= 2 ? 500 : 0;
  await new Promise((r) => setTimeout(r, edge + 300)); // + the generator's start-up
  const window = cpuWindow();
  await new Promise((r) => setTimeout(r, SECONDS * 1000 - 2 * edge));
  const cpu = window.end({ server: server.pids(), generator: child.pid });
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`generator exited ${code}`);
  const r = JSON.parse(out.trim().split('\n').pop());
  const rate = r.count / r.wallS;
  const serverPct = cpu?.processes.server ?? NaN;
  return {
    rate,
    reusedShare: r.count > 0 ? r.reused / r.count : 0,
    errors: r.errors,
    serverPct,
    generatorPct: cpu?.processes.generator ?? NaN,
    othersPct: cpu?.othersPct ?? NaN,
    stealPct: Math.max(cpu?.cpus[0]?.stealPct ?? 0, cpu?.cpus[1]?.stealPct ?? 0),
    usPerHandshake: ((serverPct / 100) * 1e6) / rate,
  };
}

const servers = [await startCoral('coral-a'), await startCoral('coral-b')];
if (NGINX) servers.push(await startNginx('nginx-a'), await startNginx('nginx-b'));
const pairs = [[servers[0], servers[1]], ...(NGINX ? [[servers[2], servers[3]]] : [])];

const f = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const median = (xs) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

console.log(
  `bench:tls-resume — ${SECONDS} s per run, ${ROUNDS} rounds, ${CONCURRENCY} concurrent handshakes, ` +
    `${PIN ? 'servers on CPU 0, generator on CPU 1' : 'unpinned'}, Node ${process.version}, ` +
    `${NGINX ? 'nginx' : 'no nginx'}; ${os.cpus().length} CPUs, load ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
);
const results = new Map(); // `${kind}|${version}|${mode}` → runs
let failed = false;
for (let round = 1; round <= ROUNDS; round++) {
  console.log(`\nround ${round}`);
  console.log(
    'server   version  mode      handshakes/s  resumed  server CPU %  µs/handshake  generator CPU %  others CPU %  errors',
  );
  const order = round % 2 ? pairs : [...pairs].reverse();
  for (const version of VERSIONS) {
    for (const [a, b] of order) {
      for (const mode of MODES) {
        const server = mode === 'member' ? b : a;
        const r = await measure(server, a, mode, version);
        const key = `${a.kind}|${version}|${mode}`;
        results.set(key, [...(results.get(key) ?? []), r]);
        const bad = mode !== 'full' && r.reusedShare < 0.99;
        if (bad) failed = true;
        const mark = `${bad ? '!' : ''}${r.serverPct < SATURATED_PCT ? '~' : ''}`;
        console.log(
          `${server.name.padEnd(8)} ${version.padEnd(8)} ${mode.padEnd(8)} ${f(r.rate).padStart(13)}  ` +
            `${f(100 * r.reusedShare).padStart(6)}%  ${f(r.serverPct).padStart(12)}  ` +
            `${f(r.usPerHandshake).padStart(12)}  ${f(r.generatorPct).padStart(15)}  ${f(r.othersPct).padStart(12)}  ${String(r.errors).padStart(6)} ${mark}`,
        );
      }
    }
  }
}

const json = {
  bench: 'tls-resume',
  seconds: SECONDS,
  rounds: ROUNDS,
  concurrency: CONCURRENCY,
  pinned: PIN,
  nginx: NGINX,
};
const camel = (...parts) =>
  parts.map((p, i) => (i === 0 ? p : p[0].toUpperCase() + p.slice(1))).join('');
console.log('\nsummary (medians over rounds)');
for (const version of VERSIONS) {
  const v = version === 'TLSv1.3' ? 'tls13' : 'tls12';
  for (const kind of ['coral', ...(NGINX ? ['nginx'] : [])]) {
    for (const mode of MODES) {
      const runs = results.get(`${kind}|${version}|${mode}`) ?? [];
      const rate = median(runs.map((r) => r.rate));
      const us = median(runs.map((r) => r.usPerHandshake));
      json[camel(kind, v, mode, 'rate')] = Math.round(rate);
      json[camel(kind, v, mode, 'usPerHandshake')] = Number(f(us, 1));
      json[camel(kind, v, mode, 'reusedShare')] = Number(
        f(median(runs.map((r) => r.reusedShare)), 3),
      );
      console.log(
        `${kind.padEnd(6)} ${version} ${mode.padEnd(8)} ${f(rate).padStart(7)} handshakes/s, ${f(us).padStart(5)} µs server CPU each`,
      );
    }
    const full = json[camel(kind, v, 'full', 'usPerHandshake')];
    for (const mode of ['resumed', 'member']) {
      json[camel(kind, v, mode, 'resumeSpeedup')] = Number(
        f(full / json[camel(kind, v, mode, 'usPerHandshake')], 2),
      );
    }
  }
  if (NGINX) {
    for (const mode of MODES) {
      const cpuRatio =
        json[camel('nginx', v, mode, 'usPerHandshake')] /
        json[camel('coral', v, mode, 'usPerHandshake')];
      const ratio = json[camel('coral', v, mode, 'rate')] / json[camel('nginx', v, mode, 'rate')];
      json[camel('coralNginx', v, mode, 'cpuRatio')] = Number(f(cpuRatio, 2));
      json[camel('coralNginx', v, mode, 'ratio')] = Number(f(ratio, 2));
      console.log(
        `coral ÷ nginx ${version} ${mode.padEnd(8)} per server CPU-second ${f(cpuRatio, 2)}, per second ${f(ratio, 2)}`,
      );
    }
  }
}
const all = [...results.values()].flat();
json.othersPctMedian = Number(f(median(all.map((r) => r.othersPct)), 1));
json.stealPctMax = Number(f(Math.max(...all.map((r) => r.stealPct)), 1));
json.ok = !failed;
if (failed) console.log('\n! a resumed or member run resumed under 99 % of its handshakes');
console.log(JSON.stringify(json));
cleanup();
process.exit(failed ? 1 : 0);
