// bench/dns.mjs --workers (issue 26): Coral's DNS on one thread, Coral's DNS with `workers: 2`, and
// Knot DNS with 2 UDP threads, in one run, unpinned, dnsperf beside them. bench/dns.mjs hands in its
// server starter, load generator and measurement (the same ones its other rows use); this file
// adds Knot, runs the three one after the other and prints one table, the ratios and ONE JSON line.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { createSocket } from 'node:dgram';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CLK_TCK, installed, median, processTicks } from './system.mjs';

const KNOT_DIR = fileURLToPath(new URL('../knot/', import.meta.url));

/** A port free on 127.0.0.1 for both UDP and TCP (Knot listens on both). */
async function freePort() {
  for (;;) {
    const tcp = createServer();
    await new Promise((r) => tcp.listen(0, '127.0.0.1', r));
    const { port } = tcp.address();
    const udp = createSocket('udp4');
    const ok = await new Promise((r) => {
      udp.once('error', () => r(false));
      udp.bind(port, '127.0.0.1', () => r(true));
    });
    udp.close();
    await new Promise((r) => tcp.close(r));
    if (ok) return port;
  }
}

/** Does a DNS server answer on `port` yet? One A query for a name of the zone. */
function answers(port) {
  return new Promise((resolve) => {
    const s = createSocket('udp4');
    const q = Buffer.from(
      '1234010000010000000000000377777707657861' + '6d706c6503636f6d046e797564036e65740000010001',
      'hex',
    );
    const t = setTimeout(() => {
      s.close();
      resolve(false);
    }, 200);
    s.once('message', () => {
      clearTimeout(t);
      s.close();
      resolve(true);
    });
    s.send(q, port, '127.0.0.1');
  });
}

