#!/usr/bin/env node
// bench:soak's origin, a process of its own (as bench:flash's: in the bench's process it would
// answer at the pace of the clients' and the slowloris crowd's event loop). The fleet's
// SampleOrigin over bench/lib/soak-catalog.mjs's objects: SOAK_LARGE_BYTES (comma-separated
// sizes of the large objects, generated before it listens), cacheable for a day so that no
// object goes stale within a run (a revalidation would be an origin request that is no miss).
//
// stdout: first `{"port":P,"largeSha256":[...]}` (the SHA-256 of each large object as served),
// then its request log, one line per request answered: `{"t":ms,"path":"/obj/7","via":"..."}`.
// `t` is when the origin saw the count go up, read every 100 ms (SampleOrigin counts each request
// as it arrives), so a request is dated at most 100 ms late. Stops on SIGTERM/SIGINT, or when the
// bench goes away (stdin closed).
import { createHash } from 'node:crypto';
import { SampleOrigin } from '@coral/node/fleet';
import { soakObjectBytes } from './soak-catalog.mjs';

const largeBytes = (process.env.SOAK_LARGE_BYTES ?? '').split(',').filter(Boolean).map(Number);
const origin = new SampleOrigin({
  host: '127.0.0.1',
  port: 0,
  objects: Number.MAX_SAFE_INTEGER,
  objectBytes: (i) => soakObjectBytes(i, largeBytes),
  cacheControl: 'public, max-age=86400',
});
// The large bodies are made now: generating 40 MB takes the origin's event loop a second or two.
const largeSha256 = largeBytes.map((_, i) =>
  createHash('sha256').update(origin.body(i)).digest('hex'),
);
const { port } = await origin.listen();
process.stdout.write(JSON.stringify({ port, largeSha256 }) + '\n');

const logged = new Map();
let loggedTotal = 0;
const timer = setInterval(() => {
  if (origin.total === loggedTotal) return;
  loggedTotal = origin.total;
  const t = Date.now();
  const lines = [];
  for (const [path, n] of origin.counts) {
    const before = logged.get(path) ?? 0;
    if (n === before) continue;
    const via = origin.via.get(path) ?? [];
    for (let k = before; k < n; k++) lines.push(JSON.stringify({ t, path, via: via[k] ?? '' }));
    logged.set(path, n);
  }
  process.stdout.write(lines.join('\n') + '\n');
}, 100);

const stop = () => {
  clearInterval(timer);
  void origin.close().then(() => process.exit(0));
};
for (const signal of ['SIGTERM', 'SIGINT']) process.once(signal, stop);
process.stdin.on('end', stop).resume();
