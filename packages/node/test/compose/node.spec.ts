/**
 * Two real nodes in this process (real DSHT over UDP, real proxy, real DNS server, on 127.0.B.x):
 * every admin endpoint through the in-process handler, every CLI command against the running
 * node, purge withdrawing the announcement, and start failures.
 */
import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { urlKey } from '@coral/httpprx';
import { run } from '../../src/cli/program.js';
import { loadConfig } from '../../src/config/load.js';
import { CoralNode } from '../../src/compose/node.js';
import { realServices } from '../../src/compose/services.js';
import { createLogger } from '../../src/logging/logger.js';
import { SampleOrigin, fetchVia, resolveThrough } from '../../src/fleet/index.js';
import { cliAt, randomSubnet, tmpDir, waitFor } from '../helpers.js';

/** The fleet key of these nodes (keyed mode is the default for a node with a bootstrap). */
const FLEET_KEY = '5ec2e7'.repeat(10) + '5ec2';

const token = 'test-admin-token-0123456789';
const subnet = randomSubnet();
const ipA = `127.0.${subnet}.201`;
const ipB = `127.0.${subnet}.202`;
const dir = tmpDir('node');
const origin = new SampleOrigin({ host: '127.0.0.1', objects: 4 });
let nodeA: CoralNode;
let nodeB: CoralNode;
let name = '';

function configFor(ip: string, extra: Record<string, string> = {}) {
  return loadConfig({
    env: {
      CORAL_HOST: ip,
      CORAL_DNS_HOST: ip,
      CORAL_ADMIN_HOST: ip,
      CORAL_DATA_DIR: `${dir}/${ip}`,
      CORAL_ALLOW_PRIVATE_ORIGINS: 'true',
      CORAL_HOSTS: 'www.origin.test=127.0.0.1',
      CORAL_ADMIN_TOKEN: token,
      CORAL_LOG_LEVEL: 'silent',
      CORAL_FLEET_KEYS: FLEET_KEY,
      // The sampled audit draws at random and these tests count origin fetches: off.
      CORAL_PROXY_AUDIT_FRACTION: '0',
      ...extra,
    },
  });
}

