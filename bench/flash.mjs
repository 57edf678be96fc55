#!/usr/bin/env node
// Flash crowd: `npm run bench:flash -- --nodes 6 --clients 300 --objects 12 --seed 1`.
// A fleet of node processes on 127.0.B.x and a counting origin (a process of its own) on
// 127.0.0.1; every client (its own source address 127.C.y.z) resolves the Coralized name through
// one node's DNS server with Node's stub resolver, then fetches every object in a seeded random
// order through the proxy it was given, all clients at once. Checks every body against the origin's bytes. Prints a table, then
// one JSON line. CoralCDN saw 14 origin requests for 12 files from 166 proxies; the target here is
// originRequests == objects and clientErrors == 0, with the nodes' default settings.
//
// The crowd starts once every node knows every other as a live member (the view the designated
// fetcher is chosen from), or after `--form-s` (30) seconds whatever the views; the table gives the
// views and how long forming took after the nodes were ready.
//
// The nodes run with their defaults. `--posture flash` adds the old flash-crowd tuning (a 5 × 150 ms
// claim head start, 5 s peer and 10 s index timeouts) as a comparison row; the single flags
// (`--peer-timeout-ms`, `--index-timeout-ms`, `--claim-rank-cap`, `--claim-step-ms`, `--claims`)
// set one knob each. Nothing is passed to the nodes that the flags do not name.
//
// Failures: `--kill F` SIGKILLs a fraction F of the nodes (the bootstrap node first, the others
// chosen by the seed) once `--fail-at` of the requests have completed; `--stop F` SIGSTOPs them
// instead (SIGCONT at the end). A client that cannot reach an address (refused, reset, or no answer
// within `--client-timeout-ms`) does what browsers do: it tries the next address of its DNS answer,
// and once every address it has failed, asks DNS again (each node's DNS server in turn), so the
// fleet's failure detection decides how soon clients stop meeting failed nodes. A client knows
// only what it saw fail. The JSON line separates what failed on the failed nodes from what failed
// on the survivors (`reResolved`: the fresh DNS answers), and gives the survivors' slowest answer
// after the failure.
// `--runs N` repeats the whole run with seeds seed..seed+N-1, a fresh fleet each time.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { rendezvousRank, urlKey } from '@coral/httpprx';
import { SeededRandom, shuffle } from '@coral/testkit';
import { Fleet, SampleOrigin, fetchVia, resolveThrough } from '@coral/node/fleet';
import { servedFrom } from './lib/cache-status.mjs';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '6' },
    clients: { type: 'string', default: '300' },
    objects: { type: 'string', default: '12' },
    seed: { type: 'string', default: '1' },
    runs: { type: 'string', default: '1' },
    'object-bytes': { type: 'string', default: String(64 * 1024) },
    zone: { type: 'string', default: 'nyud.net' },
    posture: { type: 'string', default: 'defaults' },
    'peer-timeout-ms': { type: 'string' },
    'index-timeout-ms': { type: 'string' },
    claims: { type: 'string' },
    'claim-rank-cap': { type: 'string' },
    'claim-step-ms': { type: 'string' },
    kill: { type: 'string', default: '0' },
    stop: { type: 'string', default: '0' },
    'fail-at': { type: 'string', default: '0.25' },
    'client-timeout-ms': { type: 'string', default: '30000' },
    'form-s': { type: 'string', default: '30' },
  },
});

function fail(message) {
  console.error(message);
  process.exit(2);
}
function integer(name, min = 0) {
  const v = Number(values[name]);
  if (!Number.isInteger(v) || v < min) fail(`--${name} must be an integer ≥ ${min}`);
  return v;
}
function fraction(name) {
  const v = Number(values[name]);
  if (!(v >= 0 && v <= 1)) fail(`--${name} must be a fraction between 0 and 1`);
  return v;
}

