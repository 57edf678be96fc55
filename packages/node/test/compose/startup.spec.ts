/**
 * Start-up of real nodes (real DSHT over UDP, proxy, DNS server, LevelDB on disk, on 127.0.B.x):
 * one advertised identity used everywhere, bootstrap names retried until they resolve and answer
 * (not ready before), seeds, and a corrupt database moved aside instead of a crash loop.
 */
import { createSocket, type Socket } from 'node:dgram';
import { once } from 'node:events';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Level } from 'level';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeIdFor } from '@coral/dsht';
import { urlKey } from '@coral/httpprx';
import { ManualClock } from '@coral/testkit';
import { decodeHolder } from '../../src/adapters/holder-codec.js';
import { loadConfig } from '../../src/config/load.js';
import { CoralNode } from '../../src/compose/node.js';
import { realServices } from '../../src/compose/services.js';
import { createLogger } from '../../src/logging/logger.js';
import { CoralMetrics } from '../../src/metrics/metrics.js';
import { SampleOrigin, fetchVia, resolveThrough } from '../../src/fleet/index.js';
import { glibc, randomSubnet, tmpDir, waitFor } from '../helpers.js';

/** The fleet key of these nodes (keyed mode is the default for a node with a bootstrap). */
const FLEET_KEY = '5ec2e7'.repeat(10) + '5ec2';

const subnet = randomSubnet();
const ip = (host: number) => `127.0.${subnet}.${host}`;
const dir = tmpDir('startup');
const origin = new SampleOrigin({ host: '127.0.0.1', objects: 4 });
const nodes: CoralNode[] = [];
const cleanups: (() => void)[] = [];
let name = '';

/** A logger whose JSON lines land in `lines`. */
function capturingLogger(level = 'debug') {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l));
      done();
    },
  });
  return { logger: createLogger({ level, destination }), lines };
}

function configFor(host: string, env: Record<string, string> = {}) {
  return loadConfig({
    env: {
      CORAL_HOST: host,
      CORAL_DNS_HOST: host,
      CORAL_ADMIN_HOST: host,
      CORAL_DATA_DIR: join(dir, host),
      CORAL_ALLOW_PRIVATE_ORIGINS: 'true',
      CORAL_HOSTS: 'www.origin.test=127.0.0.1',
      CORAL_LOG_LEVEL: 'silent',
      CORAL_FLEET_KEYS: FLEET_KEY,
      ...env,
    },
  });
}

async function start(
  config: ReturnType<typeof configFor>,
  components: Partial<Parameters<typeof CoralNode.start>[1]> = {},
): Promise<CoralNode> {
  const node = await CoralNode.start(config, {
    services: realServices,
    logger: createLogger({ level: 'silent' }),
    ...components,
  });
  nodes.push(node);
  return node;
}

/**
 * A UDP port forwarder (destination NAT) from `front` to `back`: each client's datagrams go on from
 * a socket on the client's own IP, so `back` sees the client's address, and the answers come back
 * from `front`. What a node behind a forwarder gets in production.
 */
async function forwarder(front: { ip: string; port: number }, back: { ip: string; port: number }) {
  const sockets: Socket[] = [];
  const bind = async (ip: string, port: number) => {
    const s = createSocket('udp4');
    sockets.push(s);
    s.bind(port, ip);
    await once(s, 'listening');
    return s;
  };
  const outer = await bind(front.ip, front.port);
  const upstream = new Map<string, Promise<Socket>>();
  outer.on('message', (msg, from) => {
    const key = `${from.address}:${from.port}`;
    let up = upstream.get(key);
    if (!up) {
      up = bind(from.address, 0).then((s) => {
        s.on('message', (reply) => outer.send(reply, from.port, from.address));
        return s;
      });
      upstream.set(key, up);
    }
    void up.then((s) => s.send(msg, back.port, back.ip));
  });
  return { close: () => sockets.forEach((s) => s.close()) };
}

const notFound = async (host: string): Promise<string> => {
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
};

beforeAll(async () => {
  const { port } = await origin.listen();
  name = `www.origin.test.${port}.nyud.net`;
});

afterAll(async () => {
  for (const n of nodes.reverse()) await n.stop();
  for (const c of cleanups) c();
  await origin.close();
});

