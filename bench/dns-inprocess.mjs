// npm run bench:dns-inprocess — what one answer costs the DNS server, in process (no sockets):
// `DnsServer.handlePacket` over many distinct names, per case, on a manual clock.
//
//   hit        every name asked before (its answer cached)
//   new name   names never asked before, from a resolver already seen
//   expired    every name again after the answers' TTL has passed (rebuilds)
//   no cache   the answer cache disabled: every answer located, built and encoded
//
// Several builds of dnssrv can be compared in one process (an A/B), runs alternated, best of
// --rounds: --dist a/dist/index.js,b/dist/index.js (default: this tree's build). Prints a table and
// ends with one JSON line. Options: --names N (default 10000), --rounds N (default 8).
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { ManualClock } from '../packages/testkit/dist/index.js';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
};
const nNames = Number(arg('names', 10000));
const rounds = Number(arg('rounds', 8));
const dists = arg('dist', 'packages/dnssrv/dist/index.js').split(',');

const builds = await Promise.all(
  dists.map(async (d) => ({ dist: d, mod: await import(pathToFileURL(resolve(d)).href) })),
);

/** A query for `name`: A, EDNS, random 0x20 case, as resolvers send them. */
function query(name, id) {
  const labels = name
    .split('.')
    .map((l) => [...l].map((c, i) => ((id + i) % 3 === 0 ? c.toUpperCase() : c)).join(''));
  const parts = [Buffer.from([id >> 8, id & 0xff, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1])];
  for (const l of labels) parts.push(Buffer.from([l.length]), Buffer.from(l));
  parts.push(Buffer.from([0, 0, 1, 0, 1]));
  parts.push(Buffer.from([0, 0, 41, 4, 0xd0, 0, 0, 0, 0, 0, 0]));
  return Buffer.concat(parts);
}
const names = (prefix) =>
  Array.from({ length: nNames }, (_, i) => `www.${prefix}${i}.example.com.nyud.net`);
const queries = (list) => list.map((n, i) => query(n, i & 0xffff));

function server(mod, clock, cache) {
  const hex = (i) => i.toString(16).padStart(40, '0');
  const dir = new mod.InMemoryNodeDirectory(
    {},
    { self: { id: hex(1), ipv4: '10.0.0.1', httpPort: 8090 } },
  );
  for (let i = 2; i <= 20; i++) {
    dir.add(
      { id: hex(i), ipv4: `10.0.0.${i}`, httpPort: 8090 },
      { clusters: i < 6 ? [1, 2] : [1] },
    );
  }
  return new mod.DnsServer(
    { directory: dir, clock },
    {
      nameservers: [{ name: 'ns1.nyud.net', ipv4: '127.0.0.1' }],
      rrl: { responsesPerSecond: 0 },
      probe: { enabled: false },
      answerCache: { enabled: cache, maxEntries: 2 * nNames + 100 },
    },
  );
}

let scavenges = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) scavenges++;
  }
}).observe({ entryTypes: ['gc'] });

const peer = { address: '198.51.100.7', port: 5300 };
async function pass(srv, qs) {
  await new Promise((r) => setTimeout(r, 5));
  const s0 = scavenges;
  const t0 = process.hrtime.bigint();
  for (const q of qs) {
    const r = await srv.handlePacket(q, peer);
    if (!r || r.length < 40) throw new Error('no answer');
  }
  const us = Number(process.hrtime.bigint() - t0) / 1e3 / qs.length;
  await new Promise((r) => setTimeout(r, 5)); // 'gc' entries are delivered asynchronously
  return { us, scavengesPer10k: ((scavenges - s0) * 1e4) / qs.length };
}

/** One round of every case for one build. */
async function round(mod, r) {
  const out = {};
  const clock = new ManualClock(1_000_000);
  const srv = server(mod, clock, true);
  const seen = queries(names(`seen${r}-`));
  await pass(srv, seen); // cached now
  out.hit = await pass(srv, seen);
  out['new name'] = await pass(srv, queries(names(`new${r}-`)));
  await clock.advance(61_000); // past every TTL (30 s and the 60 s local one)
  out.expired = await pass(srv, seen);
  await srv.close();
  const plain = server(mod, new ManualClock(1_000_000), false);
  out['no cache'] = await pass(plain, seen.slice(0, Math.min(seen.length, 2000)));
  await plain.close();
  return out;
}

const cases = ['hit', 'new name', 'expired', 'no cache'];
const best = builds.map(() => Object.fromEntries(cases.map((c) => [c, { us: Infinity }])));
for (let r = 0; r < rounds; r++) {
  for (const [i, b] of builds.entries()) {
    const got = await round(b.mod, r * builds.length + i);
    for (const c of cases) if (got[c].us < best[i][c].us) best[i][c] = got[c];
  }
}

console.log(
  `DNS answer cost in process — handlePacket, ${nNames} names, best of ${rounds} rounds, node ${process.version}`,
);
console.log(`case      | ${builds.map((b) => `${b.dist.padEnd(34)}`).join(' | ')}`);
for (const c of cases) {
  console.log(
    `${c.padEnd(9)} | ${best
      .map((b) =>
        `${b[c].us.toFixed(2).padStart(7)} µs/q, ${b[c].scavengesPer10k.toFixed(1).padStart(5)} scav/10k`.padEnd(
          34,
        ),
      )
      .join(' | ')}`,
  );
}
console.log(
  JSON.stringify({
    bench: 'dns-inprocess',
    names: nNames,
    rounds,
    builds: builds.map((b, i) => ({
      dist: b.dist,
      ...Object.fromEntries(
        cases.map((c) => [
          c.replace(' ', ''),
          {
            us: Number(best[i][c].us.toFixed(2)),
            scavengesPer10k: Number(best[i][c].scavengesPer10k.toFixed(1)),
          },
        ]),
      ),
    })),
  }),
);