const nodes = integer('nodes', 1);
const clients = integer('clients', 1);
const objects = integer('objects', 1);
const seed = integer('seed');
const runs = integer('runs', 1);
const objectBytes = integer('object-bytes', 1);
const clientTimeoutMs = integer('client-timeout-ms', 1);
const formMs = integer('form-s', 0) * 1000;
const killFraction = fraction('kill');
const stopFraction = fraction('stop');
const failAt = fraction('fail-at');
if (killFraction > 0 && stopFraction > 0) fail('--kill and --stop cannot be combined');
const failure = killFraction > 0 ? 'kill' : stopFraction > 0 ? 'stop' : 'none';
const failCount = Math.round((killFraction || stopFraction) * nodes);
if (failure !== 'none' && (failCount < 1 || failCount >= nodes))
  fail(`--${failure} must fail at least one node and leave at least one`);
if (!['defaults', 'flash'].includes(values.posture)) fail('--posture is defaults or flash');

// The knobs passed to the nodes: only what a flag names (the posture is a set of flags).
const FLASH_POSTURE = {
  'peer-timeout-ms': '5000',
  'index-timeout-ms': '10000',
  'claim-rank-cap': '5',
  'claim-step-ms': '150',
};
const knobs = {
  ...(values.posture === 'flash' ? FLASH_POSTURE : {}),
  ...Object.fromEntries(
    ['peer-timeout-ms', 'index-timeout-ms', 'claims', 'claim-rank-cap', 'claim-step-ms'].flatMap(
      (k) => (values[k] === undefined ? [] : [[k, values[k]]]),
    ),
  ),
};
for (const [k, v] of Object.entries(knobs)) {
  if (k === 'claims' ? !['true', 'false'].includes(v) : !/^\d+$/.test(v))
    fail(`--${k}: bad value ${v}`);
}
const KNOB_ENV = {
  'peer-timeout-ms': ['CORAL_PROXY_PEER_TIMEOUT_MS', 'CORAL_PROXY_PEER_FETCHING_TIMEOUT_MS'],
  'index-timeout-ms': ['CORAL_PROXY_INDEX_TIMEOUT_MS'],
  claims: ['CORAL_INDEX_CLAIMS'],
  'claim-rank-cap': ['CORAL_INDEX_CLAIM_RANK_CAP'],
  'claim-step-ms': ['CORAL_INDEX_CLAIM_STEP_MS'],
};
const knobEnv = Object.fromEntries(
  Object.entries(knobs).flatMap(([k, v]) => KNOB_ENV[k].map((env) => [env, v])),
);
// The proxy's default peer timeout (packages/node docs/configuration.md: proxy.peerTimeoutMs 0 = 1 s).
const peerTimeoutMs = Number(knobs['peer-timeout-ms'] ?? 1000);

const ORIGIN_MAIN = fileURLToPath(
  new URL('../packages/node/dist/fleet/origin-main.js', import.meta.url),
);

/**
 * The counting origin in a process of its own, as a real origin is: in this process it would
 * answer at the pace of the 600 clients' event loop (an overloaded one answered the fleet's
 * fetches after 15 s, and the nodes reported origin timeouts). Its bytes are a pure function of
 * the path, so a `SampleOrigin` here that never listens checks every body.
 */
