#!/usr/bin/env node
// `npm run test:containers`: the project's Dockerfile and docker-compose.yml under a real engine.
//
// 1. The engine: Debian's docker.io and docker-compose are installed when missing, dockerd is
//    started when it is not running (and only that one is stopped at the end).
// 2. A local base image (no registry is reachable): `docker import` of this machine's node, npm,
//    a shell and the libraries they need (base-image.sh), passed to the Dockerfile as NODE_IMAGE.
// 3. The image builds with BuildKit; the CA bundle npm trusts (its cafile / NODE_EXTRA_CA_CERTS,
//    for a TLS-intercepting registry proxy) goes in as a build secret, never into a layer.
// 4. docker-compose.yml comes up as written, under a project name of its own, its ports
//    published on 127.0.77.1 (CORAL_PUBLISH_ADDR) so it clashes with no test on 127.0.0.x.
// 5. Checks through the published ports, each printed; then everything is torn down
//    (containers, networks, volumes; the images stay cached).
//
// Run it alone: `flock /tmp/coral-docker.lock npm run test:containers`.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AdminClient } from '../dist/cli/client.js';
import { fetchVia, objectBody, resolveThrough } from '../dist/fleet/index.js';
import { DEFAULT_ORIGIN_OBJECT_BYTES } from '../dist/fleet/origin.js';
import { ensureDaemon, ensureInstalled, findBuilder, findCompose, must, run } from './engine.mjs';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const here = fileURLToPath(new URL('.', import.meta.url));
const workDir = mkdtempSync(join(tmpdir(), 'coral-containers-'));
const project = `coraltest${process.pid}`;
const BASE_IMAGE = 'coral-test-base:local';
const IMAGE = 'coral-node:local'; // the `image:` of docker-compose.yml's services
const PUBLISH = '127.0.77.1';
const ZONE_NAME = 'www.origin.test.8080.nyud.net';
const ORIGIN_URL = 'http://www.origin.test:8080';
const NODES = ['node1', 'node2', 'node3'];
/** The same origin's one-label name, for the TLS listener (`*.<zone>` certificates cover it). */
const TLS_NAME = 'www-origin-test---h8080.nyud.net';
/** Published ports of docker-compose.yml: proxy (http, https) and admin per node, DNS on node1. */
const PORTS = {
  node1: { proxy: 8090, tls: 8443, admin: 8092 },
  node2: { proxy: 8190, tls: 8543, admin: 8192 },
  node3: { proxy: 8290, tls: 8643, admin: 8292 },
};
const DNS = { ip: PUBLISH, port: 5353 };
const token = randomBytes(16).toString('hex');
/** The fleet key, generated for this run like an operator would (`openssl rand -hex 32`). */
const fleetKey = randomBytes(32).toString('hex');
const fleetKeyId = createHash('sha256')
  .update(Buffer.from(fleetKey, 'hex'))
  .digest('hex')
  .slice(0, 8);
const env = {
  ...process.env,
  CORAL_ADMIN_TOKEN: token,
  CORAL_FLEET_KEYS: fleetKey,
  CORAL_PUBLISH_ADDR: PUBLISH,
  CORAL_ADMIN_PUBLISH_ADDR: PUBLISH,
};

