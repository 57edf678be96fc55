// DSHT simulation benchmark: a fleet on the simulated network (ManualClock, seeded), random puts and
// gets, then every node putting the same hot key for 5 simulated minutes.
//
//   npm run bench:dsht -- --nodes 1000 --seed 1 [--loss 0.05] [--lookups 1000]
//
// Prints a table and ends with one JSON line. Runs the compiled package (`tsc -b` first).
import { parseArgs } from 'node:util';
import { SeededRandom } from '../packages/testkit/dist/index.js';
import {
  SimFleet,
  keyFromName,
  toHex,
  compareDistance,
  LOADED_STORES,
} from '../packages/dsht/dist/index.js';

const { values: args } = parseArgs({
  options: {
    nodes: { type: 'string', default: '1000' },
    seed: { type: 'string', default: '1' },
    loss: { type: 'string', default: '0' },
    lookups: { type: 'string', default: '1000' },
    'hot-minutes': { type: 'string', default: '5' },
  },
});
const nodes = Number(args.nodes);
const seed = Number(args.seed);
const loss = Number(args.loss);
const lookups = Number(args.lookups);
const hotMinutes = Number(args['hot-minutes']);
for (const [k, v] of Object.entries({ nodes, seed, loss, lookups, hotMinutes })) {
  if (!Number.isFinite(v) || v < 0 || (k === 'loss' && v >= 1)) {
    console.error(`bench:dsht: bad --${k}`);
    process.exit(2);
  }
}

const wallStart = performance.now();
const enc = (s) => new TextEncoder().encode(s);
const pct = (sorted, p) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : 0;
const rng = new SeededRandom(seed * 7919 + 1);

const fleet = new SimFleet({ nodes, seed, lossRate: 0 });
fleet.setLoss(loss);
await fleet.start();
const joinWall = (performance.now() - wallStart) / 1000;
const sizes = fleet.nodes.map((n) => n.table(0).size).sort((a, b) => a - b);

/** Run async jobs with bounded concurrency, all under the simulated clock. */
async function batched(items, size, fn) {
  const out = [];
  for (let i = 0; i < items.length; i += size) {
    out.push(...(await fleet.run(Promise.all(items.slice(i, i + size).map(fn)))));
  }
  return out;
}

// Random puts: `lookups` keys, each put by a random node.
const puts = Array.from({ length: lookups }, (_, i) => ({
  key: keyFromName(`bench-${seed}-${i}`),
  by: rng.int(nodes),
  i,
}));
const putResults = await batched(puts, 250, (p) =>
  fleet.nodes[p.by].put(p.key, enc(`value-${p.i}`), 3600).then(
    () => true,
    () => false,
  ),
);
const putOk = putResults.filter(Boolean).length;

// Random gets: each put key fetched by a different random node.
const gets = puts.map((p) => {
  let by = rng.int(nodes);
  if (by === p.by) by = (by + 1) % nodes;
  return { ...p, by };
});
const getResults = await batched(gets, 250, (g) =>
  fleet.nodes[g.by].get(g.key).then(
    (r) => ({
      ok: r.values.some((v) => new TextDecoder().decode(v) === `value-${g.i}`),
      stats: r.stats,
    }),
    () => ({ ok: false, stats: { hops: 0, messages: 0, latencyMs: 0 } }),
  ),
);
const found = getResults.filter((r) => r.ok);
const hops = found.map((r) => r.stats.hops).sort((a, b) => a - b);
const lat = found.map((r) => r.stats.latencyMs).sort((a, b) => a - b);
const msgs = getResults.reduce((s, r) => s + r.stats.messages, 0) / Math.max(1, getResults.length);

// Hot key: every node puts the same key once per simulated minute, at a random moment in it.
const hot = keyFromName(`hot-${seed}`);
const slot = `0:${toHex(hot)}`;
const root = [...fleet.nodes].sort((a, b) => compareDistance(a.id, b.id, hot))[0];
const perMinute = [];
const requestsPerMinute = [];
let hotPutsOk = 0;
let hotPuts = 0;
for (let m = 0; m < hotMinutes; m++) {
  const before = root.store.accepted.get(slot) ?? 0;
  const requestsBefore = root.store.requests.get(slot) ?? 0;
  const minuteStart = fleet.clock.now();
  const jobs = fleet.nodes.map(
    (node, i) =>
      new Promise((resolve) => {
        fleet.clock.setTimeout(() => {
          hotPuts++;
          node.put(hot, enc(`hot-holder-${i}`), 600).then(
            () => {
              hotPutsOk++;
              resolve(undefined);
            },
            () => resolve(undefined),
          );
        }, rng.next() * 60_000);
      }),
  );
  await fleet.run(Promise.all(jobs));
  // Close the minute on the clock before counting.
  const left = minuteStart + 60_000 - fleet.clock.now();
  if (left > 0) await fleet.run(new Promise((r) => fleet.clock.setTimeout(r, left)));
  perMinute.push((root.store.accepted.get(slot) ?? 0) - before);
  requestsPerMinute.push((root.store.requests.get(slot) ?? 0) - requestsBefore);
}
const hotHolders = fleet.nodes.filter((n) => n.localGet(hot).length > 0).length;
const hotGets = await batched(
  Array.from({ length: 100 }, () => rng.int(nodes)),
  100,
  (i) =>
    fleet.nodes[i].get(hot).then(
      (r) => r.values.length > 0,
      () => false,
    ),
);

const hotKeyBound = LOADED_STORES * Math.ceil(Math.log2(nodes));
const result = {
  bench: 'dsht',
  topology: 'uniform',
  nodes,
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
  hotKeyGetSuccess: hotGets.filter(Boolean).length / hotGets.length,
  tableSizeP50: pct(sizes, 0.5),
  datagrams: fleet.network.stats.sent,
  datagramsLost: fleet.network.stats.lost,
  simulatedSeconds: Math.round((fleet.clock.now() - 1_700_000_000_000) / 1000),
  joinWallSeconds: Number(joinWall.toFixed(1)),
  wallSeconds: Number(((performance.now() - wallStart) / 1000).toFixed(1)),
};

const rows = [
  ['nodes', nodes],
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
  ['datagrams (lost)', `${result.datagrams} (${result.datagramsLost})`],
  ['simulated time', `${result.simulatedSeconds} s`],
  ['wall time (join)', `${result.wallSeconds} s (${result.joinWallSeconds} s)`],
];
const w = Math.max(...rows.map((r) => r[0].length));
for (const [k, v] of rows) console.log(`${k.padEnd(w)}  ${v}`);
console.log(JSON.stringify(result));
