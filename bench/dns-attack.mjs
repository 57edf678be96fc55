// npm run bench:dns-attack — how long an honest client waits for a DNS answer over TCP while
// strangers hold idle TCP connections to the server (issue 10: "300 idle DNS TCP connections from
// one source while another source is answered over TCP within 100 ms").
//
// The server is bench/dns-server.mjs (a DnsServer with 20 proxies and the default TCP limits: 256
// connections, 16 per source, 10 s idle timeout) in a child process of its own, pinned to CPU 0
// when taskset is there; this process is the attacker and the victim, pinned to CPU 1. Phases:
//   - baseline: no attacker;
//   - one source: 300 idle connections from 127.66.1.2, opened before the victim starts;
//   - many sources: 16 idle connections from each of 40 addresses (640 > the table's 256).
// In each phase the victim (127.77.1.3) makes --queries sequential exchanges, each a new TCP
// connection, one query, its answer, close; the time is from connect() to the answer. With many
// sources, each victim connection displaces an idle attacker connection, so after every victim
// exchange the attacker opens one more (from its next source in turn): the table stays full of
// idle attacker connections. (Refused connections are not retried in a loop: that would be a
// connect flood, a different attack, bounded by the kernel's accept rate.)
// Prints a table and ends with ONE JSON line.
//
// Options: --queries N (victim exchanges per phase, default 300), --no-pin.
import net from 'node:net';
import os from 'node:os';
import { fork, spawnSync } from 'node:child_process';
import { once } from 'node:events';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const QUERIES = arg('queries', 300);
const pin =
  !process.argv.includes('--no-pin') &&
  os.cpus().length >= 2 &&
  spawnSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' }).status === 0;
const taskset = (pid, cpu) => {
  if (pin) spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
};

/** A query for www.example.com.nyud.net (A), with its TCP length prefix. */
function framedQuery(id) {
  const labels = ['www', 'example', 'com', 'nyud', 'net'];
  const parts = [Buffer.from([id >> 8, id & 255, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0])];
  for (const l of labels) parts.push(Buffer.from([l.length]), Buffer.from(l));
  parts.push(Buffer.from([0, 0, 1, 0, 1]));
  const msg = Buffer.concat(parts);
  const len = Buffer.alloc(2);
  len.writeUInt16BE(msg.length);
  return Buffer.concat([len, msg]);
}

function connect(port, from) {
  return new Promise((resolve) => {
    const sock = net.connect({ port, host: '127.0.0.1', localAddress: from });
    sock.on('error', () => {});
    sock.once('connect', () => resolve(sock));
    sock.once('close', () => resolve(undefined));
  });
}

/** One victim exchange: ms from connect() to the whole answer, or null when refused/closed. */
function exchange(port, from, id) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const sock = net.connect({ port, host: '127.0.0.1', localAddress: from });
    let buf = Buffer.alloc(0);
    let done = false;
    const finish = (v) => {
      if (done) return;
      done = true;
      sock.destroy();
      resolve(v);
    };
    sock.on('error', () => finish(null));
    sock.once('close', () => finish(null));
    sock.once('connect', () => sock.write(framedQuery(id)));
    sock.on('data', (c) => {
      buf = Buffer.concat([buf, c]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) finish(performance.now() - t0);
    });
  });
}

/** Idle attacker connections, `each` from every address of `sources`. */
class Idlers {
  constructor(port, sources, each) {
    Object.assign(this, { port, sources, each, open: new Set(), next: 0 });
  }
  async #open(list) {
    const got = await Promise.all(list.map((from) => connect(this.port, from)));
    for (const s of got) {
      if (!s) continue;
      this.open.add(s);
      s.once('close', () => this.open.delete(s));
    }
  }
  /** Open them all; resolves once the server has had time to close the ones it refuses. */
  async start() {
    await this.#open(this.sources.flatMap((from) => Array(this.each).fill(from)));
    await new Promise((r) => setTimeout(r, 200));
    return this.open.size;
  }
  /** One more idle connection, from the next source in turn. */
  refill() {
    return this.#open([this.sources[this.next++ % this.sources.length]]);
  }
  close() {
    for (const s of this.open) s.destroy();
  }
}