describe('one identity', () => {
  it('binds host but uses the advertised address in its DSHT contact, DNS answers and holder records', async () => {
    // A binds .5 and advertises .6, where a forwarder passes its DSHT traffic on to .5. Its own
    // datagrams leave from .5, so B accepts them as from a member behind NAT.
    const { logger, lines } = capturingLogger('warn');
    const a = await start(configFor(ip(5), { CORAL_ADVERTISE: ip(6) }), { logger });
    const nat = await forwarder({ ip: ip(6), port: 8091 }, { ip: ip(5), port: 8091 });
    const b = await start(
      configFor(ip(7), { CORAL_BOOTSTRAP: `${ip(6)}:8091`, CORAL_DSHT_ALLOW_NAT: 'true' }),
    );
    cleanups.push(() => nat.close());
    const idA = Buffer.from(nodeIdFor(ip(6), 8091)).toString('hex');

    expect(a.view.info()).toMatchObject({ nodeId: idA, advertiseIp: ip(6) });
    expect(a.view.info().services.dsht).toEqual({ host: ip(5), port: 8091 });
    expect(a.directory.self()).toMatchObject({ id: idA, ipv4: ip(6) });
    expect(lines.some((l) => /advertises another one/.test(String(l.msg)))).toBe(true);

    // The fleet knows A by its advertised address only.
    await waitFor(() => b.dsht.routes(0).some((c) => c.ip === ip(6)), 10_000, 'B to learn A');
    expect(b.dsht.routes(0).map((c) => c.ip)).not.toContain(ip(5));

    // A's own DNS server answers with .6, never the bind address.
    const answers = await resolveThrough({ ip: ip(5), port: 5353 }, name);
    expect(answers).toContain(ip(6));
    expect(answers).not.toContain(ip(5));

    // A fetches an object through its proxy (on .5) and announces it: the record names .6.
    const res = await fetchVia({ ip: ip(5), port: 8090 }, name, '/obj/1');
    expect(res.status).toBe(200);
    const key = urlKey(`http://www.origin.test:${origin.address.port}/obj/1`);
    const holders = await waitFor(
      async () => {
        const found = (await a.dsht.get(key)).values.map((v) => decodeHolder(v));
        return found.some((h) => h.state === 'complete') ? found : undefined;
      },
      10_000,
      "A's complete record",
    );
    for (const h of holders)
      expect({ nodeId: h.nodeId, ip: h.ip }).toEqual({ nodeId: idA, ip: ip(6) });
  });
});

describe('bootstrap', () => {
  it('retries a name that does not resolve yet, with backoff, and is not ready until joined', async () => {
    const member = await start(configFor(ip(10)));
    const clock = new ManualClock(Date.now());
    const { logger, lines } = capturingLogger('debug');
    let resolvable = false;
    const lookup = async (host: string) => {
      if (host === 'late-member.test' && resolvable) return ip(10);
      return notFound(host);
    };
    const c = await start(configFor(ip(11), { CORAL_BOOTSTRAP: 'late-member.test:8091' }), {
      clock,
      lookup,
      logger,
    });
    const pending = () =>
      lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('not joined yet'));

    expect(c.view.readiness()).toEqual({
      ready: false,
      checks: expect.objectContaining({ joined: false }),
    });
    expect(pending()).toHaveLength(1);
    expect(pending()[0]).toMatchObject({ level: 40, attempt: 0, retryInMs: 500 });
    expect(String(pending()[0]!.msg)).toMatch(
      /late-member\.test:8091 \(ENOTFOUND\) did not resolve/,
    );

    await clock.advance(500);
    await waitFor(() => pending().length === 2, 5_000, 'the first retry');
    expect(pending()[1]).toMatchObject({ level: 40, attempt: 1, retryInMs: 1000 });
    expect(c.view.readiness().ready).toBe(false);

    resolvable = true;
    await clock.advance(1000);
    await waitFor(() => c.view.readiness().ready, 10_000, 'C to join');
    expect(c.dsht.routes(0).map((x) => x.ip)).toContain(ip(10));
    expect(lines.find((l) => l.msg === 'joined the fleet')).toMatchObject({
      level: 30,
      attempts: 2,
    });
    expect(member.view.readiness().ready).toBe(true);
  });

  it('makes a node that finds itself in the list a seed: ready while the other seeds are not up', async () => {
    const { logger, lines } = capturingLogger('debug');
    const d = await start(
      configFor(ip(12), {
        CORAL_BOOTSTRAP: 'seed-d.test:8091,seed-x.test:8091',
        CORAL_HOSTS: `www.origin.test=127.0.0.1,seed-d.test=${ip(12)}`,
      }),
      { lookup: notFound, logger },
    );
    expect(d.view.readiness().ready).toBe(true);
    expect(d.banner()).toMatch(/this node is a seed/);
    // It keeps looking for the other seed, quietly.
    expect(lines.find((l) => String(l.msg).startsWith('not joined yet'))).toMatchObject({
      level: 20,
    });
  });
});

