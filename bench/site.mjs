#!/usr/bin/env node
// Campus benchmark: `npm run bench:site`. A 30-object site (an HTML page linking 30 objects of
// varied sizes) is served by an origin behind an emulated inter-ISP bottleneck (default 1 MB/s
// shared, 80 ms added per response). A browser-like client (6 parallel connections) downloads the
// whole site (a) directly from the origin and (b) through the fleet after another client of the
// same campus visited it first: campus resolvers ask a node's DNS server, whose view for the
// campus network answers with the campus's node, as in the campus seed; (c) also through a node
// the first visitor did not use, which serves peer copies.
// Prints a table, then one JSON line with directMs, viaCoralMs, speedup (target >= 15x; the campus
// paper measured 7.8x by day and 12.4x at the evening peak).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Fleet, SampleOrigin, fetchVia, resolveThrough } from '@coral/node/fleet';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '3' },
    objects: { type: 'string', default: '30' },
    'bytes-per-second': { type: 'string', default: '1000000' },
    'latency-ms': { type: 'string', default: '80' },
    connections: { type: 'string', default: '6' },
  },
});
const nodes = Number(values.nodes);
const objects = Number(values.objects);
const bytesPerSecond = Number(values['bytes-per-second']);
const latencyMs = Number(values['latency-ms']);
const connections = Number(values.connections);
// Sizes like a small web page: 8 KiB to ~120 KiB, deterministic.
const sizeOf = (i) => 8 * 1024 + ((i * 37_813) % (112 * 1024));

const origin = new SampleOrigin({
  host: '127.0.0.1',
  objects,
  objectBytes: sizeOf,
  bottleneck: { latencyMs, bytesPerSecond },
});
const { port } = await origin.listen();
const dataRoot = mkdtempSync(join(tmpdir(), 'coral-site-'));
// The campus seed's split-horizon DNS: resolvers of the campus network (127.202.0.0/16 here) are
// answered with the campus's own cache, the last node (region "campus").
const campusNet = '127.202.0.0/16';
const configFile = join(dataRoot, 'fleet.yaml');
writeFileSync(configFile, `dns:\n  views:\n    - { cidr: ${campusNet}, region: campus }\n`);
const fleet = new Fleet({
  nodes,
  dataRoot,
  env: {
    CORAL_CONFIG: configFile,
    CORAL_ALLOW_PRIVATE_ORIGINS: 'true',
    CORAL_HOSTS: 'www.origin.test=127.0.0.1',
  },
  nodeEnv: (i) => (i === nodes - 1 ? { CORAL_REGION: 'campus' } : {}),
});
const name = `www.origin.test.${port}.nyud.net`;
const paths = ['/', ...Array.from({ length: objects }, (_, i) => `/obj/${i}`)];
const totalBytes = paths.slice(1).reduce((s, _p, i) => s + sizeOf(i), 0);

/** Download the page, then every object over `connections` parallel keep-alive connections. */
async function downloadSite(get) {
  const t0 = performance.now();
  await get('/');
  const queue = paths.slice(1);
  await Promise.all(
    Array.from({ length: connections }, async () => {
      for (let p = queue.shift(); p !== undefined; p = queue.shift()) await get(p);
    }),
  );
  return performance.now() - t0;
}

function directGet(agent) {
  return (path) =>
    new Promise((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, path, agent, headers: { host: `www.origin.test:${port}` } },
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => {
            const body = Buffer.concat(chunks);
            const m = /^\/obj\/(\d+)$/.exec(path);
            if (res.statusCode !== 200 || (m && !body.equals(origin.body(Number(m[1])))))
              reject(new Error(`direct ${path}: bad answer`));
            else resolve(body.length);
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end();
    });
}

function coralGet(proxy, agent, tally) {
  return async (path) => {
    const r = await fetchVia(proxy, name, path, { agent });
    const m = /^\/obj\/(\d+)$/.exec(path);
    if (r.status !== 200 || (m && !r.body.equals(origin.body(Number(m[1]))))) {
      throw new Error(`via Coral ${path}: status ${r.status} (${r.cacheStatus})`);
    }
    const cs = r.cacheStatus.toLowerCase();
    tally[/peer/.test(cs) ? 'peer' : /\bhit\b/.test(cs) ? 'local' : 'origin']++;
    return r.body.length;
  };
}