const log = (line) => console.log(`# ${line}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
const results = [];

/** One numbered check: prints `ok N - what (detail)` or `not ok N - what: why`. */
async function check(what, fn) {
  const t0 = Date.now();
  try {
    const detail = await fn();
    results.push(true);
    console.log(`ok ${results.length} - ${what}${detail ? ` (${detail})` : ''}`);
    return true;
  } catch (err) {
    results.push(false);
    console.log(
      `not ok ${results.length} - ${what}: ${err.message} [after ${seconds(Date.now() - t0)}]`,
    );
    return false;
  }
}

/** Poll `fn` until it returns a truthy value; throws `what` after `limitMs`. */
async function until(what, limitMs, fn, everyMs = 1_000) {
  const t0 = Date.now();
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() - t0 > limitMs) {
      throw new Error(
        `${what} not within ${seconds(limitMs)}${last ? ` (last error: ${last.message})` : ''}`,
      );
    }
    await sleep(everyMs);
  }
}

let compose;
const dc = (args, opts = {}) =>
  must(
    compose.cmd,
    [...compose.pre, '-p', project, '-f', join(root, 'docker-compose.yml'), ...args],
    {
      cwd: root,
      env,
      ...opts,
    },
  );
const docker = (args) => must('docker', args);

/** GET `path` of the test origin from `node`'s published TLS port, trusting only `ca`. */
function httpsGet(node, ca, path) {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: PUBLISH,
        port: PORTS[node].tls,
        servername: TLS_NAME,
        path,
        headers: { host: `${TLS_NAME}:${PORTS[node].tls}` },
        ca,
        timeout: 10_000,
      },
      (res) => {
        const protocol = res.socket?.getProtocol?.() ?? 'unknown';
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode,
            body: Buffer.concat(chunks),
            cacheStatus: String(res.headers['cache-status'] ?? ''),
            protocol,
          }),
        );
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}
const containerOf = async (service) => (await dc(['ps', '-q', service])).stdout.trim();
const inspect = async (id, format) => (await docker(['inspect', '-f', format, id])).stdout.trim();
const imageId = async (ref) =>
  (await run('docker', ['image', 'inspect', '-f', '{{.Id}}', ref])).stdout.trim();
const admin = (node) =>
  new AdminClient({ url: `http://${PUBLISH}:${PORTS[node].admin}`, token, timeoutMs: 3_000 });

/** The CA bundle npm trusts here, if any (npm's cafile, else NODE_EXTRA_CA_CERTS). */
async function npmCaFile() {
  const cafile = (await run('npm', ['config', 'get', 'cafile'])).stdout.trim();
  for (const f of [cafile, process.env.NODE_EXTRA_CA_CERTS]) {
    if (f && f !== 'null' && f !== 'undefined' && existsSync(f)) return f;
  }
  return undefined;
}

let daemon = { stop: async () => undefined };
let composeUp = false;
let tornDown = false;

async function teardown() {
  if (tornDown) return;
  tornDown = true;
  if (composeUp) {
    const down = await run(
      compose.cmd,
      [
        ...compose.pre,
        '-p',
        project,
        '-f',
        join(root, 'docker-compose.yml'),
        'down',
        '-v',
        '--remove-orphans',
      ],
      { cwd: root, env },
    );
    if (down.status !== 0) log(`compose down failed: ${down.stderr.trim()}`);
    await check('teardown leaves no container, network or volume of the project', async () => {
      const label = `label=com.docker.compose.project=${project}`;
      const left = [
        ...(await docker(['ps', '-aq', '--filter', label])).stdout.split('\n'),
        ...(await docker(['network', 'ls', '-q', '--filter', label])).stdout.split('\n'),
        ...(await docker(['volume', 'ls', '-q', '--filter', label])).stdout.split('\n'),
      ].filter(Boolean);
      if (left.length > 0) throw new Error(`left behind: ${left.join(' ')}`);
      return 'images stay cached';
    });
  }
  await daemon.stop();
  rmSync(workDir, { recursive: true, force: true });
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    log(`${signal}: tearing down`);
    void teardown().then(() => process.exit(1));
  });
}

