// DSHT simulation benchmark: a fleet on the simulated network (ManualClock, seeded), random puts and
// gets, then every node putting the same hot key for 5 simulated minutes.
//
//   npm run bench:dsht -- --nodes 1000 --seed 1 [--loss 0.05] [--lookups 1000] [--open] [--workers 1]
//
// --workers N (uniform topology): with N > 1 the fleet runs on N worker threads in conservative time
// windows (@coral/sim's ParallelFleet; deterministic for a seed and N); --workers 1, the default, is
// the in-process SimFleet, single-threaded — on this project's 2-core machine two workers were
// slower (docs/benchmarks.md). The geo topology always runs in process.
//   npm run bench:dsht -- --nodes 1000 --topology geo --seed 1   (three levels, clustering; see runGeo)
//
// The fleet runs in keyed mode (one fleet key derived from the seed) unless --open is given. The
// JSON line reports `amplificationMax` (the largest answer/request size ratio any node sent to a
// source that had not completed a round trip, over every message type; ≤ 1 by design) and
// `authBytesPerDatagram` (bytes of authentication per datagram sent; 0 in open mode).
//
// Prints a table and ends with one JSON line. Runs the compiled package (`tsc -b` first).
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import { SeededRandom } from '../packages/testkit/dist/index.js';
import { keyFromName, toHex, LOADED_STORES } from '../packages/dsht/dist/internal.js';
import { LocalFleetDriver, ParallelFleet, trustPart } from '../packages/sim/dist/index.js';
import { enc, pct, runGeo } from './lib/dsht-geo.mjs';

const { values: args } = parseArgs({
  options: {
    nodes: { type: 'string', default: '1000' },
    seed: { type: 'string', default: '1' },
    loss: { type: 'string', default: '0' },
    lookups: { type: 'string', default: '1000' },
    'hot-minutes': { type: 'string', default: '5' },
    topology: { type: 'string', default: 'uniform' },
    regions: { type: 'string', default: '4' },
    metros: { type: 'string', default: '5' },
    requests: { type: 'string', default: '2000' },
    'cluster-minutes': { type: 'string', default: '5' },
    churn: { type: 'string', default: '0' },
    open: { type: 'boolean', default: false },
    // Worker threads of the uniform run (default: 2, or 1 on a one-CPU machine): 1 = the
    // in-process SimFleet (single-threaded). More than 2 was not measured to help on 2 cores.
    workers: { type: 'string', default: '1' },
    // Print join progress (nodes joined, wall seconds, RSS) to stderr every this many nodes; 0 = off.
    progress: { type: 'string', default: '0' },
  },
});
const progressEvery = Number(args.progress);
let reported = 0;
const onJoin =
  progressEvery > 0
    ? (joined) => {
        if (Math.floor(joined / progressEvery) === Math.floor(reported / progressEvery)) return;
        reported = joined;
        const rss = Math.round(process.memoryUsage.rss() / 2 ** 20);
        const wall = ((performance.now() - wallStart) / 1000).toFixed(1);
        console.error(`bench:dsht: joined ${joined}/${nodes}, ${wall} s, rss ${rss} MB`);
      }
    : undefined;
if (args.topology !== 'uniform' && args.topology !== 'geo') {
  console.error(`bench:dsht: unknown --topology ${args.topology} (uniform | geo)`);
  process.exit(2);
}
const nodes = Number(args.nodes);
const seed = Number(args.seed);
const loss = Number(args.loss);
const lookups = Number(args.lookups);
const hotMinutes = Number(args['hot-minutes']);
const workers = Number(args.workers);
for (const [k, v] of Object.entries({ nodes, seed, loss, lookups, hotMinutes, workers })) {
  if (
    !Number.isFinite(v) ||
    v < 0 ||
    (k === 'loss' && v >= 1) ||
    (k === 'workers' && (v < 1 || !Number.isInteger(v)))
  ) {
    console.error(`bench:dsht: bad --${k}`);
    process.exit(2);
  }
}

// A fleet key derived from the seed, so runs are reproducible (its value changes nothing measured).
const keys = args.open
  ? undefined
  : [createHash('sha256').update(`coral-bench-key-${seed}`).digest('hex')];
const mode = keys ? 'keyed' : 'open';

/**
 * Trust figures from a fleet's merged TrustPart: the largest amplification any node allowed,
 * auth bytes per datagram.
 */
