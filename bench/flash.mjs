#!/usr/bin/env node
// Flash crowd: `npm run bench:flash -- --nodes 6 --clients 300 --objects 12 --seed 1`.
// A fleet of node processes on 127.0.B.x and a counting origin on 127.0.0.1; every client (its own
// source address 127.0.C.y) resolves the Coralized name through one node's DNS server with Node's
// stub resolver, then fetches every object in a seeded random order through the proxy it was
// given, all clients at once. Checks every body against the origin's bytes. Prints a table, then
// one JSON line. CoralCDN saw 14 origin requests for 12 files from 166 proxies; the target here is
// originRequests == objects and clientErrors == 0.
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { SeededRandom, shuffle } from '@coral/testkit';
import { Fleet, SampleOrigin, fetchVia, resolveThrough } from '@coral/node/fleet';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '6' },
    clients: { type: 'string', default: '300' },
    objects: { type: 'string', default: '12' },
    seed: { type: 'string', default: '1' },
    'object-bytes': { type: 'string', default: String(64 * 1024) },
    zone: { type: 'string', default: 'nyud.net' },
    'peer-timeout-ms': { type: 'string', default: '5000' },
    'index-timeout-ms': { type: 'string', default: '10000' },
    // `--claims false` turns the index's claims off, to compare (docs/node.md, "Claims").
    claims: { type: 'string', default: 'true' },
    // A flash-crowd posture for the claims' head start: every node of a 6-node fleet gets its own
    // step (the node's defaults are 3 steps of 100 ms, which bounds the cost of a lone cold miss).
    'claim-rank-cap': { type: 'string', default: '5' },
    'claim-step-ms': { type: 'string', default: '150' },
  },
});
const nodes = Number(values.nodes);
const clients = Number(values.clients);
const objects = Number(values.objects);
const seed = Number(values.seed);
const objectBytes = Number(values['object-bytes']);
// How long a proxy waits for a peer that is itself still fetching (the proxy's default is 1 s;
// with 300 clients on one 2-core machine, answers routinely take longer than that).
const peerTimeoutMs = Number(values['peer-timeout-ms']);
// Same for the index lookup (with its claim): the proxy's default bound is 2 s.
const indexTimeoutMs = Number(values['index-timeout-ms']);
const claimRankCap = Number(values['claim-rank-cap']);
const claimStepMs = Number(values['claim-step-ms']);
for (const [k, v] of Object.entries({
  nodes,
  clients,
  objects,
  seed,
  objectBytes,
  peerTimeoutMs,
})) {
  if (!Number.isInteger(v) || v < 0) {
    console.error(`--${k} must be a non-negative integer`);
    process.exit(2);
  }
}

const rng = new SeededRandom(seed);
const dataRoot = mkdtempSync(join(tmpdir(), 'coral-flash-'));
const origin = new SampleOrigin({ host: '127.0.0.1', objects, objectBytes });
const { port } = await origin.listen();
const fleet = new Fleet({
  nodes,
  dataRoot,
  env: {
    CORAL_ZONE: values.zone,
    CORAL_ALLOW_PRIVATE_ORIGINS: 'true',
    CORAL_HOSTS: 'www.origin.test=127.0.0.1',
    CORAL_PROXY_PEER_TIMEOUT_MS: String(peerTimeoutMs),
    CORAL_PROXY_PEER_FETCHING_TIMEOUT_MS: String(peerTimeoutMs),
    CORAL_PROXY_INDEX_TIMEOUT_MS: String(indexTimeoutMs),
    CORAL_INDEX_CLAIMS: values.claims,
    CORAL_INDEX_CLAIM_RANK_CAP: String(claimRankCap),
    CORAL_INDEX_CLAIM_STEP_MS: String(claimStepMs),
  },
});
const name = `www.origin.test.${port}.${values.zone}`;