async function main() {
  await ensureInstalled(log);
  daemon = await ensureDaemon(log, workDir);
  const engine = (await docker(['version', '--format', '{{.Server.Version}}'])).stdout.trim();
  const builder = await findBuilder();
  compose = await findCompose();
  log(
    `engine ${engine} (${daemon.startedHere ? 'started here' : 'already running'}); ` +
      `build: ${builder.label}; compose: ${compose.label}; project ${project}`,
  );

  const ca = await npmCaFile();
  const built = await check(
    `image ${IMAGE} builds from the Dockerfile on a local base`,
    async () => {
      const t0 = Date.now();
      const previous = [await imageId(IMAGE), await imageId(BASE_IMAGE)];
      await must('sh', [join(here, 'base-image.sh'), BASE_IMAGE]);
      const args = [...builder.args, '--build-arg', `NODE_IMAGE=${BASE_IMAGE}`, '-t', IMAGE];
      if (ca) args.push('--secret', `id=npm_ca,src=${ca}`);
      await must(builder.cmd, [...args, root], { env: { ...process.env, ...builder.env } });
      // The CA was a build secret: not in the image's history, environment or files.
      const history = (await docker(['history', '--no-trunc', IMAGE])).stdout;
      const config = (await docker(['image', 'inspect', '-f', '{{json .Config.Env}}', IMAGE]))
        .stdout;
      if (/BEGIN CERTIFICATE|npm_ca|cafile|NODE_EXTRA_CA_CERTS/i.test(history + config)) {
        throw new Error('the CA shows in the image history or environment');
      }
      // The images this build replaced (untagged now) go, so repeated runs do not pile them up.
      const current = [await imageId(IMAGE), await imageId(BASE_IMAGE)];
      for (const id of previous) if (id && !current.includes(id)) await run('docker', ['rmi', id]);
      const files = await run('docker', [
        'run',
        '--rm',
        '--entrypoint',
        'ls',
        IMAGE,
        '/run/secrets',
      ]);
      if (files.status === 0 && files.stdout.trim() !== '')
        throw new Error('/run/secrets is in the image');
      // The image runs the major these checks (and .ci/run's test suite) run on.
      const inImage = (
        await docker(['run', '--rm', '--entrypoint', 'node', IMAGE, '--version'])
      ).stdout.trim();
      if (inImage.split('.')[0] !== process.version.split('.')[0])
        throw new Error(`the image runs node ${inImage}, these checks ${process.version}`);
      return `${seconds(Date.now() - t0)}, base ${BASE_IMAGE}, node ${inImage}${ca ? `, npm CA ${ca} as a build secret, not in the image` : ''}`;
    },
  );
  if (!built) return;

  const up = await check('docker-compose.yml comes up as written', async () => {
    await dc(['up', '-d', '--no-build']);
    composeUp = true;
    const services = (await dc(['ps', '--services'])).stdout.trim().split('\n').sort();
    return `services ${services.join(', ')}; ports on ${PUBLISH}`;
  });
  composeUp = true;
  if (!up) return;

  const ids = Object.fromEntries(
    await Promise.all(NODES.map(async (n) => [n, await containerOf(n)])),
  );
  const ipOf = Object.fromEntries(
    await Promise.all(
      NODES.map(async (n) => [
        n,
        await inspect(ids[n], '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}'),
      ]),
    ),
  );
  const nodeByIp = new Map(Object.entries(ipOf).map(([n, ip]) => [ip, n]));
  log(`containers: ${NODES.map((n) => `${n} ${ipOf[n]}`).join(', ')}`);

  const allHealthy = async (nodes) => {
    const t0 = Date.now();
    await until('every node healthy and ready', 180_000, async () => {
      for (const n of nodes) {
        if ((await inspect(ids[n], '{{.State.Health.Status}}')) !== 'healthy') return false;
        if (!(await admin(n).json('GET', '/readyz')).ready) return false;
      }
      return true;
    });
    return Date.now() - t0;
  };
  const healthy = await check('health checks turn healthy, and every node is ready', async () => {
    const ms = await allHealthy(NODES);
    return `${NODES.join(', ')} healthy and /readyz 200 after ${seconds(ms)}`;
  });
  if (!healthy) return;

  await check('every node runs keyed with the key from the environment', async () => {
    for (const n of NODES) {
      const k = await admin(n).json('GET', '/v1/fleet/keys');
      const ids = k.keys.map((x) => x.id).join(',');
      if (k.mode !== 'keyed' || ids !== fleetKeyId)
        throw new Error(`${n}: mode ${k.mode}, keys ${ids}, not keyed with ${fleetKeyId}`);
      const auth = await admin(n).json('GET', '/v1/fleet/auth');
      if (auth.members.length < NODES.length - 1)
        throw new Error(`${n}: ${auth.members.length} verified members`);
    }
    return `keyed with key ${fleetKeyId}; every node verified the others`;
  });

  // The dashboard ships in the image (its script is built into dist/, uPlot is a dependency), and
  // a published admin port is not loopback: the browser gets the login page, the token the data.
  await check('the dashboard is served from the image and asks for the token', async () => {
    const base = `http://${PUBLISH}:${PORTS.node1.admin}`;
    const page = await fetch(`${base}/`);
    await page.arrayBuffer();
    if (page.status !== 401) throw new Error(`GET / without the token: ${page.status}, not 401`);
    const assets = ['app.js', 'format.js', 'uplot.js', 'uplot.css', 'app.css', 'favicon.svg'];
    for (const a of assets) {
      const r = await fetch(`${base}/dashboard/${a}`);
      await r.arrayBuffer();
      if (r.status !== 200) throw new Error(`GET /dashboard/${a}: ${r.status}`);
    }
    const view = await admin('node1').json('GET', '/v1/dashboard');
    return `login page (401) without the token, ${assets.length} assets, /v1/dashboard with the token: ${view.fleet.members.length + 1} nodes, ${view.history.t.length} samples`;
  });

  // DNS: every answer names node containers; wait until one names a node other than node1 (the
  // DNS server answers with itself first, the others once its level-2 cluster has them live).
  let other;
  const dnsOk = await check("DNS answers with the containers' addresses", async () => {
    const seen = new Set();
    const t0 = Date.now();
    await until(
      'an answer naming another node than node1',
      180_000,
      async () => {
        const answer = await resolveThrough(DNS, ZONE_NAME, { timeoutMs: 2_000, tries: 1 });
        for (const ip of answer) {
          if (!nodeByIp.has(ip))
            throw new Error(`answer ${answer.join(', ')} names ${ip}, not a node`);
          seen.add(ip);
        }
        other = answer.map((ip) => nodeByIp.get(ip)).find((n) => n !== 'node1');
        return other;
      },
      2_000,
    );
    return `answers named ${[...seen].map((ip) => `${nodeByIp.get(ip)} ${ip}`).join(', ')} (${seconds(Date.now() - t0)})`;
  });

  const path = '/obj/1';
  const body = objectBody(1, DEFAULT_ORIGIN_OBJECT_BYTES); // what the sample origin serves at /obj/1
  const peerOk = await check(
    'two nodes serve an object with one origin request, one from the other',
    async () => {
      const first = await fetchVia({ ip: PUBLISH, port: PORTS.node1.proxy }, ZONE_NAME, path);
      if (first.status !== 200 || !first.body.equals(body)) {
        throw new Error(`node1 answered ${first.status} (${first.body.length} bytes)`);
      }
      const second = await fetchVia({ ip: PUBLISH, port: PORTS.node2.proxy }, ZONE_NAME, path);
      if (second.status !== 200 || !second.body.equals(body)) {
        throw new Error(`node2 answered ${second.status}`);
      }
      // One of the two went through the other member: the one designated for the URL fetched it
      // (node1 for node2, or node2 for node1, which then holds it already).
      if (![first, second].some((r) => /fwd=peer/.test(r.cacheStatus)))
        throw new Error(`no peer copy: node1 ${first.cacheStatus}, node2 ${second.cacheStatus}`);
      const counts = JSON.parse(
        (
          await fetchVia({ ip: PUBLISH, port: PORTS.node1.proxy }, ZONE_NAME, '/counts')
        ).body.toString(),
      );
      if (counts.byPath[path] !== 1)
        throw new Error(`the origin served ${path} ${counts.byPath[path]} times`);
      return `node1 "${first.cacheStatus}", node2 "${second.cacheStatus}", origin requests for ${path}: 1`;
    },
  );

  // https: each node's TLS listener, published, with the certificate of the local development CA the
  // node made in its volume on first start (a client that trusts that CA verifies the name).
  await check("each node serves https with its local CA's certificate", async () => {
    const seen = [];
    for (const n of ['node1', 'node2']) {
      const caFile = join(workDir, `${n}-local-ca.pem`);
      await docker(['cp', `${ids[n]}:/data/tls/local-ca.pem`, caFile]);
      const r = await httpsGet(n, readFileSync(caFile), path);
      if (r.status !== 200 || !r.body.equals(body))
        throw new Error(`${n} over https: ${r.status} (${r.body.length} bytes)`);
      seen.push(`${n} ${r.status} "${r.cacheStatus}" (${r.protocol})`);
    }
    // The override for a real certificate names the same files on every node.
    const cfg = (await dc(['-f', join(root, 'docker-compose.tls.yml'), 'config'])).stdout;
    const certs = cfg.match(/CORAL_TLS_CERT: \/etc\/coral\/tls\/fullchain\.pem/g) ?? [];
    if (certs.length !== NODES.length)
      throw new Error(`docker-compose.tls.yml sets the certificate on ${certs.length} nodes`);
    return `${seen.join(', ')}; docker-compose.tls.yml merges for ${certs.length} nodes`;
  });

  let killed;
  if (dnsOk && other) {
    killed = other;
    await check(`docker kill of ${other} removes it from DNS answers`, async () => {
      const gone = ipOf[other];
      const live = async () =>
        (await admin('node1').json('GET', '/v1/clusters')).liveProxies.map((p) => p.ipv4);
      if (!(await live()).includes(gone)) throw new Error(`${other} was not live before the kill`);
      await docker(['kill', ids[other]]);
      const t0 = Date.now();
      // An answer holds 2 of the 3 nodes, so one without the killed node proves nothing alone:
      // removed means node1's directory (what its DNS server answers from) no longer counts it as
      // live — the node's own rule: heard within the live window, no failed RPC since — and
      // three answers in a row leave it out.
      let deadAt;
      let clean = 0;
      await until(
        `${other} (${gone}) out of node1's live proxies and of three answers in a row`,
        300_000,
        async () => {
          if (deadAt === undefined && !(await live()).includes(gone)) deadAt = Date.now();
          const answer = await resolveThrough(DNS, ZONE_NAME, { timeoutMs: 2_000, tries: 1 });
          if (answer.length === 0) throw new Error('empty answer');
          clean = answer.includes(gone) ? 0 : clean + 1;
          return deadAt !== undefined && clean >= 3;
        },
        1_000,
      );
      return `no longer live for node1's DNS after ${seconds(deadAt - t0)}; out of the answers since`;
    });
  }

  if (peerOk) {
    await check('docker compose restart keeps the cache (volumes)', async () => {
      // The nodes that stored the object (node1 from the origin; node2 too when it stores peer
      // copies, which it does only for authenticated holder records), among those still running.
      const url = `${ORIGIN_URL}${path}`;
      const lists = async (n) =>
        (await admin(n).json('GET', '/v1/cache')).objects.some((o) => o.url === url);
      const holders = [];
      for (const n of NODES.filter((x) => x !== killed)) if (await lists(n)) holders.push(n);
      if (!holders.includes('node1'))
        throw new Error(`node1 does not list ${url} before the restart`);
      await dc(['restart']);
      const ms = await allHealthy(NODES);
      for (const n of holders) if (!(await lists(n))) throw new Error(`${n} lost ${url}`);
      const again = await fetchVia({ ip: PUBLISH, port: PORTS.node1.proxy }, ZONE_NAME, path);
      if (!/\bhit\b/.test(again.cacheStatus) || !again.body.equals(body)) {
        throw new Error(`node1 after restart: ${again.status} "${again.cacheStatus}"`);
      }
      return `healthy again after ${seconds(ms)}; ${path} still listed by ${holders.join(', ')}; node1 "${again.cacheStatus}"`;
    });
  }
}

let failed = false;
try {
  await main();
} catch (err) {
  failed = true;
  console.log(`not ok - harness: ${err.message}`);
}
if (failed || results.includes(false)) {
  if (composeUp) {
    const logs = await run(
      compose.cmd,
      [
        ...compose.pre,
        '-p',
        project,
        '-f',
        join(root, 'docker-compose.yml'),
        'logs',
        '--no-color',
        '--tail',
        '30',
      ],
      { cwd: root, env },
    );
    log('container logs (last 30 lines each):');
    for (const line of logs.stdout.split('\n')) if (line) console.log(`#   ${line}`);
  }
}
await teardown();
const passed = results.filter(Boolean).length;
const notOk = results.length - passed + (failed ? 1 : 0);
console.log(`test:containers: ${passed} passed, ${notOk} failed`);
process.exitCode = notOk > 0 ? 1 : 0;