describe('a corrupt database', () => {
  it('is moved aside and counted; the node starts empty instead of failing', async () => {
    const host = ip(20);
    const config = configFor(host);
    const dataDir = config.dataDir;
    const first = await start(config);
    await fetchVia({ ip: host, port: 8090 }, name, '/obj/2');
    await waitFor(async () => (await first.view.cacheList()).length > 0, 10_000, 'a cached object');
    await first.stop();

    // A damaged CURRENT file in both databases (LevelDB reports corruption when opening).
    await writeFile(join(dataDir, 'cache', 'meta', 'CURRENT'), '');
    await writeFile(join(dataDir, 'dsht', 'CURRENT'), '');
    const metrics = new CoralMetrics({ defaultMetrics: false });
    const { logger, lines } = capturingLogger('warn');
    const second = await start(config, { metrics, logger });
    expect(second.view.readiness().ready).toBe(true);
    expect(await second.view.cacheList()).toEqual([]);
    const text = await metrics.text();
    expect(text).toMatch(/coral_store_corruptions_total\{store="cache"\} 1/);
    expect(text).toMatch(/coral_store_corruptions_total\{store="dsht"\} 1/);
    const aside = (await readdir(dataDir)).filter((f) => f.includes('.corrupt-')).sort();
    expect(aside).toEqual([
      expect.stringMatching(/^cache\.corrupt-/),
      expect.stringMatching(/^dsht\.corrupt-/),
    ]);
    const errors = lines.filter((l) => l.level === 50);
    expect(errors.map((l) => l.store).sort()).toEqual(['cache', 'dsht']);
    expect(errors[0]).toMatchObject({ movedTo: expect.stringContaining('.corrupt-') });
    // It works: it caches again.
    expect((await fetchVia({ ip: host, port: 8090 }, name, '/obj/3')).status).toBe(200);
    await waitFor(async () => (await second.view.cacheList()).length > 0, 10_000, 'cached again');
    await second.stop();

    // A record that does not decode is not corruption of the database: the cache drops that one
    // record while it loads its index and keeps every other (nothing more is moved aside).
    const meta = new Level<string, string>(join(dataDir, 'cache', 'meta'), {
      valueEncoding: 'utf8',
    });
    await meta.put('zz-broken', '{not json');
    await meta.close();
    const third = await start(config, { metrics });
    expect((await third.view.cacheList()).map((o) => o.url)).toEqual([
      expect.stringMatching(/\/obj\/3$/),
    ]);
    expect(await metrics.text()).toMatch(/coral_store_corruptions_total\{store="cache"\} 1/);
    expect((await readdir(dataDir)).filter((f) => f.startsWith('cache.corrupt-'))).toHaveLength(1);
    await third.stop();
    const reopened = new Level<string, string>(join(dataDir, 'cache', 'meta'), {
      valueEncoding: 'utf8',
    });
    expect(await reopened.get('zz-broken')).toBeUndefined();
    await reopened.close();
  });

  it('is not touched when the failure is something else (a file where the directory should be)', async () => {
    const config = configFor(ip(21));
    await mkdir(config.dataDir, { recursive: true });
    await writeFile(join(config.dataDir, 'cache'), 'not a directory');
    await expect(start(config)).rejects.toMatchObject({ code: 'CORAL_ERR_START_FAILED' });
    expect((await readdir(config.dataDir)).filter((f) => f.includes('.corrupt-'))).toEqual([]);
  });
});

describe('the heap trim', () => {
  it('is on by default, counted in /metrics, and off with heapTrimIntervalMs 0', async () => {
    const on = capturingLogger('debug');
    const metrics = new CoralMetrics({ defaultMetrics: false });
    await start(configFor(ip(30)), { logger: on.logger, metrics });
    const trim = (lines: Record<string, unknown>[]) =>
      lines.filter((l) => l.component === 'heap-trim').map((l) => l.msg);
    expect(trim(on.lines)).toEqual([glibc ? 'heap trim on' : 'heap trim unavailable']);
    const text = await metrics.text();
    expect(text).toMatch(/^coral_heap_trims_total 0$/m);
    expect(text).toMatch(/^coral_heap_trim_released_bytes_total 0$/m);

    const off = capturingLogger('debug');
    await start(configFor(ip(31), { CORAL_HEAP_TRIM_INTERVAL_MS: '0' }), { logger: off.logger });
    expect(trim(off.lines)).toEqual([]);
  });
});