const pct = (sorted, p) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function phase(name, server, sources, each, refill) {
  const idlers = sources.length > 0 ? new Idlers(server.port, sources, each) : undefined;
  const before = await server.stats();
  const attackerOpen = idlers ? await idlers.start() : 0;
  const times = [];
  let failed = 0;
  for (let i = 0; i < QUERIES; i++) {
    const ms = await exchange(server.port, '127.77.1.3', i & 0xffff);
    if (ms === null) failed++;
    else times.push(ms);
    if (refill) await idlers.refill();
  }
  const after = await server.stats();
  idlers?.close();
  await new Promise((r) => setTimeout(r, 100));
  times.sort((a, b) => a - b);
  return {
    phase: name,
    attackerConnections: sources.length * each,
    attackerOpenAtStart: attackerOpen,
    victimQueries: QUERIES,
    victimFailed: failed,
    p50Ms: +(pct(times, 50) ?? NaN).toFixed(3),
    p99Ms: +(pct(times, 99) ?? NaN).toFixed(3),
    maxMs: +(times[times.length - 1] ?? NaN).toFixed(3),
    rejectedPerSource: after.tcp.rejectedPerSource - before.tcp.rejectedPerSource,
    evicted: after.tcp.evicted - before.tcp.evicted,
    rejected: after.tcp.rejected - before.tcp.rejected,
  };
}

const child = fork(new URL('./dns-server.mjs', import.meta.url), { stdio: 'inherit' });
process.once('exit', () => child.kill('SIGKILL'));
child.send({ kind: 'dns', cache: true, directory: 'memory' });
const [{ port }] = await once(child, 'message');
taskset(child.pid, 0);
taskset(process.pid, 1);
const server = {
  port,
  async stats() {
    child.send('stats');
    const [m] = await once(child, 'message');
    return m.stats;
  },
};

const rows = [];
rows.push(await phase('baseline (no attacker)', server, [], 0, false));
rows.push(await phase('300 idle from one source', server, ['127.66.1.2'], 300, false));
rows.push(
  await phase(
    '640 idle from 40 sources',
    server,
    Array.from({ length: 40 }, (_, i) => `127.66.2.${i + 1}`),
    16,
    true,
  ),
);
child.send('exit');

console.log(
  `DNS over TCP under idle-connection attacks — ${QUERIES} victim exchanges per phase (connect, query, answer), server pinned to CPU 0 and clients to CPU 1: ${pin}`,
);
console.log(
  'phase                      | attacker conns | open at start | victim failed | p50 ms | p99 ms | max ms | server closed: per-source / evicted / full',
);
console.log(
  '---------------------------+----------------+---------------+---------------+--------+--------+--------+------------------------------------',
);
for (const r of rows) {
  console.log(
    `${r.phase.padEnd(26)} | ${String(r.attackerConnections).padStart(14)} | ${String(r.attackerOpenAtStart).padStart(13)} | ${String(r.victimFailed).padStart(13)} | ${r.p50Ms.toFixed(3).padStart(6)} | ${r.p99Ms.toFixed(3).padStart(6)} | ${r.maxMs.toFixed(3).padStart(6)} | ${r.rejectedPerSource} / ${r.evicted} / ${r.rejected}`,
  );
}
const [base, one, many] = rows;
console.log(
  JSON.stringify({
    bench: 'dns-attack',
    pinned: pin,
    victimQueries: QUERIES,
    baselineP99Ms: base.p99Ms,
    oneSourceP99Ms: one.p99Ms,
    oneSourceMaxMs: one.maxMs,
    oneSourceFailed: one.victimFailed,
    manySourcesP99Ms: many.p99Ms,
    manySourcesMaxMs: many.maxMs,
    manySourcesFailed: many.victimFailed,
    rows,
  }),
);
process.exit(0);