function trustFigures(t) {
  return {
    amplificationMax: Number(t.amplificationMax.toFixed(3)),
    amplificationMaxByType: t.amplificationMaxByType,
    unverifiedRequests: t.unverifiedRequests,
    tokenRefused: t.tokenRefused,
    authBytesPerDatagram: t.sealed ? Number((t.authBytes / t.sealed).toFixed(2)) : 0,
  };
}
/** Trust figures over an in-process SimFleet (the geo run). */
const trustOf = (fleet) => trustFigures(trustPart(fleet.nodes));

const wallStart = performance.now();
/** Peak resident set size of this process so far, in MB (the kernel's high-water mark). */
const peakRssMB = () => Math.round(process.resourceUsage().maxRSS / 1024);
/**
 * A progress line on stderr (phase, wall seconds, CPU seconds, datagrams so far, peak RSS): a long
 * run stopped early still says how far it got, and each phase's datagrams and CPU can be read off.
 */
const progress = async (phase) => {
  const { sent } = await fleet.stats();
  const cpu = process.cpuUsage();
  console.error(
    `bench:dsht: ${phase} after ${((performance.now() - wallStart) / 1000).toFixed(1)} s wall, ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s CPU, ${sent} datagrams, peak RSS ${peakRssMB()} MB`,
  );
};
const rng = new SeededRandom(seed * 7919 + 1);
if (args.topology === 'geo') {
  await runGeo({ args, nodes, seed, loss, lookups, keys, mode, wallStart, peakRssMB, trustOf });
  process.exit(0);
}

const fleet =
  workers === 1
    ? new LocalFleetDriver({ nodes, seed, lossRate: loss, keys })
    : new ParallelFleet({ nodes, seed, lossRate: loss, keys, workers });
await fleet.start({ onProgress: onJoin });
const joinWall = (performance.now() - wallStart) / 1000;
await progress(`${nodes} nodes joined`);
const sizes = (await fleet.tableSizes(0)).sort((a, b) => a - b);

/** Run ops with bounded concurrency, all under the simulated clock. */
async function batched(ops, size) {
  const out = [];
  for (let i = 0; i < ops.length; i += size) out.push(...(await fleet.run(ops.slice(i, i + size))));
  return out;
}

// Random puts: `lookups` keys, each put by a random node.
const puts = Array.from({ length: lookups }, (_, i) => ({
  key: keyFromName(`bench-${seed}-${i}`),
  by: rng.int(nodes),
  i,
}));
const putResults = await batched(
  puts.map((p) => ({ kind: 'put', node: p.by, key: p.key, value: enc(`value-${p.i}`), ttl: 3600 })),
  250,
);
const putOk = putResults.filter((r) => r.ok).length;
await progress(`${lookups} puts`);

// Random gets: each put key fetched by a different random node.
const gets = puts.map((p) => {
  let by = rng.int(nodes);
  if (by === p.by) by = (by + 1) % nodes;
  return { ...p, by };
});
const getResults = (
  await batched(
    gets.map((g) => ({ kind: 'get', node: g.by, key: g.key })),
    250,
  )
).map((r, i) => ({
  ok: r.ok && r.values.some((v) => new TextDecoder().decode(v) === `value-${gets[i].i}`),
  stats: r.stats,
}));
const found = getResults.filter((r) => r.ok);
await progress(`${lookups} gets`);
const hops = found.map((r) => r.stats.hops).sort((a, b) => a - b);
const lat = found.map((r) => r.stats.latencyMs).sort((a, b) => a - b);
const msgs = getResults.reduce((s, r) => s + r.stats.messages, 0) / Math.max(1, getResults.length);

// Hot key: every node puts the same key once per simulated minute, at a random moment in it.
const hot = keyFromName(`hot-${seed}`);
const slot = `0:${toHex(hot)}`;
const root = await fleet.closest(hot);
const perMinute = [];
const requestsPerMinute = [];
let hotPutsOk = 0;
let hotPuts = 0;
for (let m = 0; m < hotMinutes; m++) {
  const before = await fleet.slotCounters(root, slot);
  const minuteStart = fleet.now();
  const jobs = Array.from({ length: nodes }, (_, i) => ({
    kind: 'put',
    node: i,
    key: hot,
    value: enc(`hot-holder-${i}`),
    ttl: 600,
    delayMs: rng.next() * 60_000,
  }));
  const done = await fleet.run(jobs);
  hotPuts += done.length;
  hotPutsOk += done.filter((r) => r.ok).length;
  // Close the minute on the clock before counting.
  await fleet.advanceTo(minuteStart + 60_000);
  const after = await fleet.slotCounters(root, slot);
  perMinute.push(after.accepted - before.accepted);
  requestsPerMinute.push(after.requests - before.requests);
  await progress(`hot key minute ${m + 1}`);
}
const hotHolders = await fleet.holders(hot);
const hotGets = await batched(
  Array.from({ length: 100 }, () => ({ kind: 'get', node: rng.int(nodes), key: hot })),
  100,
);