const admin = (
  node: CoralNode,
  method: string,
  url: string,
  body?: unknown,
  remoteAddress = '127.0.0.1',
) =>
  node.admin
    .handle({
      method,
      url,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      remoteAddress,
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    .then((r) => ({ status: r.status, body: r.body, json: () => JSON.parse(r.body) }));

beforeAll(async () => {
  const { port } = await origin.listen();
  name = `www.origin.test.${port}.nyud.net`;
  const logger = createLogger({ level: 'silent' });
  nodeA = await CoralNode.start(configFor(ipA, { CORAL_REGION: 'eu' }), {
    services: realServices,
    logger,
  });
  nodeB = await CoralNode.start(configFor(ipB, { CORAL_BOOTSTRAP: `${ipA}:8091` }), {
    services: realServices,
    logger,
  });
  await waitFor(
    async () => (await admin(nodeB, 'GET', '/readyz')).status === 200,
    20_000,
    'B ready',
  );
  await waitFor(() => nodeA.dsht.routes(0).length > 0, 20_000, 'A learns B');
});

afterAll(async () => {
  await nodeB?.stop();
  await nodeA?.stop();
  await origin.close();
});

describe('admin API of a running node', () => {
  it('answers health, readiness and node info', async () => {
    expect((await admin(nodeA, 'GET', '/healthz')).json()).toEqual({ ok: true });
    const ready = (await admin(nodeA, 'GET', '/readyz')).json();
    expect(ready.ready).toBe(true);
    expect(ready.checks).toEqual({
      dsht: true,
      joined: true,
      proxy: true,
      dns: true,
      fleetKeys: true,
      purgeLog: true,
    });
    const info = (await admin(nodeA, 'GET', '/v1/node')).json();
    expect(info.nodeId).toMatch(/^[0-9a-f]{40}$/);
    expect(info.services.proxy).toEqual({ host: ipA, port: 8090 });
    expect(info.services.dsht).toEqual({ host: ipA, port: 8091 });
    expect(info.advertiseIp).toBe(ipA);
  });

  it('shows clusters and routing tables per level', async () => {
    const clusters = (await admin(nodeA, 'GET', '/v1/clusters')).json();
    expect(clusters.levels.length).toBe(nodeA.view.levels);
    const routes = (await admin(nodeA, 'GET', '/v1/dsht/routes?level=0')).json();
    expect(routes.contacts.map((c: { ip: string }) => c.ip)).toContain(ipB);
    expect((await admin(nodeA, 'GET', `/v1/dsht/routes?level=${nodeA.view.levels}`)).status).toBe(
      400,
    );
  });

  it('puts on one node and gets from the other, and shows the local store', async () => {
    const put = await admin(nodeA, 'PUT', '/v1/dsht/values/greeting', {
      value: 'hello coral',
      ttl: 120,
    });
    expect(put.status).toBe(200);
    const got = (await admin(nodeB, 'GET', '/v1/dsht/values/greeting')).json();
    expect(got.values.map((v: { text?: string }) => v.text)).toContain('hello coral');
    expect(got.stats).toHaveProperty('hops');
    const holders = [nodeA, nodeB];
    const local = await Promise.all(
      holders.map(
        async (n) => (await admin(n, 'GET', '/v1/dsht/local/greeting')).json().values.length,
      ),
    );
    expect(local.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  });

  it('lists the cache, serves a peer copy, and purge withdraws the announcement', async () => {
    const first = await fetchVia({ ip: ipA, port: 8090 }, name, '/obj/1');
    expect(first.status).toBe(200);
    expect(first.body.equals(origin.body(1))).toBe(true);
    const cachedUrls = async (node: CoralNode) =>
      (await admin(node, 'GET', '/v1/cache')).json().objects.map((o: { url: string }) => o.url);
    // The body is stored as the response ends; the listing shows it once stored.
    await waitFor(
      async () => (await cachedUrls(nodeA)).length > 0,
      10_000,
      'the object to be stored',
    );
    expect(await cachedUrls(nodeA)).toContain(
      `http://www.origin.test:${origin.address.port}/obj/1`,
    );
    const second = await fetchVia({ ip: ipB, port: 8090 }, name, '/obj/1');
    expect(second.body.equals(origin.body(1))).toBe(true);
    // One of the two went through the other (whichever node is designated for the URL).
    expect([first.cacheStatus, second.cacheStatus].some((cs) => /peer/i.test(cs))).toBe(true);
    expect(origin.counts.get('/obj/1')).toBe(1);

    const url = `http://www.origin.test:${origin.address.port}/obj/1`;
    const purge = (await admin(nodeA, 'POST', '/v1/cache/purge', { url })).json();
    expect(purge).toEqual({ url, purged: true, withdrawn: true });
    const holders = await nodeB.index.lookup(urlKey(url));
    expect(holders.map((h) => h.nodeId)).not.toContain(nodeA.view.info().nodeId);
    expect(
      (await admin(nodeA, 'GET', '/v1/cache')).json().objects.map((o: { url: string }) => o.url),
    ).not.toContain(url);
  });

  it('gives the DNS server a directory that includes the node itself by region and id', () => {
    const idA = nodeA.view.info().nodeId;
    expect(nodeA.directory.inRegion('eu', 2).map((n) => n.id)).toEqual([idA]);
    expect(nodeA.directory.inRegion('us', 2)).toEqual([]);
    expect(nodeA.directory.get?.(idA)?.ipv4).toBe(ipA);
    expect(nodeB.directory.inRegion('eu', 2).map((n) => n.id)).toEqual([idA]);
    expect(nodeB.directory.get?.(idA)?.ipv4).toBe(ipA);
    expect(nodeB.directory.isLive?.(idA)).toBe(true);
    expect(nodeB.directory.isLive?.('00'.repeat(20))).toBe(false);
  });

  it('records DNS decisions and the resolver probe cache', async () => {
    const ips = await resolveThrough({ ip: ipA, port: 5353 }, name);
    expect(ips.length).toBeGreaterThan(0);
    for (const ip of ips) expect([ipA, ipB]).toContain(ip);
    const decisions = (await admin(nodeA, 'GET', '/v1/dns/decisions')).json().decisions;
    expect(decisions.some((d: { name: string }) => d.name === name)).toBe(true);
    const probes = (await admin(nodeA, 'GET', '/v1/dns/probes')).json();
    expect(Array.isArray(probes.probes)).toBe(true);
  });

  it('exports Prometheus metrics of every service', async () => {
    const text = (await admin(nodeA, 'GET', '/metrics')).body;
    expect(text).toMatch(
      /coral_http_requests_total\{cache_status="[^"]+",method="GET",status="200"\} \d/,
    );
    expect(text).toMatch(/coral_dsht_rpcs_total\{type="[A-Z_]+",outcome="ok"\} \d/);
    expect(text).toMatch(/coral_dns_answers_total\{method="[a-z-]+",rcode="NOERROR"\} \d/);
    expect(text).toMatch(/coral_dsht_lookup_hops_bucket/);
    // The one origin fetch of /obj/1 was made by the node designated for it, A or B.
    const textB = (await admin(nodeB, 'GET', '/metrics')).body;
    const originOk = (t: string) =>
      Number(/^coral_origin_fetches_total\{outcome="ok"\} (\d+)/m.exec(t)?.[1] ?? 0);
    expect(originOk(text) + originOk(textB)).toBe(1);
  });

  it('a fleet purge that overtakes a fetch in flight keeps its response out of every cache', async () => {
    // An origin that holds /gated until told, tagged c1: the purge lands while it is fetched.
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let asked = 0;
    const gated = createHttpServer((_req, res) => {
      asked++;
      void released.then(() => {
        res.writeHead(200, {
          'cache-control': 'max-age=600',
          'cache-tag': 'c1',
          'content-length': '2',
        });
        res.end('v1');
      });
    });
    await new Promise<void>((r) => gated.listen(0, '127.0.0.1', r));
    try {
      const port = (gated.address() as AddressInfo).port;
      const host = `www.origin.test.${port}.nyud.net`;
      const url = `http://www.origin.test:${port}/gated`;
      const pending = fetchVia({ ip: ipA, port: 8090 }, host, '/gated');
      await waitFor(() => asked === 1, 10_000, 'the origin asked');
      const purge = (await admin(nodeA, 'POST', '/v1/purge', { tag: 'c1' })).json();
      expect(purge.propagation.complete).toBe(true);
      release();
      const r = await pending;
      expect(r.status).toBe(200);
      expect(r.body.toString()).toBe('v1');
      // Whichever node fetched it (the designated one) refused to keep it...
      const refused = async (node: CoralNode) =>
        Number(
          /^coral_commits_refused_total (\d+)/m.exec(
            (await admin(node, 'GET', '/metrics')).body,
          )?.[1] ?? 0,
        );
      await waitFor(
        async () => (await refused(nodeA)) + (await refused(nodeB)) >= 1,
        10_000,
        'the commit refused',
      );
      // ... so neither holds it, and the next request fetches it again.
      const cached = async (node: CoralNode) =>
        (await admin(node, 'GET', '/v1/cache'))
          .json()
          .objects.some((o: { url: string }) => o.url === url);
      expect([await cached(nodeA), await cached(nodeB)]).toEqual([false, false]);
      expect((await fetchVia({ ip: ipB, port: 8090 }, host, '/gated')).status).toBe(200);
      expect(asked).toBe(2);
    } finally {
      gated.closeAllConnections();
      await new Promise<void>((r) => gated.close(() => r()));
    }
  });

  it('refuses non-loopback clients without the token, and serves them with it', async () => {
    expect((await admin(nodeA, 'GET', '/v1/node', undefined, '192.0.2.1')).status).toBe(401);
    const withToken = await nodeA.admin.handle({
      method: 'GET',
      url: '/v1/node',
      headers: { authorization: `Bearer ${token}` },
      remoteAddress: '192.0.2.1',
    });
    expect(withToken.status).toBe(200);
  });
});

describe('coral-node client commands against the running node', () => {
  const cli = (...args: string[]) => cliAt(`http://${ipA}:8092`, ...args);

  it('status', async () => {
    const r = await cli('status');
    expect(r.code, r.out + r.err).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ ready: true, advertiseIp: ipA });
  });

  it('dsht put, get, get --local, routes', async () => {
    const put = await cli('dsht', 'put', 'cli-key', 'cli-value', '--ttl', '60');
    expect(put.code).toBe(0);
    const get = await cli('dsht', 'get', 'cli-key');
    expect(JSON.parse(get.out).values.map((v: { text: string }) => v.text)).toContain('cli-value');
    // Each node lists a value once, with the levels it holds it at; a put stores once per level
    // (3 levels, 2 nodes), so together the nodes hold it at every level.
    const levels: number[] = [];
    for (const node of [ipA, ipB]) {
      const local = await cli(
        '--admin',
        `http://${node}:8092`,
        'dsht',
        'get',
        '--local',
        'cli-key',
      );
      expect(local.code).toBe(0);
      const values = JSON.parse(local.out).values as { text: string; levels: number[] }[];
      expect(values.filter((v) => v.text === 'cli-value').length).toBeLessThanOrEqual(1);
      for (const v of values) {
        expect(v.levels).toEqual([...new Set(v.levels)].sort());
        levels.push(...v.levels);
      }
    }
    expect([...new Set(levels)].sort()).toEqual([0, 1, 2]);
    const routes = await cli('dsht', 'routes', '--level', '0');
    expect(JSON.parse(routes.out).contacts.map((c: { ip: string }) => c.ip)).toContain(ipB);
    const bad = await cli('dsht', 'put', 'k', 'v', '--ttl', 'soon');
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/--ttl/);
  });

  it('clusters, cache ls, cache purge', async () => {
    expect(JSON.parse((await cli('clusters')).out).levels.length).toBe(nodeA.view.levels);
    await fetchVia({ ip: ipA, port: 8090 }, name, '/obj/2');
    const url = `http://www.origin.test:${origin.address.port}/obj/2`;
    const listed = async () => {
      const ls = await cli('cache', 'ls');
      expect(ls.code).toBe(0);
      return JSON.parse(ls.out).objects.some((o: { url: string }) => o.url === url);
    };
    await waitFor(listed, 10_000, 'the object to be listed');
    const purge = await cli('cache', 'purge', url);
    expect(JSON.parse(purge.out)).toMatchObject({ purged: true, withdrawn: true });
  });

  it('coralize', async () => {
    const r = await cli('coralize', 'http://www.example.com/a.jpg', '--port', '8095');
    expect(r.out.trim()).toBe('http://www.example.com.nyud.net:8095/a.jpg');
    // Without --port: the proxy's default port, as the README's Coralized URLs show.
    const d = await cli('coralize', 'http://www.example.com:8080/a.jpg?x=1');
    expect(d.out.trim()).toBe('http://www.example.com.8080.nyud.net:8090/a.jpg?x=1');
    const p80 = await cli('coralize', 'http://www.example.com/', '--port', '80');
    expect(p80.out.trim()).toBe('http://www.example.com.nyud.net/');
  });

  it('reports an unreachable node with its code', async () => {
    let err = '';
    const code = await run(
      ['--admin', 'http://127.0.0.1:9', 'status'],
      {
        stdout: { write: () => true },
        stderr: { write: (s: string) => (err += s) },
        env: {},
      },
      { startNode: async () => 1 },
    );
    expect(code).toBe(1);
    expect(err).toMatch(/CORAL_ERR_CLIENT_UNREACHABLE/);
  });
});

