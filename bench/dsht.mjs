// DSHT simulation benchmark: a fleet on the simulated network (ManualClock, seeded), random puts and
// gets, then every node putting the same hot key for 5 simulated minutes.
//
//   npm run bench:dsht -- --nodes 1000 --seed 1 [--loss 0.05] [--lookups 1000] [--open] [--workers 2]
//
// --workers N (uniform topology): the fleet runs on N worker threads in conservative time windows
// (@coral/sim's ParallelFleet; deterministic for a seed and N); --workers 1 is the in-process
// SimFleet, single-threaded. The geo topology always runs in process.
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
import {
  keyFromName,
  toHex,
  LOADED_STORES,
  DshtClusterBinding,
  DEFAULT_LEVEL_THRESHOLDS_MS,
} from '../packages/dsht/dist/index.js';
import {
  SimFleet,
  LocalFleetDriver,
  ParallelFleet,
  geoTopology,
  purityReport,
  trustPart,
} from '../packages/sim/dist/index.js';

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
    // Worker threads of the uniform run: 1 = the in-process SimFleet (single-threaded).
    workers: { type: 'string', default: '2' },
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
    authBytesPerDatagram: t.sealed ? Number((t.authBytes / t.sealed).toFixed(2)) : 0,
  };
}
/** Trust figures over an in-process SimFleet (the geo run). */
const trustOf = (fleet) => trustFigures(trustPart(fleet.nodes));

const wallStart = performance.now();
/** Peak resident set size of this process so far, in MB (the kernel's high-water mark). */
const peakRssMB = () => Math.round(process.resourceUsage().maxRSS / 1024);
/** A progress line on stderr (phase, wall seconds, peak RSS): a long run stopped early still says how far it got. */
const progress = (phase) =>
  console.error(
    `bench:dsht: ${phase} after ${((performance.now() - wallStart) / 1000).toFixed(1)} s wall, peak RSS ${peakRssMB()} MB`,
  );
const enc = (s) => new TextEncoder().encode(s);
const pct = (sorted, p) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : 0;
const rng = new SeededRandom(seed * 7919 + 1);
if (args.topology === 'geo') {
  await runGeo();
  process.exit(0);
}

const fleet =
  workers === 1
    ? new LocalFleetDriver({ nodes, seed, lossRate: loss, keys })
    : new ParallelFleet({ nodes, seed, lossRate: loss, keys, workers });
await fleet.start({ onProgress: onJoin });
const joinWall = (performance.now() - wallStart) / 1000;
progress(`${nodes} nodes joined`);
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
progress(`${lookups} puts`);

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
progress(`${lookups} gets`);
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
  progress(`hot key minute ${m + 1}`);
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
  authBytesPerDatagram: trust.authBytesPerDatagram,
  datagrams: net.sent,
  datagramsLost: net.lost,
  simulatedSeconds: Math.round((fleet.now() - 1_700_000_000_000) / 1000),
  joinWallSeconds: Number(joinWall.toFixed(1)),
  wallSeconds: Number(((performance.now() - wallStart) / 1000).toFixed(1)),
  peakRssMB: peakRssMB(),
};
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

/**
 * Geographic run (issue 3): nodes in metros in regions (geoTopology), three levels with the
 * clustering binding, then Coral's workload — each metro's nodes ask mostly for the same popular
 * keys (Zipf, s = 1): a node gets a key, then announces itself as a holder (put), so local copies
 * appear. Every key is first put by a random "seeder" so every get has something to find. The same
 * topology, seed and workload then run flat (one level, no clustering) for comparison.
 */