const hotKeyBound = LOADED_STORES * Math.ceil(Math.log2(nodes));
const trust = trustFigures(await fleet.trust());
const net = await fleet.stats();
const result = {
  bench: 'dsht',
  topology: 'uniform',
  mode,
  nodes,
  workers,
  seed,
  lossRate: loss,
  lookups,
  putSuccess: putOk / lookups,
  getSuccess: found.length / lookups,
  hopsP50: pct(hops, 0.5),
  hopsP95: pct(hops, 0.95),
  msgsPerGet: Number(msgs.toFixed(2)),
  getLatencyP50Ms: Math.round(pct(lat, 0.5)),
  getLatencyP95Ms: Math.round(pct(lat, 0.95)),
  hotKeyRootStoresPerMin: Math.max(...perMinute),
  hotKeyRootStoresByMinute: perMinute,
  hotKeyRootRequestsPerMin: Math.max(...requestsPerMinute),
  hotKeyBound,
  hotKeyPutSuccess: hotPuts ? hotPutsOk / hotPuts : 0,
  hotKeyHolders: hotHolders,
  hotKeyGetSuccess: hotGets.filter((r) => r.ok && r.values.length > 0).length / hotGets.length,
  tableSizeP50: pct(sizes, 0.5),
  amplificationMax: trust.amplificationMax,
  amplificationMaxByType: trust.amplificationMaxByType,
  unverifiedRequests: trust.unverifiedRequests,
  tokenRefused: trust.tokenRefused,
  authBytesPerDatagram: trust.authBytesPerDatagram,
  datagrams: net.sent,
  datagramsLost: net.lost,
  simulatedSeconds: Math.round((fleet.now() - 1_700_000_000_000) / 1000),
  joinWallSeconds: Number(joinWall.toFixed(1)),
  wallSeconds: Number(((performance.now() - wallStart) / 1000).toFixed(1)),
  peakRssMB: peakRssMB(),
};
if (fleet.timing) {
  // Where a parallel run's wall went: windows, the slowest shard's steps, the hand-over between.
  const t = fleet.timing;
  const s = (ms) => (ms / 1000).toFixed(1);
  console.error(
    `bench:dsht: ${fleet.windows} windows; wall ${s(t.wall)} s = slowest shard ${s(t.slowest)} s + hand-over ${s(t.wall - t.slowest)} s; all shards' steps ${s(t.steps)} s`,
  );
}
await fleet.close();

const rows = [
  ['mode', mode],
  ['nodes', nodes],
  ['worker threads', workers],
  ['loss rate', loss],
  ['routing table size (p50)', result.tableSizeP50],
  ['puts ok', `${putOk}/${lookups}`],
  ['gets found', `${found.length}/${lookups} (${(result.getSuccess * 100).toFixed(2)}%)`],
  ['hops p50 / p95', `${result.hopsP50} / ${result.hopsP95}`],
  ['messages per get', result.msgsPerGet],
  ['get latency p50 / p95 (sim ms)', `${result.getLatencyP50Ms} / ${result.getLatencyP95Ms}`],
  ['hot key: root stores per minute', perMinute.join(' ')],
  ['hot key: STOREs reaching root per minute', requestsPerMinute.join(' ')],
  ['hot key: bound β·⌈log2 n⌉', hotKeyBound],
  ['hot key: nodes holding a copy', hotHolders],
  [
    'hot key: puts ok / gets ok',
    `${(result.hotKeyPutSuccess * 100).toFixed(1)}% / ${(result.hotKeyGetSuccess * 100).toFixed(1)}%`,
  ],
  ['amplification max (answer/request, before a round trip)', result.amplificationMax],
  ['auth bytes per datagram', result.authBytesPerDatagram],
  ['datagrams (lost)', `${result.datagrams} (${result.datagramsLost})`],
  ['simulated time', `${result.simulatedSeconds} s`],
  ['wall time (join)', `${result.wallSeconds} s (${result.joinWallSeconds} s)`],
  ['peak RSS', `${result.peakRssMB} MB`],
];
const w = Math.max(...rows.map((r) => r[0].length));
for (const [k, v] of rows) console.log(`${k.padEnd(w)}  ${v}`);
console.log(JSON.stringify(result));