describe('start failures', () => {
  it('fails with CORAL_ERR_START_FAILED when a port is taken, and releases what it opened', async () => {
    const ip = `127.0.${subnet}.203`;
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(8090, ip, () => r()));
    try {
      await expect(
        CoralNode.start(configFor(ip), {
          services: realServices,
          logger: createLogger({ level: 'silent' }),
        }),
      ).rejects.toMatchObject({ code: 'CORAL_ERR_START_FAILED' });
      // The DSHT's UDP port was released: a second attempt gets as far as the proxy again.
      await expect(
        CoralNode.start(configFor(ip), {
          services: realServices,
          logger: createLogger({ level: 'silent' }),
        }),
      ).rejects.toThrow(/proxy failed to start/);
    } finally {
      blocker.close();
    }
  });

  it('names the setting (and variable) of a port in use: the TLS port of a second node on one machine', async () => {
    const ip = `127.0.${subnet}.204`;
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(8443, ip, () => r()));
    try {
      await expect(
        CoralNode.start(configFor(ip), {
          services: realServices,
          logger: createLogger({ level: 'silent' }),
        }),
      ).rejects.toThrow(
        `proxy tls failed to start: listen EADDRINUSE: address already in use ${ip}:8443: set proxy.tlsPort (CORAL_PROXY_TLS_PORT) to a free port`,
      );
    } finally {
      blocker.close();
    }
  });
});
