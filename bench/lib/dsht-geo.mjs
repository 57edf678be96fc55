// bench:dsht's geographic run (`--topology geo`, issue 3), in process (SimFleet, one thread): the
// uniform run's parallel fleet does not take a topology's latency model.
import { SeededRandom } from '../../packages/testkit/dist/index.js';
import { keyFromName, DEFAULT_LEVEL_THRESHOLDS_MS } from '../../packages/dsht/dist/index.js';
import { SimFleet, geoTopology, purityReport } from '../../packages/sim/dist/index.js';

export const enc = (s) => new TextEncoder().encode(s);
export const pct = (sorted, p) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : 0;

/**
 * Geographic run (issue 3): nodes in metros in regions (geoTopology), three levels with the
 * clustering binding, then Coral's workload — each metro's nodes ask mostly for the same popular
 * keys (Zipf, s = 1): a node gets a key, then announces itself as a holder (put), so local copies
 * appear. Every key is first put by a random "seeder" so every get has something to find. The same
 * topology, seed and workload then run flat (one level, no clustering) for comparison.
 */
export async function runGeo(ctx) {
  const { args, nodes, seed, loss, lookups, keys, mode, wallStart, peakRssMB, trustOf } = ctx;
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
    const fleet = new SimFleet({
      nodes,
      seed,
      latencyMs: topo.latencyMs,
      ipOf: (i) => topo.nodes[i].ip,
      dsht: {
        levels: hierarchical ? 3 : 1,
        service: { httpPort: 8090 },
        ...(hierarchical ? { clustering: {} } : {}),
      },
      keys,
    });
    fleet.setLoss(loss);
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
        topo.nodes.map((n, i) => [
          n.ip,
          [0, 1, 2].map((l) => fleet.nodes[i].clustering.manager.clusterOf(l)),
        ]),
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
          [0, 1, 2].map((l) => fleet.nodes[i].clustering.manager.clusterOf(l)),
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