async function proxyFor(node, localAddress) {
  const ips = await resolveThrough({ ip: node.ip, port: node.dnsPort }, name, { localAddress });
  const ip = ips[0];
  return { ip, port: fleet.nodes.find((n) => n.ip === ip)?.proxyPort ?? 8090 };
}

let exitCode = 0;
try {
  await fleet.start();
  const a = new Agent({ keepAlive: true, maxSockets: connections });
  const directMs = await downloadSite(directGet(a));
  a.destroy();

  // The campus: clients behind one resolver, which asks the last node's DNS server. A first
  // visitor downloads the site through the proxy it is given (through the bottleneck, once).
  // (The campus resolver asks the first node; its view sends campus clients to the last one.)
  const resolverNode = fleet.nodes[0];
  const first = { local: 0, peer: 0, origin: 0 };
  const firstProxy = await proxyFor(resolverNode, '127.202.0.1');
  const b = new Agent({ keepAlive: true, maxSockets: connections });
  const firstVisitMs = await downloadSite(coralGet(firstProxy, b, first));
  b.destroy();

  // Then another client of the same campus: DNS, then the whole site.
  const second = { local: 0, peer: 0, origin: 0 };
  const c = new Agent({ keepAlive: true, maxSockets: connections });
  const t0 = performance.now();
  const proxy = await proxyFor(resolverNode, '127.202.0.2');
  const dnsMs = performance.now() - t0;
  const viaCoralMs = dnsMs + (await downloadSite(coralGet(proxy, c, second)));
  c.destroy();
  const speedup = directMs / viaCoralMs;

  // And a client of another node than the first visitor's, served from peer copies.
  const other = fleet.nodes.find((n) => n.ip !== firstProxy.ip);
  const third = { local: 0, peer: 0, origin: 0 };
  let viaPeerMs = 0;
  if (other) {
    const d = new Agent({ keepAlive: true, maxSockets: connections });
    viaPeerMs = await downloadSite(coralGet({ ip: other.ip, port: other.proxyPort }, d, third));
    d.destroy();
  }

  const rows = [
    ['objects', `${objects} + page (${(totalBytes / 1024).toFixed(0)} KiB)`],
    ['bottleneck', `${(bytesPerSecond / 1e6).toFixed(2)} MB/s, +${latencyMs} ms`],
    ['fleet nodes', nodes],
    ['direct (ms)', directMs.toFixed(0)],
    ['first visit via Coral (ms)', firstVisitMs.toFixed(0)],
    [
      'via Coral, 2nd client (ms)',
      `${viaCoralMs.toFixed(0)} (dns ${dnsMs.toFixed(1)}, proxy ${proxy.ip})`,
    ],
    ['served 2nd client', `local ${second.local}, peer ${second.peer}, origin ${second.origin}`],
    ['speedup', `${speedup.toFixed(1)}x`],
    [
      'via another node (ms)',
      `${viaPeerMs.toFixed(0)} (peer ${third.peer}, local ${third.local}, origin ${third.origin})`,
    ],
    ['speedup via peer copies', `${(directMs / viaPeerMs).toFixed(1)}x`],
  ];
  for (const [k, v] of rows) process.stdout.write(`${String(k).padEnd(28)} ${v}\n`);
  process.stdout.write(
    JSON.stringify({
      bench: 'site',
      nodes,
      objects,
      totalBytes,
      bytesPerSecond,
      latencyMs,
      connections,
      directMs: Math.round(directMs),
      firstVisitMs: Math.round(firstVisitMs),
      viaCoralMs: Math.round(viaCoralMs),
      speedup: Number(speedup.toFixed(1)),
      servedBy: second,
      viaPeerMs: Math.round(viaPeerMs),
      speedupViaPeer: Number((directMs / viaPeerMs).toFixed(1)),
      peerServedBy: third,
      originRequests: origin.total,
    }) + '\n',
  );
} catch (err) {
  console.error(String(err?.stack ?? err));
  exitCode = 1;
} finally {
  await fleet.stop();
  await origin.close();
  rmSync(dataRoot, { recursive: true, force: true });
}
process.exit(exitCode);
