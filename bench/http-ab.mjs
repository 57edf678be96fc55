#!/usr/bin/env node
// Ad-hoc A/B of Node servers on the 1 KiB hit (diagnosis, not a bench of record): variants of
// bench/http-server.mjs started with different environments, wrk against each in rotating order.
// Usage: node bench/http-ab.mjs [--rounds N] [--seconds S] [--size 1k] [--variants a,b,...]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { NODE_RUNTIME_ENV } from '@coral/node';
import { bodyFor } from './lib/bodies.mjs';
import { cpuWindow, median, nextMessage, pinned } from './lib/system.mjs';

const { values: opt } = parseArgs({
  options: {
    rounds: { type: 'string', default: '8' },
    seconds: { type: 'string', default: '3' },
    size: { type: 'string', default: '1k' },
    variants: { type: 'string', default: 'plain,plain-rt,proxy,proxy-nort' },
    'node-flags': { type: 'string', default: '' },
    hold: { type: 'string', default: '0' },
  },
});
const SIZES = { '1k': 1024, '100k': 100 * 1024 };
const size = opt.size;
const tmp = mkdtempSync(join(os.tmpdir(), 'coral-ab-'));
const children = new Set();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(tmp, { recursive: true, force: true });
});

const body = bodyFor(SIZES[size]);
const origin = createServer((req, res) => {
  res.writeHead(200, {
    'content-type': 'application/octet-stream',
    'content-length': String(body.length),
    'cache-control': 'public, max-age=3600',
    'last-modified': 'Mon, 01 Dec 2025 00:00:00 GMT',
    etag: `"${size}-v1"`,
  });
  res.end(body);
});
await new Promise((r) => origin.listen(0, '127.0.0.1', r));
const originPort = origin.address().port;
const PROXY_HOST = `origin.test.${originPort}.nyud.net`;

function get(port, host) {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: `/${size}`, headers: { host } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res));
    });
    req.on('error', reject);
    req.end();
  });
}

async function start(config, runtimeEnv) {
  const flags = opt['node-flags'] ? opt['node-flags'].split(' ') : [];
  const [cmd, args] = pinned(0, process.execPath, [
    ...flags,
    new URL('./http-server.mjs', import.meta.url).pathname,
  ]);
  const env = runtimeEnv ? { ...process.env, ...NODE_RUNTIME_ENV } : process.env;
  const child = spawn(cmd, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env });
  children.add(child);
  child.send(config);
  const { ports } = await nextMessage(child, config.role);
  return { pid: child.pid, port: ports.http };
}

const servers = {};
const want = opt.variants.split(',');
let headers;
for (const v of want.filter((v) => v.startsWith('proxy'))) {
  const s = await start({ role: 'proxy', originPort, dataDir: join(tmp, v) }, !v.endsWith('-nort'));
  await get(s.port, PROXY_HOST);
  for (let i = 0; i < 100; i++) {
    const res = await get(s.port, PROXY_HOST);
    if (/; hit/.test(String(res.headers['cache-status']))) {
      headers ??= res.rawHeaders.filter((_, j) => {
        const n = res.rawHeaders[j - (j % 2)].toLowerCase();
        return n !== 'connection' && n !== 'keep-alive';
      });
      break;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  servers[v] = { ...s, host: PROXY_HOST };
}
for (const v of want.filter((v) => v.startsWith('plain'))) {
  const s = await start(
    { role: 'plain', sizes: { [size]: SIZES[size] }, headers: { [size]: headers } },
    v.endsWith('-rt'),
  );
  servers[v] = { ...s, host: 'plain.test' };
}

const script = join(tmp, 'r.lua');
writeFileSync(
  script,
  `done = function(s, l) io.write(string.format('JSON {"requests":%d,"durationS":%f,"p99Ms":%f}\\n', s.requests, s.duration / 1e6, l:percentile(99) / 1e3)) end\n`,
);
async function run(s, seconds) {
  const [cmd, args] = pinned(1, 'wrk', [
    '-t1',
    '-c64',
    `-d${seconds}s`,
    '-s',
    script,
    '-H',
    `Host: ${s.host}`,
    `http://127.0.0.1:${s.port}/${size}`,
  ]);
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const exited = new Promise((r) => child.once('exit', r));
  await new Promise((r) => setTimeout(r, 500));
  const w = cpuWindow();
  await new Promise((r) => setTimeout(r, seconds * 1000 - 1000));
  const cpu = w.end({ server: s.pid });
  await exited;
  const r = JSON.parse(
    out
      .split('\n')
      .find((l) => l.startsWith('JSON '))
      .slice(5),
  );
  const rps = r.requests / r.durationS;
  return {
    rps,
    p99: r.p99Ms,
    us: ((cpu.processes.server / 100) * 1e6) / rps,
    others: cpu.othersPct,
  };
}

const names = Object.keys(servers);
if (Number(opt.hold) > 0) {
  for (const n of names)
    console.log(`${n} pid ${servers[n].pid} port ${servers[n].port} host ${servers[n].host}`);
  await new Promise((r) => setTimeout(r, Number(opt.hold) * 1000));
}
for (const n of names) await run(servers[n], 2);
const results = Object.fromEntries(names.map((n) => [n, []]));
const R = Number(opt.rounds);
for (let round = 0; round < R; round++) {
  const order = names.map((_, i) => names[(i + round) % names.length]);
  const line = [];
  for (const n of order) {
    const r = await run(servers[n], Number(opt.seconds));
    results[n].push(r);
    line.push(
      `${n} ${r.rps.toFixed(0)} ${r.us.toFixed(1)}µs p99 ${r.p99.toFixed(2)} o${r.others.toFixed(0)}`,
    );
  }
  console.log(`round ${round + 1}: ${line.join(' | ')}`);
}
const ref = names[0];
for (const n of names) {
  const ratios = results[n].map((r, i) => r.rps / results[ref][i].rps);
  const usr = results[n].map((r, i) => results[ref][i].us / r.us);
  console.log(
    `${n.padEnd(12)} rps ${median(results[n].map((r) => r.rps)).toFixed(0)} µs ${median(results[n].map((r) => r.us)).toFixed(1)} p99 ${median(results[n].map((r) => r.p99)).toFixed(2)} ÷${ref} rps ${median(ratios).toFixed(3)} [${ratios.map((x) => x.toFixed(2)).join(' ')}] cpu ${median(usr).toFixed(3)}`,
  );
}
console.log(
  `loadavg ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
// Let the servers exit by themselves (a --cpu-prof profile is written at exit).
for (const c of children) c.disconnect();
await new Promise((r) => setTimeout(r, 3000));
process.exit(0);