async function startOrigin() {
  const child = spawn(process.execPath, [ORIGIN_MAIN], {
    env: {
      ...process.env,
      ORIGIN_HOST: '127.0.0.1',
      ORIGIN_PORT: '0',
      ORIGIN_OBJECTS: String(objects),
      ORIGIN_OBJECT_BYTES: String(objectBytes),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  const [first] = await Promise.race([
    once(lines, 'line'),
    once(child, 'exit').then(([code]) => {
      throw new Error(`the origin process exited (${code}) before listening`);
    }),
  ]);
  const { port } = JSON.parse(first);
  return {
    port,
    /** Requests answered and each one's Via, by path. */
    async counts() {
      const r = await fetch(`http://127.0.0.1:${port}/counts`);
      const { byPath, via } = await r.json();
      return { counts: new Map(Object.entries(byPath)), via: new Map(Object.entries(via)) };
    },
    async close() {
      lines.close();
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/** One run with a fresh fleet and a cold origin; returns the figures of the JSON line. */
async function runOnce(runSeed) {
  const rng = new SeededRandom(runSeed);
  const dataRoot = mkdtempSync(join(tmpdir(), 'coral-flash-'));
  const origin = await startOrigin();
  const { port } = origin;
  const bytes = new SampleOrigin({ objects, objectBytes });
  const fleet = new Fleet({
    nodes,
    dataRoot,
    env: {
      CORAL_ZONE: values.zone,
      CORAL_ALLOW_PRIVATE_ORIGINS: 'true',
      CORAL_HOSTS: 'www.origin.test=127.0.0.1',
      ...knobEnv,
    },
  });
  const name = `www.origin.test.${port}.${values.zone}`;
  // The failed nodes: the bootstrap node first, then others in the seed's order.
  const victims = new Set(
    failure === 'none'
      ? []
      : [0, ...shuffle([...Array(nodes).keys()].slice(1), rng)].slice(0, failCount),
  );
  try {
    await fleet.start();
    // How much of the fleet each node knows as live members (the designated fetcher is chosen from
    // that view: a node that does not know the member designated for a URL fetches it itself). The
    // crowd meets a formed fleet: it starts once every node knows every other, or after
    // `--form-s` seconds whatever the views are; both figures are reported.
    const viewsNow = () =>
      Promise.all(
        fleet.nodes.map(
          async (n) => (await n.admin.json('GET', '/v1/clusters')).liveProxies?.length ?? 0,
        ),
      );
    const formStart = performance.now();
    let views = await viewsNow();
    while (Math.min(...views) < nodes && performance.now() - formStart < formMs) {
      await new Promise((r) => setTimeout(r, 250));
      views = await viewsNow();
    }
    const formedSeconds = (performance.now() - formStart) / 1000;
    const nodeIds = await Promise.all(
      fleet.nodes.map(async (n) => (await n.admin.json('GET', '/v1/node')).nodeId),
    );
    const totalRequests = clients * objects;
    const started = performance.now();
    const latencies = [];
    const servedBy = { local: 0, peer: 0, origin: 0 };
    const perNode = new Map();
    const errorSamples = [];
    const c = {
      clientRequests: 0,
      completed: 0,
      corruptBodies: 0,
      dnsErrors: 0,
      errorsOnFailed: 0,
      errorsOnSurvivors: 0,
      retriedOk: 0,
      reResolved: 0,
      failedRequests: 0,
      survivorMaxMsAfterFailure: 0,
      survivorSlowAfterFailure: 0,
    };
    let failedAt = null;
    const failedIps = new Set();
    const failNodes = () => {
      failedAt = performance.now();
      for (const i of victims) {
        const node = fleet.nodes[i];
        failedIps.add(node.ip);
        node.process.kill(failure === 'kill' ? 'SIGKILL' : 'SIGSTOP');
      }
    };
    const portOf = (ip) => fleet.nodes.find((n) => n.ip === ip)?.proxyPort ?? 8090;

    /** One request to `ip`; true when it was answered with the right bytes. */
    const attempt = async (ip, i, agent, localAddress) => {
      const onFailed = failedIps.has(ip);
      const t0 = performance.now();
      try {
        const r = await fetchVia({ ip, port: portOf(ip) }, name, `/obj/${i}`, {
          agent,
          localAddress,
          timeoutMs: clientTimeoutMs,
        });
        const ms = performance.now() - t0;
        latencies.push(ms);
        if (!onFailed && failedAt !== null && t0 >= failedAt) {
          c.survivorMaxMsAfterFailure = Math.max(c.survivorMaxMsAfterFailure, ms);
          if (ms > peerTimeoutMs + 1000) c.survivorSlowAfterFailure++;
        }
        if (r.status === 200 && !r.body.equals(bytes.body(i))) {
          c.corruptBodies++;
          errorSamples.push(`corrupt body from ${ip} (${r.cacheStatus})`);
          return { ok: false, onFailed: failedIps.has(ip) };
        }
        if (r.status !== 200) {
          errorSamples.push(`status ${r.status} from ${ip} (${r.cacheStatus})`);
          return { ok: false, onFailed: failedIps.has(ip) };
        }
        servedBy[servedFrom(r.cacheStatus)]++;
        perNode.set(ip, (perNode.get(ip) ?? 0) + 1);
        return { ok: true };
      } catch (err) {
        // A request in flight when its node failed counts against the failed node.
        const failedNode = failedIps.has(ip);
        errorSamples.push(
          `${err.code ?? err.message} (${failedNode ? 'failed' : 'surviving'} ${ip})`,
        );
        return { ok: false, onFailed: failedNode, network: true };
      }
    };

    const runClient = async (k) => {
      // Each client is its own resolver in its own /24 (DNS rate limiting counts per /24).
      const localAddress = `127.${201 + Math.floor(k / 62_500)}.${Math.floor(k / 250) % 250}.${1 + (k % 250)}`;
      const dnsNode = fleet.nodes[k % nodes];
      const order = shuffle([...Array(objects).keys()], rng);
      const agent = new Agent({ keepAlive: true, maxSockets: 2 });
      try {
        let proxies;
        try {
          proxies = await resolveThrough({ ip: dnsNode.ip, port: dnsNode.dnsPort }, name, {
            localAddress,
          });
        } catch (err) {
          c.dnsErrors++;
          c.clientRequests += objects;
          c.errorsOnSurvivors += objects;
          errorSamples.push(`dns: ${err.code ?? err.message}`);
          return;
        }
        // The client's own order of the answer's addresses: the first, then the next on failure.
        // What failed is what this client saw fail (no oracle): it tries the next address of its
        // answer, and when every address it has failed, asks DNS again (the nameservers in turn,
        // as a stub resolver with several does) for an answer without them.
        let addresses = proxies.map((_, j) => proxies[(k + j) % proxies.length]);
        const bad = new Set();
        const nextAddress = async () => {
          const left = addresses.filter((a) => !bad.has(a));
          if (left.length > 0) return left[0];
          for (let j = 0; j < nodes; j++) {
            const ns = fleet.nodes[(k + j) % nodes];
            try {
              const fresh = await resolveThrough({ ip: ns.ip, port: ns.dnsPort }, name, {
                localAddress,
                timeoutMs: 1_000,
                tries: 1,
              });
              c.reResolved++;
              addresses = fresh.filter((a) => !bad.has(a));
              if (addresses.length > 0) return addresses[0];
            } catch {
              /* this nameserver did not answer: the next one */
            }
          }
          return undefined;
        };
        for (const i of order) {
          c.clientRequests++;
          let result = await attempt(addresses[0], i, agent, localAddress);
          if (!result.ok) {
            // A request to a node that had failed counts against it; any other, against the fleet.
            if (result.onFailed) c.errorsOnFailed++;
            else c.errorsOnSurvivors++;
          }
          if (!result.ok && result.network) {
            // As a browser does when it cannot reach an address: the next one (of this answer,
            // or of a fresh one).
            bad.add(addresses[0]);
            const next = await nextAddress();
            if (next) {
              addresses = [next, ...addresses.filter((a) => a !== next)];
              result = await attempt(next, i, agent, localAddress);
              if (result.ok) c.retriedOk++;
              else if (result.onFailed) c.errorsOnFailed++;
              else c.errorsOnSurvivors++;
            }
          }
          if (!result.ok) c.failedRequests++;
          c.completed++;
          if (failure !== 'none' && failedAt === null && c.completed >= failAt * totalRequests)
            failNodes();
        }
      } finally {
        agent.destroy();
      }
    };
    await Promise.all(Array.from({ length: clients }, (_, k) => runClient(k)));
    const wallSeconds = (performance.now() - started) / 1000;
    latencies.sort((a, b) => a - b);
    const pct = (p) =>
      latencies.length
        ? latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]
        : 0;
    const seen = await origin.counts();
    const originRequests = [...seen.counts.entries()]
      .filter(([p]) => p.startsWith('/obj/'))
      .reduce((s, [, n]) => s + n, 0);
    // Objects the origin served more than once: the nodes that fetched each and the one the
    // rendezvous order over the whole fleet designates. A Via lists every node the request went
    // through, each by its id's first 12 hex digits; the fetcher is the last (node numbers from 1).
    const nodeOf = (via) => {
      const hops = via.split(',').map((h) => h.trim());
      const last = hops[hops.length - 1] ?? '';
      return 1 + nodeIds.findIndex((id) => last.endsWith(`coral-${id.slice(0, 12)}`));
    };
    const duplicates = [...seen.via.entries()]
      .filter(([p, v]) => p.startsWith('/obj/') && v.length > 1)
      .map(([p, v]) => {
        const key = urlKey(`http://www.origin.test:${port}${p}`);
        const top = nodeIds.findIndex((id) => rendezvousRank(id, key, nodeIds) === 0);
        return { path: p, designated: top + 1, fetchers: v.map(nodeOf) };
      });

    // What the surviving nodes say about themselves: claims won and lost, failed peer fetches.
    const fleetCounters = {
      claimsWon: 0,
      claimsLost: 0,
      peerFetchErrors: 0,
      originFetches: 0,
      designated: {
        self: 0,
        asked: 0,
        'ask-refused': 0,
        'ask-timeout': 0,
        'ask-error': 0,
        taken: 0,
      },
      // Failure detection's verdicts, summed over the surviving nodes (false ones in a healthy run).
      memberEvents: { suspect: 0, dead: 0, left: 0, alive: 0 },
    };
    const sum = (text, re) => [...text.matchAll(re)].reduce((s, m) => s + Number(m[1]), 0);
    for (const n of fleet.nodes) {
      if (victims.has(n.index)) continue;
      const text = await n.admin.text('/metrics').catch(() => '');
      fleetCounters.claimsWon += sum(text, /^coral_index_claims_total\{outcome="won"\} (\d+)/gm);
      fleetCounters.claimsLost += sum(text, /^coral_index_claims_total\{outcome="lost"\} (\d+)/gm);
      fleetCounters.peerFetchErrors += sum(
        text,
        /^coral_peer_fetches_total\{outcome="error"\} (\d+)/gm,
      );
      fleetCounters.originFetches += sum(
        text,
        /^coral_origin_fetches_total\{outcome="ok"\} (\d+)/gm,
      );
      for (const event of Object.keys(fleetCounters.designated)) {
        const re = new RegExp(`^coral_designated_fetch_total\\{event="${event}"\\} (\\d+)`, 'gm');
        fleetCounters.designated[event] += sum(text, re);
      }
      for (const event of Object.keys(fleetCounters.memberEvents)) {
        const re = new RegExp(`^coral_dsht_member_events_total\\{event="${event}"\\} (\\d+)`, 'gm');
        fleetCounters.memberEvents[event] += sum(text, re);
      }
    }
    return {
      seed: runSeed,
      originRequests,
      membersKnownAtStart: { min: Math.min(...views), max: Math.max(...views) },
      formedSeconds: Number(formedSeconds.toFixed(1)),
      clientRequests: c.clientRequests,
      clientErrors: c.failedRequests + c.dnsErrors * objects,
      corruptBodies: c.corruptBodies,
      dnsErrors: c.dnsErrors,
      ...(failure === 'none'
        ? {}
        : {
            failedNodes: [...victims].map((i) => fleet.nodes[i].ip),
            errorsOnFailedNodes: c.errorsOnFailed,
            retriedOk: c.retriedOk,
            reResolved: c.reResolved,
            errorsOnSurvivors: c.errorsOnSurvivors,
            survivorMaxMsAfterFailure: Number(c.survivorMaxMsAfterFailure.toFixed(1)),
            survivorSlowAfterFailure: c.survivorSlowAfterFailure,
          }),
      servedBy,
      p50Ms: Number(pct(0.5).toFixed(2)),
      p99Ms: Number(pct(0.99).toFixed(2)),
      wallSeconds: Number(wallSeconds.toFixed(2)),
      ...fleetCounters,
      duplicates,
      perNode: Object.fromEntries([...perNode].sort()),
      errorSamples: [...new Set(errorSamples)].slice(0, 5),
    };
  } finally {
    // A stopped process handles no SIGTERM until it is continued.
    if (failure === 'stop') for (const i of victims) fleet.nodes[i]?.process.kill('SIGCONT');
    await fleet.stop();
    await origin.close();
    if (process.env.CORAL_BENCH_KEEP) process.stdout.write(`kept logs and data in ${dataRoot}\n`);
    else rmSync(dataRoot, { recursive: true, force: true });
  }
}

let exitCode = 0;
const results = [];
try {
  for (let r = 0; r < runs; r++) {
    const res = await runOnce(seed + r);
    results.push(res);
    const rows = [
      ['run (seed)', `${r + 1} of ${runs} (${res.seed})`],
      ['nodes / clients / objects', `${nodes} / ${clients} / ${objects} × ${objectBytes} B`],
      ['posture', `${values.posture} ${JSON.stringify(knobs)}`],
      ['client requests', res.clientRequests],
      ['client errors', res.clientErrors],
      ['corrupt bodies', res.corruptBodies],
      ['origin requests', res.originRequests],
      [
        'fetched more than once',
        res.duplicates
          .map((d) => `${d.path} by ${d.fetchers.join(',')} (designated ${d.designated})`)
          .join('; ') || 'none',
      ],
      [
        'members known at start',
        `${res.membersKnownAtStart.min}–${res.membersKnownAtStart.max} of ${nodes} (each node's view, ${res.formedSeconds} s after ready)`,
      ],
      [
        'served local/peer/origin',
        `${res.servedBy.local} / ${res.servedBy.peer} / ${res.servedBy.origin}`,
      ],
      ['p50 / p99 latency (ms)', `${res.p50Ms} / ${res.p99Ms}`],
      ['wall (s)', res.wallSeconds],
      ['claims won / lost', `${res.claimsWon} / ${res.claimsLost}`],
      ['failed peer fetches', res.peerFetchErrors],
      [
        'designated self/asked/refused/timeout/error/taken',
        Object.values(res.designated).join(' / '),
      ],
      ['members suspect/dead/left/alive', Object.values(res.memberEvents).join(' / ')],
    ];
    if (failure !== 'none') {
      rows.push(
        [`${failure === 'kill' ? 'killed' : 'stopped'} nodes`, res.failedNodes.join(' ')],
        [
          'errors on failed nodes',
          `${res.errorsOnFailedNodes} (${res.retriedOk} retried ok, ${res.reResolved} DNS asked again)`,
        ],
        ['errors on survivors', res.errorsOnSurvivors],
        [
          'survivors: max ms after',
          `${res.survivorMaxMsAfterFailure} (${res.survivorSlowAfterFailure} over ${peerTimeoutMs + 1000} ms)`,
        ],
      );
    }
    for (const [k, v] of rows) process.stdout.write(`${String(k).padEnd(26)} ${v}\n`);
    for (const [ip, n] of Object.entries(res.perNode))
      process.stdout.write(`  responses from ${ip.padEnd(14)} ${n}\n`);
    if (res.errorSamples.length)
      process.stdout.write(`error samples: ${res.errorSamples.join(' | ')}\n`);
    process.stdout.write('\n');
  }
} catch (err) {
  console.error(String(err?.stack ?? err));
  exitCode = 1;
}
const strip = ({ perNode: _p, errorSamples: _e, ...rest }) => rest;
const last = results.at(-1);
process.stdout.write(
  JSON.stringify({
    bench: 'flash',
    nodes,
    clients,
    objects,
    objectBytes,
    posture: values.posture,
    knobs,
    failure,
    failFraction: killFraction || stopFraction,
    runs: results.length,
    originRequestsPerRun: results.map((r) => r.originRequests),
    clientErrorsPerRun: results.map((r) => r.clientErrors),
    exactRuns: results.filter((r) => r.originRequests === objects && r.clientErrors === 0).length,
    ...(results.length === 1 && last ? strip(last) : { results: results.map(strip) }),
  }) + '\n',
);
process.exit(exitCode);