async function runGeo() {
  const regions = Number(args.regions);
  const metrosPerRegion = Number(args.metros);
  const requests = Number(args.requests);
  const clusterMinutes = Number(args['cluster-minutes']);
  const keysCount = Math.max(10, Math.round(lookups / 5));
  const topo = geoTopology({ seed, regions, metrosPerRegion, nodes });
  const thresholds = DEFAULT_LEVEL_THRESHOLDS_MS;

  // Zipf over keys, drawn per metro with the metro's own ranking so metros differ.
  const zipfCdf = (() => {
    const w = Array.from({ length: keysCount }, (_, i) => 1 / (i + 1));
    const total = w.reduce((a, b) => a + b, 0);
    let acc = 0;
    return w.map((x) => (acc += x / total));
  })();
  const metros = topo.metros;
  const wrng = new SeededRandom(seed * 104729 + 7);
  const rankOf = new Map(metros.map((m) => [m, shuffleCopy([...Array(keysCount).keys()], wrng)]));
  const workload = Array.from({ length: requests }, () => {
    const node = wrng.int(nodes);
    const u = wrng.next();
    let r = zipfCdf.findIndex((c) => u <= c);
    if (r < 0) r = keysCount - 1;
    return { node, key: rankOf.get(topo.nodes[node].metro)[r] };
  });
  const seeders = Array.from({ length: keysCount }, () => wrng.int(nodes));

  async function runOnce(hierarchical) {
    const start = performance.now();
    const bindings = hierarchical ? topo.nodes.map(() => new DshtClusterBinding()) : [];
    const fleet = new SimFleet({
      nodes,
      seed,
      latencyMs: topo.latencyMs,
      ipOf: (i) => topo.nodes[i].ip,
      dsht: { levels: hierarchical ? 3 : 1, service: { httpPort: 8090 } },
      clusterFor: hierarchical ? (i) => bindings[i] : undefined,
      keys,
    });
    fleet.setLoss(loss);
    if (hierarchical) fleet.nodes.forEach((n, i) => bindings[i].attach(n));
    await fleet.start();
    const sleep = (ms) => fleet.run(new Promise((r) => fleet.clock.setTimeout(r, ms)));
    if (hierarchical) await sleep(clusterMinutes * 60_000);
    const clusterWall = (performance.now() - start) / 1000;
    const key = (k) => keyFromName(`geo-${seed}-${k}`);
    const holder = (i) => enc(`holder-${i}`);
    await batchedOn(
      fleet,
      seeders.map((n, k) => ({ n, k })),
      200,
      ({ n, k }) => fleet.nodes[n].put(key(k), holder(n), 3600).catch(() => undefined),
    );
    const results = [];
    const announced = new Set(seeders.map((n, k) => `${n}:${k}`));
    // Requests arrive in waves of 100, so earlier announcements are there for later gets.
    for (let i = 0; i < workload.length; i += 100) {
      const wave = workload.slice(i, i + 100);
      const out = await batchedOn(fleet, wave, 100, async (w) => {
        const node = fleet.nodes[w.node];
        const r = await node.get(key(w.key)).catch(() => undefined);
        if (r && r.values.length > 0) {
          // Announce the copy this node now holds (most local level first).
          await node.put(key(w.key), holder(w.node), 3600).catch(() => undefined);
          announced.add(`${w.node}:${w.key}`);
        }
        return r
          ? {
              ok: r.values.length > 0,
              level: r.stats.level,
              hops: r.stats.hops,
              messages: r.stats.messages,
              latencyMs: r.stats.latencyMs,
            }
          : { ok: false };
      });
      results.push(...out);
    }
    let purity;
    let clusters;
    if (hierarchical) {
      const assignment = new Map(
        topo.nodes.map((n, i) => [n.ip, [0, 1, 2].map((l) => bindings[i].manager.clusterOf(l))]),
      );
      const reports = [1, 2].map((l) => purityReport(l, assignment, topo.baseRttMs, thresholds[l]));
      purity = { 1: Number(reports[0].purity.toFixed(4)), 2: Number(reports[1].purity.toFixed(4)) };
      clusters = { 0: 1, 1: reports[0].clusters, 2: reports[1].clusters };
    }
    let churned;
    const churn = Number(args.churn);
    if (hierarchical && churn > 0) {
      // A fraction of the fleet leaves abruptly; three minutes later the surviving publishers re-put
      // what they hold, then random survivors get random workload keys.
      const crng = new SeededRandom(seed * 31 + 5);
      const gone = new Set(
        shuffleCopy([...Array(nodes).keys()], crng).slice(0, Math.round(nodes * churn)),
      );
      await fleet.run(Promise.all([...gone].map((i) => fleet.nodes[i].stop())));
      await sleep(3 * 60_000);
      const reputs = [...announced]
        .map((a) => a.split(':').map(Number))
        .filter(([n]) => !gone.has(n));
      await batchedOn(fleet, reputs, 200, ([n, k]) =>
        fleet.nodes[n].put(key(k), holder(n), 3600).catch(() => undefined),
      );
      const alive = [...Array(nodes).keys()].filter((i) => !gone.has(i));
      const probes = Array.from({ length: 1000 }, () => ({
        node: alive[crng.int(alive.length)],
        key: workload[crng.int(workload.length)].key,
      }));
      const got = await batchedOn(fleet, probes, 200, (p) =>
        fleet.nodes[p.node].get(key(p.key)).then(
          (r) => r.values.length > 0,
          () => false,
        ),
      );
      const assignmentAlive = new Map(
        alive.map((i) => [
          topo.nodes[i].ip,
          [0, 1, 2].map((l) => bindings[i].manager.clusterOf(l)),
        ]),
      );
      const rep = [1, 2].map((l) =>
        purityReport(l, assignmentAlive, topo.baseRttMs, thresholds[l]),
      );
      churned = {
        left: gone.size,
        reputs: reputs.length,
        getSuccess: got.filter(Boolean).length / got.length,
        clusterPurity: { 1: Number(rep[0].purity.toFixed(4)), 2: Number(rep[1].purity.toFixed(4)) },
        clusters: { 1: rep[0].clusters, 2: rep[1].clusters },
      };
    }
    return { results, purity, clusters, fleet, clusterWall, churned };
  }

  // A churn run measures the clustered fleet only (no flat comparison).
  const h = await runOnce(true);
  const f = Number(args.churn) > 0 ? undefined : await runOnce(false);
  const summarize = (results) => {
    const ok = results.filter((r) => r.ok);
    const lat = ok.map((r) => r.latencyMs).sort((a, b) => a - b);
    const hops = ok.map((r) => r.hops).sort((a, b) => a - b);
    const at = [2, 1, 0].map(
      (l) => ok.filter((r) => r.level === l).length / Math.max(1, ok.length),
    );
    return {
      getSuccess: ok.length / results.length,
      hopsP50: pct(hops, 0.5),
      hopsP95: pct(hops, 0.95),
      msgsPerGet: Number(
        (results.reduce((s, r) => s + (r.messages ?? 0), 0) / results.length).toFixed(2),
      ),
      p50: Math.round(pct(lat, 0.5)),
      p95: Math.round(pct(lat, 0.95)),
      at,
    };
  };
  const hs = summarize(h.results);
  const none = { getSuccess: null, p50: null, p95: null, msgsPerGet: null };
  const fs = f ? summarize(f.results) : none;
  const result = {
    bench: 'dsht',
    topology: 'geo',
    nodes,
    seed,
    lossRate: loss,
    regions,
    metros: metros.length,
    requests,
    keys: keysCount,
    clusters: h.clusters,
    clusterPurity: h.purity,
    getSuccess: hs.getSuccess,
    hopsP50: hs.hopsP50,
    hopsP95: hs.hopsP95,
    msgsPerGet: hs.msgsPerGet,
    answeredAtLevel: {
      2: Number(hs.at[0].toFixed(4)),
      1: Number(hs.at[1].toFixed(4)),
      0: Number(hs.at[2].toFixed(4)),
    },
    getLatencyP50Ms: hs.p50,
    getLatencyP95Ms: hs.p95,
    flatGetSuccess: fs.getSuccess,
    flatGetLatencyP50Ms: fs.p50,
    flatGetLatencyP95Ms: fs.p95,
    flatMsgsPerGet: fs.msgsPerGet,
    clusterMinutes,
    ...(h.churned ? { churn: h.churned } : {}),
    mode,
    amplificationMax: Math.max(
      trustOf(h.fleet).amplificationMax,
      f ? trustOf(f.fleet).amplificationMax : 0,
    ),
    authBytesPerDatagram: trustOf(h.fleet).authBytesPerDatagram,
    datagrams: h.fleet.network.stats.sent + (f?.fleet.network.stats.sent ?? 0),
    wallSeconds: Number(((performance.now() - wallStart) / 1000).toFixed(1)),
    peakRssMB: peakRssMB(),
  };
  const rows = [
    ['mode', mode],
    ['nodes / regions / metros', `${nodes} / ${regions} / ${metros.length}`],
    ['clusters at level 1 / 2', `${h.clusters[1]} / ${h.clusters[2]}`],
    ['cluster purity level 1 / 2', `${h.purity[1]} / ${h.purity[2]}`],
    ['requests (keys, Zipf s=1)', `${requests} (${keysCount})`],
    [
      'gets found: clustered / flat',
      `${(hs.getSuccess * 100).toFixed(2)}% / ${f ? (fs.getSuccess * 100).toFixed(2) + '%' : 'n/a'}`,
    ],
    ['answered at level 2 / 1 / 0', hs.at.map((x) => `${(x * 100).toFixed(1)}%`).join(' / ')],
    ['get latency p50 / p95 clustered (sim ms)', `${hs.p50} / ${hs.p95}`],
    ['get latency p50 / p95 flat (sim ms)', `${fs.p50} / ${fs.p95}`],
    ['hops p50 / p95, msgs per get (clustered)', `${hs.hopsP50} / ${hs.hopsP95}, ${hs.msgsPerGet}`],
    ['msgs per get (flat)', fs.msgsPerGet],
    ...(h.churned
      ? [
          ['churn: nodes left / re-puts', `${h.churned.left} / ${h.churned.reputs}`],
          ['churn: gets found afterwards', `${(h.churned.getSuccess * 100).toFixed(2)}%`],
          [
            'churn: purity level 1 / 2',
            `${h.churned.clusterPurity[1]} / ${h.churned.clusterPurity[2]}`,
          ],
        ]
      : []),
    [
      'amplification max / auth bytes per datagram',
      `${result.amplificationMax} / ${result.authBytesPerDatagram}`,
    ],
    ['wall time', `${result.wallSeconds} s (clusters formed after ${h.clusterWall.toFixed(1)} s)`],
    ['peak RSS', `${result.peakRssMB} MB`],
  ];
  const w = Math.max(...rows.map((r) => r[0].length));
  for (const [k, v] of rows) console.log(`${k.padEnd(w)}  ${v}`);
  console.log(JSON.stringify(result));
}

function shuffleCopy(a, r) {
  for (let i = a.length - 1; i > 0; i--) {
    const j = r.int(i + 1);
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

async function batchedOn(fleet, items, size, fn) {
  const out = [];
  for (let i = 0; i < items.length; i += size) {
    out.push(...(await fleet.run(Promise.all(items.slice(i, i + size).map(fn)))));
  }
  return out;
}
