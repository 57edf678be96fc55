// Memory of the DSHT value store (issue 12's rss100kMB counts a node holding 100,000 DSHT values):
// fills a ValueStore with --values values (distinct keys, --bytes bytes each, --publishers
// publishers, one source host per publisher), then reports the V8 heap and RSS it costs, and the
// time and memory of a restart: the values persisted in a LevelDB and loaded back into a new store.
//
//   node --expose-gc bench/dsht-store.mjs [--values 100000] [--bytes 100] [--publishers 1000]
//
// Prints a table and ends with one JSON line. Runs the compiled package (`tsc -b` first).
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Level } from 'level';
import { ManualClock, SeededRandom } from '../packages/testkit/dist/index.js';
import {
  ValueStore,
  Persistence,
  keyFromName,
  restoreState,
} from '../packages/dsht/dist/internal.js';

const { values: args } = parseArgs({
  options: {
    values: { type: 'string', default: '100000' },
    bytes: { type: 'string', default: '100' },
    publishers: { type: 'string', default: '1000' },
    // Internal: load the store persisted in this directory (the restart, in a fresh process).
    restore: { type: 'string' },
  },
});
const count = Number(args.values);
const size = Number(args.bytes);
const publishers = Number(args.publishers);
if (!globalThis.gc) {
  console.error('bench:dsht-store: run with node --expose-gc');
  process.exit(2);
}
const MB = 2 ** 20;
const mem = () => {
  globalThis.gc();
  globalThis.gc();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, ext: m.external, rss: m.rss };
};
const clock = new ManualClock(1_700_000_000_000);
if (args.restore) {
  // The restart: a new store, loaded from the database; prints one JSON object for the parent.
  const base = mem();
  const db = new Level(args.restore, { valueEncoding: 'utf8' });
  await db.open();
  const store = new ValueStore({ clock, random: new SeededRandom(1) });
  const t = performance.now();
  await restoreState(new Persistence({ db }), store);
  const seconds = Number(((performance.now() - t) / 1000).toFixed(2));
  await db.close();
  const m = mem();
  console.log(
    JSON.stringify({
      values: store.size,
      seconds,
      heapMB: Number(((m.heap - base.heap) / MB).toFixed(1)),
      rssMB: Math.round(m.rss / MB),
      peakRssMB: Math.round(process.resourceUsage().maxRSS / 1024),
    }),
  );
  process.exit(0);
}
const pubs = Array.from({ length: publishers }, (_, i) => keyFromName(`publisher-${i}`));
const dir = mkdtempSync(join(tmpdir(), 'dsht-store-'));

const before = mem();
const store = new ValueStore({ clock, random: new SeededRandom(1) });
const value = new Uint8Array(size).fill(7);
let t = performance.now();
for (let i = 0; i < count; i++) {
  const status = store.store(0, keyFromName(`key-${i}`), pubs[i % publishers], value, 3600, {
    source: `10.0.${(i % publishers) >> 8}.${(i % publishers) & 255}`,
  });
  if (status !== 0) throw new Error(`store ${i}: status ${status}`);
}
const fillMs = performance.now() - t;
const filled = mem();
const fp = store.footprint;

// Persist every value (as write-through does), then close the database.
const db = new Level(dir, { valueEncoding: 'utf8' });
await db.open();
const p = new Persistence({ db });
for (const v of store.all()) p.putValue(v);
await p.close();
const dbBytes = readdirSync(dir).reduce((n, f) => n + statSync(join(dir, f)).size, 0);

// Restart: a fresh process loads what was persisted into a new store.
const restart = JSON.parse(
  execFileSync(
    process.execPath,
    ['--expose-gc', fileURLToPath(import.meta.url), '--restore', dir],
    {
      encoding: 'utf8',
    },
  ),
);
rmSync(dir, { recursive: true, force: true });
if (store.size !== count || restart.values !== count)
  throw new Error(`stored ${store.size}, restored ${restart.values} of ${count}`);

const result = {
  bench: 'dsht-store',
  values: count,
  valueBytes: size,
  publishers,
  heapPerValueB: Math.round((filled.heap - before.heap) / count),
  heapMB: Number(((filled.heap - before.heap) / MB).toFixed(1)),
  externalMB: Number(((filled.ext - before.ext) / MB).toFixed(1)),
  rssMB: Math.round(filled.rss / MB),
  arenaMB: Number((fp.arena / MB).toFixed(1)),
  arenaUsedMB: Number((fp.arenaUsed / MB).toFixed(1)),
  slotArraysMB: Number((fp.slots / MB).toFixed(1)),
  recordArraysMB: Number((fp.records / MB).toFixed(1)),
  indexMB: Number((fp.index / MB).toFixed(1)),
  dbMB: Number((dbBytes / MB).toFixed(1)),
  fillSeconds: Number((fillMs / 1000).toFixed(2)),
  restoreSeconds: restart.seconds,
  restoredHeapMB: restart.heapMB,
  restoredRssMB: restart.rssMB,
  restartPeakRssMB: restart.peakRssMB,
};
const rows = [
  ['values (bytes each, publishers)', `${count} (${size}, ${publishers})`],
  ['store heap (per value)', `${result.heapMB} MB (${result.heapPerValueB} B)`],
  ['store external (buffers, typed arrays)', `${result.externalMB} MB`],
  ['RSS after fill', `${result.rssMB} MB`],
  [
    'arena (used), slot / record arrays, index',
    `${result.arenaMB} (${result.arenaUsedMB}), ${result.slotArraysMB} / ${result.recordArraysMB}, ${result.indexMB} MB`,
  ],
  ['database on disk', `${result.dbMB} MB`],
  ['fill time', `${result.fillSeconds} s`],
  ['restart: load time', `${result.restoreSeconds} s`],
  ['restart: store heap', `${result.restoredHeapMB} MB`],
  ['restart: RSS after load', `${result.restoredRssMB} MB`],
  ['restart: peak RSS', `${result.restartPeakRssMB} MB`],
];
const w = Math.max(...rows.map((r) => r[0].length));
for (const [k, v] of rows) console.log(`${k.padEnd(w)}  ${v}`);
console.log(JSON.stringify(result));