/** knotd with `udpWorkers` UDP threads on a free port, from bench/knot/ (configuration, zone). */
async function startKnot(udpWorkers, children) {
  const dir = mkdtempSync(join(os.tmpdir(), 'coral-knot-'));
  const port = await freePort();
  const conf = readFileSync(join(KNOT_DIR, 'knot.conf.in'), 'utf8')
    .replaceAll('@DIR@', dir)
    .replaceAll('@PORT@', String(port))
    .replaceAll('@UDP_WORKERS@', String(udpWorkers));
  writeFileSync(join(dir, 'knot.conf'), conf);
  copyFileSync(join(KNOT_DIR, 'nyud.net.zone'), join(dir, 'nyud.net.zone'));
  const child = spawn('knotd', ['-c', join(dir, 'knot.conf')], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  children.add(child);
  let exitCode;
  child.once('exit', (code) => (exitCode = code ?? -1));
  let up = false;
  for (let i = 0; i < 100 && !up && exitCode === undefined; i++) up = await answers(port);
  if (!up) throw new Error(`knotd did not answer on ${port} (exit code ${exitCode ?? 'none'})`);
  let ticks0;
  return {
    port,
    pid: child.pid,
    async mark() {
      ticks0 = processTicks(child.pid)?.own;
    },
    async report() {
      const t = processTicks(child.pid)?.own;
      return {
        cpuUs: t !== undefined && ticks0 !== undefined ? ((t - ticks0) / CLK_TCK) * 1e6 : null,
        gcMinor: { count: 0, totalMs: 0, maxMs: 0 },
        gcMajor: { count: 0, totalMs: 0, maxMs: 0 },
      };
    },
    async stop() {
      child.kill('SIGTERM');
      await once(child, 'exit');
      children.delete(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function runWorkersMode(o) {
  if (o.generator !== 'dnsperf') throw new Error('bench:dns --workers needs dnsperf');
  if (!installed('knotd', ['-V'])) throw new Error('bench:dns --workers needs knotd (Debian knot)');
  const isQuiet = (r) =>
    (r.steal === null || r.steal < o.quietStealPct) &&
    (r.others === null || r.others < o.quietOthersPct);
  const subjects = [
    { key: 'coral1', label: 'Coral, 1 thread', start: () => o.startCoral(1) },
    { key: 'coral2', label: 'Coral, workers: 2', start: () => o.startCoral(2) },
    { key: 'knot2', label: 'Knot, 2 UDP threads', start: () => startKnot(2, o.children) },
  ];
  const load0 = os.loadavg();
  const rows = [];
  const results = {};
  for (const s of subjects) {
    const server = await s.start();
    await o.load(server.port, 'max', 1000); // warm up: every name asked once, the JIT
    const phase = async (name, mode) => {
      const r = await o.measure(server, mode, undefined);
      const cpuUsPerAnswer =
        r.server.cpuUsPerAnswer ??
        (r.server.cpuUs != null && r.received > 0 ? r.server.cpuUs / r.received : null);
      const row = { phase: `${s.label}: ${name}`, ...r, cpuUsPerAnswer, quiet: isQuiet(r) };
      rows.push(row);
      return row;
    };
    let max;
    let best = 0;
    for (let t = 1; t <= o.maxRateAttempts && !(max && max.quiet); t++) {
      max = await phase(`max rate${t > 1 ? ` (${t})` : ''}`, 'max');
      best = Math.max(best, max.qps);
    }
    const trials = [];
    for (let t = 1; t <= o.maxTrials && trials.filter((r) => r.quiet).length < o.trials; t++) {
      trials.push(await phase(`5,000 q/s, trial ${t}`, 'rate'));
    }
    await server.stop();
    const quiet = trials.filter((r) => r.quiet);
    results[s.key] = {
      label: s.label,
      qps: Math.round(max.qps),
      maxQuiet: max.quiet,
      /** The highest of the attempts (when none was quiet, `qps` is the last one's). */
      bestQps: Math.round(best),
      serverCpuPctMax: max.serverPct === null ? null : Math.round(max.serverPct),
      generatorCpuPctMax: max.genPct === null ? null : Math.round(max.genPct),
      cpuUsPerAnswerMax: max.cpuUsPerAnswer === null ? null : Number(max.cpuUsPerAnswer.toFixed(1)),
      p99MsAt5k: quiet.length ? Number(median(quiet.map((r) => r.p99Ms)).toFixed(3)) : null,
      p50MsAt5k: quiet.length ? Number(median(quiet.map((r) => r.p50Ms)).toFixed(3)) : null,
      quietTrials: quiet.length,
      p99MsAt5kAllTrials: Number(median(trials.map((r) => r.p99Ms)).toFixed(3)),
      p99MsAt5kTrials: trials.map((r) => Number(r.p99Ms.toFixed(3))),
      lost: max.lost + trials.reduce((n, r) => n + r.lost, 0),
    };
  }

  const f = (x, d = 3) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
  console.log(
    `DNS workers mode (dnsperf, ${o.clients} sockets, ${o.directory} directory) — ${os.cpus().length} CPUs, not pinned; loadavg before ${load0.map((x) => x.toFixed(2)).join(' ')}; ${o.nNames} names, ${o.seconds}s per phase`,
  );
  console.log(
    'phase                                        |      q/s |   sent | lost | p50 ms | p99 ms | p99.9 ms | srv µs/q | srv CPU % | gen CPU % | steal % | others % | quiet',
  );
  console.log(
    '---------------------------------------------+----------+--------+------+--------+--------+----------+----------+-----------+-----------+---------+----------+------',
  );
  for (const r of rows) {
    console.log(
      `${r.phase.padEnd(45)}| ${f(r.qps, 0).padStart(8)} | ${String(r.sent).padStart(6)} | ${String(r.lost).padStart(4)} | ${f(r.p50Ms).padStart(6)} | ${f(r.p99Ms).padStart(6)} | ${f(r.p999Ms).padStart(8)} | ${f(r.cpuUsPerAnswer, 1).padStart(8)} | ${f(r.serverPct, 0).padStart(9)} | ${f(r.genPct, 0).padStart(9)} | ${f(r.steal, 1).padStart(7)} | ${f(r.others, 1).padStart(8)} | ${r.quiet ? 'yes' : 'NO'}`,
    );
  }
  const { coral1, coral2, knot2 } = results;
  const ratio = (a, b) => (a && b ? Number((a / b).toFixed(2)) : null);
  const gain = ratio(coral2.qps, coral1.qps);
  const vsKnot = ratio(coral2.qps, knot2.qps);
  const bestGain = ratio(coral2.bestQps, coral1.bestQps);
  const bestVsKnot = ratio(coral2.bestQps, knot2.bestQps);
  for (const r of [coral1, coral2, knot2]) {
    console.log(
      `${r.label}: max ${r.qps} q/s (best attempt ${r.bestQps}; ${r.maxQuiet ? 'quiet' : 'NOT quiet'}, server ${r.serverCpuPctMax} % of a core, ${r.cpuUsPerAnswerMax} µs/answer); 5,000 q/s: p99 ${f(r.p99MsAt5k)} ms over ${r.quietTrials} quiet trials (all trials: ${r.p99MsAt5kTrials.join(' / ')} ms)`,
    );
  }
  console.log(
    `Coral(2) / Coral(1) = ${gain} (target ≥ 1.7; best attempts ${bestGain}); Coral(2) / Knot(2) = ${vsKnot} (best attempts ${bestVsKnot}); loadavg after ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
  console.log(
    JSON.stringify({
      bench: 'dns',
      mode: 'workers',
      generator: o.generator,
      clients: o.clients,
      directory: o.directory,
      names: o.nNames,
      pinned: false,
      coral1,
      coral2,
      knot2,
      coral2OverCoral1: gain,
      coral2OverKnot2: vsKnot,
      coral2OverCoral1Best: bestGain,
      coral2OverKnot2Best: bestVsKnot,
      loadavgBefore: load0.map((x) => Number(x.toFixed(2))),
      loadavgAfter: os.loadavg().map((x) => Number(x.toFixed(2))),
    }),
  );
}