let exitCode = 0;
try {
  await fleet.start();
  const started = performance.now();
  const latencies = [];
  const servedBy = { local: 0, peer: 0, origin: 0 };
  const perNode = new Map();
  let clientErrors = 0;
  let clientRequests = 0;
  const errorSamples = [];

  const runClient = async (c) => {
    // Each client is its own resolver in its own /24 (DNS rate limiting counts per /24).
    const localAddress = `127.201.${c % 250}.${1 + Math.floor(c / 250)}`;
    const dnsNode = fleet.nodes[c % nodes];
    const order = shuffle([...Array(objects).keys()], rng);
    const agent = new Agent({ keepAlive: true, maxSockets: 2 });
    try {
      let proxies;
      try {
        proxies = await resolveThrough({ ip: dnsNode.ip, port: dnsNode.dnsPort }, name, {
          localAddress,
        });
      } catch (err) {
        clientErrors += objects;
        clientRequests += objects;
        errorSamples.push(`dns: ${err.code ?? err.message}`);
        return;
      }
      const proxyIp = proxies[c % proxies.length];
      const proxyPort = fleet.nodes.find((n) => n.ip === proxyIp)?.proxyPort ?? 8090;
      for (const i of order) {
        clientRequests++;
        const t0 = performance.now();
        try {
          const r = await fetchVia({ ip: proxyIp, port: proxyPort }, name, `/obj/${i}`, {
            agent,
            localAddress,
          });
          latencies.push(performance.now() - t0);
          if (r.status !== 200 || !r.body.equals(origin.body(i))) {
            clientErrors++;
            errorSamples.push(`status ${r.status} ${r.body.length} bytes (${r.cacheStatus})`);
            continue;
          }
          const cs = r.cacheStatus.toLowerCase();
          const kind = /peer/.test(cs)
            ? 'peer'
            : /\bhit\b|collapsed|coalesced/.test(cs)
              ? 'local'
              : 'origin';
          servedBy[kind]++;
          perNode.set(proxyIp, (perNode.get(proxyIp) ?? 0) + 1);
        } catch (err) {
          clientErrors++;
          errorSamples.push(String(err.code ?? err.message));
        }
      }
    } finally {
      agent.destroy();
    }
  };
  await Promise.all(Array.from({ length: clients }, (_, c) => runClient(c)));
  const wallSeconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p) =>
    latencies.length
      ? latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]
      : 0;
  const originRequests = [...origin.counts.entries()]
    .filter(([p]) => p.startsWith('/obj/'))
    .reduce((s, [, n]) => s + n, 0);

  // What the fleet says about itself: claims won and lost, peer fetches that failed.
  const fleetCounters = { claimsWon: 0, claimsLost: 0, peerFetchErrors: 0, originFetches: 0 };
  const sum = (text, re) => [...text.matchAll(re)].reduce((s, m) => s + Number(m[1]), 0);
  for (const n of fleet.nodes) {
    const text = await n.admin.text('/metrics').catch(() => '');
    fleetCounters.claimsWon += sum(text, /^coral_index_claims_total\{outcome="won"\} (\d+)/gm);
    fleetCounters.claimsLost += sum(text, /^coral_index_claims_total\{outcome="lost"\} (\d+)/gm);
    fleetCounters.peerFetchErrors += sum(
      text,
      /^coral_peer_fetches_total\{outcome="error"\} (\d+)/gm,
    );
    fleetCounters.originFetches += sum(text, /^coral_origin_fetches_total\{outcome="ok"\} (\d+)/gm);
  }

  const rows = [
    ['nodes', nodes],
    ['clients', clients],
    ['objects', objects],
    ['object bytes', objectBytes],
    ['peer timeout (ms)', peerTimeoutMs],
    ['index timeout (ms)', indexTimeoutMs],
    ['claims', `${values.claims} (head start ${claimRankCap} x ${claimStepMs} ms)`],
    ['client requests', clientRequests],
    ['client errors', clientErrors],
    ['origin requests', originRequests],
    ['served locally', servedBy.local],
    ['served from a peer', servedBy.peer],
    ['served from the origin', servedBy.origin],
    ['p50 latency (ms)', pct(0.5).toFixed(1)],
    ['p99 latency (ms)', pct(0.99).toFixed(1)],
    ['wall (s)', wallSeconds.toFixed(2)],
    ['claims won / lost', `${fleetCounters.claimsWon} / ${fleetCounters.claimsLost}`],
    ['failed peer fetches', fleetCounters.peerFetchErrors],
  ];
  for (const [k, v] of rows) process.stdout.write(`${String(k).padEnd(24)} ${v}\n`);
  for (const [ip, n] of [...perNode].sort())
    process.stdout.write(`  responses from ${ip.padEnd(14)} ${n}\n`);
  if (errorSamples.length)
    process.stdout.write(`error samples: ${[...new Set(errorSamples)].slice(0, 5).join(' | ')}\n`);
  process.stdout.write(
    JSON.stringify({
      bench: 'flash',
      nodes,
      clients,
      objects,
      objectBytes,
      peerTimeoutMs,
      indexTimeoutMs,
      claims: values.claims === 'true',
      claimRankCap,
      claimStepMs,
      seed,
      originRequests,
      clientRequests,
      clientErrors,
      servedBy,
      p50Ms: Number(pct(0.5).toFixed(2)),
      p99Ms: Number(pct(0.99).toFixed(2)),
      wallSeconds: Number(wallSeconds.toFixed(2)),
      ...fleetCounters,
    }) + '\n',
  );
} catch (err) {
  console.error(String(err?.stack ?? err));
  exitCode = 1;
} finally {
  await fleet.stop();
  await origin.close();
  if (process.env.CORAL_BENCH_KEEP) process.stdout.write(`kept logs and data in ${dataRoot}\n`);
  else rmSync(dataRoot, { recursive: true, force: true });
}
process.exit(exitCode);
