/**
 * A real node (DSHT over UDP, proxy, LevelDB) with `workers: 2`: its DNS answered by both worker
 * threads on its one DNS port, with the node's own identity; a killed worker replaced while the
 * node keeps answering; SIGHUP's reload and SIGTERM's drain reach every worker.
 */
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { CoralNode } from '../../src/compose/node.js';
import { realServices } from '../../src/compose/services.js';
import { createLogger } from '../../src/logging/logger.js';
import { CoralMetrics } from '../../src/metrics/metrics.js';
import { SampleOrigin, fetchVia } from '../../src/fleet/index.js';
import { DnsWorkers } from '../../src/workers/dns-workers.js';
import { waitFor } from '@coral/testkit';
import { randomSubnet, tmpDir } from '../helpers.js';
import { addresses, ask, query } from './dns-client.js';

const subnet = randomSubnet();
const ip = (host: number) => `127.0.${subnet}.${host}`;
const dir = tmpDir('node-workers');
const nodes: CoralNode[] = [];
const origin = new SampleOrigin({ host: '127.0.0.1', objects: 2 });

afterAll(async () => {
  for (const n of nodes) await n.stop();
  await origin.close();
});

function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l));
      done();
    },
  });
  return { logger: createLogger({ level: 'info', destination }), lines };
}

describe('a node with workers: 2', () => {
  it('answers DNS from both workers as itself, replaces a killed worker, and drains both on stop', async () => {
    const host = ip(1);
    const { port: originPort } = await origin.listen();
    const config = loadConfig({
      env: {
        CORAL_HOST: host,
        CORAL_DNS_HOST: host,
        CORAL_ADMIN_HOST: host,
        CORAL_DATA_DIR: join(dir, host),
        CORAL_LOG_LEVEL: 'silent',
        CORAL_FLEET_OPEN: 'true',
        CORAL_WORKERS: '2',
        CORAL_DNS_RATE_LIMIT_PER_SECOND: '0',
        CORAL_ALLOW_PRIVATE_ORIGINS: 'true',
        CORAL_HOSTS: 'www.origin.test=127.0.0.1',
      },
    });
    const { logger, lines } = capturingLogger();
    const metrics = new CoralMetrics({ defaultMetrics: false });
    const node = await CoralNode.start(config, { services: realServices, logger, metrics });
    nodes.push(node);
    expect(node.dns).toBeInstanceOf(DnsWorkers);
    expect(node.banner()).toMatch(/^ {2}dns +udp\+tcp .* on 2 worker threads$/m);
    const dns = node.dns as DnsWorkers;
    const port = config.dns.port;

    // A lone node answers every Coralized name with itself, whichever worker gets the query.
    const NAME = 'www.example.com.nyud.net';
    for (let i = 0; i < 48; i++) {
      expect(addresses(await ask(port, query(NAME, i), host))).toEqual([host]);
    }
    await dns.refreshStats();
    const [w0, w1] = dns.workerStates();
    expect(w0!.queries.udp + w1!.queries.udp).toBe(48);
    expect(w0!.queries.udp).toBeGreaterThan(0);
    expect(w1!.queries.udp).toBeGreaterThan(0);

    // SIGHUP's part: every worker answers the reload.
    await node.reloadWorkers();
    expect(lines.some((l) => l.msg === 'every worker reloaded')).toBe(true);

    // What lives on the main thread: the node's identity (admin API, DSHT) and the proxy's cache.
    const admin = `http://${host}:${config.admin.port}`;
    const nodeId = ((await (await fetch(`${admin}/v1/node`)).json()) as { nodeId: string }).nodeId;
    const site = `www.origin.test.${originPort}.nyud.net`;
    expect((await fetchVia({ ip: host, port: config.proxy.port }, site, '/obj/1')).status).toBe(
      200,
    );
    expect(origin.counts.get('/obj/1')).toBe(1);

    // A worker ended (as a crash would) is logged, counted and replaced; the other answers meanwhile.
    await dns.kill(0);
    for (let i = 0; i < 8; i++)
      expect(addresses(await ask(port, query(NAME, i), host))).toEqual([host]);
    await waitFor(() => dns.workerStates()[0]!.ready, { what: 'worker 0 replaced' });
    expect(lines.find((l) => l.msg === 'worker exited; starting it again')).toMatchObject({
      component: 'workers',
      worker: 0,
      level: 50,
    });
    expect(await metrics.text()).toMatch(/^coral_workers_restarts_total\{worker="0"\} 1$/m);
    await waitFor(
      async () => {
        await ask(port, query(NAME, 1), host);
        await dns.refreshStats();
        return dns.workerStates()[0]!.queries.udp > 0;
      },
      { what: 'the new worker 0 answering' },
    );

    // The admin API's view of the workers: both ready, worker 0 started twice.
    const { workers } = (await (await fetch(`${admin}/v1/workers`)).json()) as {
      workers: { worker: number; ready: boolean; restarts: number; queries: { udp: number } }[];
    };
    expect(workers.map((w) => [w.worker, w.ready, w.restarts])).toEqual([
      [0, true, 1],
      [1, true, 0],
    ]);
    expect(workers[1]!.queries.udp).toBeGreaterThan(0);

    // The same node, the same cache: a hit, no second origin fetch.
    const again = (await (await fetch(`${admin}/v1/node`)).json()) as { nodeId: string };
    expect(again.nodeId).toBe(nodeId);
    const hit = await fetchVia({ ip: host, port: config.proxy.port }, site, '/obj/1');
    expect(hit.status).toBe(200);
    expect(String(hit.headers['cache-status'])).toMatch(/hit/);
    expect(origin.counts.get('/obj/1')).toBe(1);

    // The DSHT still answers as this node: a second node joins through it, and once it is a member
    // every worker's answers name both (the directory pushed on the member events).
    const host2 = ip(2);
    const second = await CoralNode.start(
      loadConfig({
        env: {
          CORAL_HOST: host2,
          CORAL_DNS_HOST: host2,
          CORAL_ADMIN_HOST: host2,
          CORAL_DATA_DIR: join(dir, host2),
          CORAL_LOG_LEVEL: 'silent',
          CORAL_FLEET_OPEN: 'true',
          CORAL_BOOTSTRAP: `${host}:${config.dsht.port}`,
        },
      }),
      { services: realServices, logger: createLogger({ level: 'silent' }) },
    );
    nodes.push(second);
    // This node verified the newcomer over its DSHT (its round trips answered after the kill) ...
    await waitFor(
      async () =>
        (
          (await (await fetch(`${admin}/v1/fleet/auth`)).json()) as { members: { ip: string }[] }
        ).members.some((m) => m.ip === host2),
      { what: 'the second node verified', limitMs: 30_000, everyMs: 100 },
    );
    // ... and its workers name it: asked from a network no answer was cached for (answers cached
    // before the join stay until they expire), the answer names the newcomer.
    const resolver = `127.1.${subnet}.9`;
    await waitFor(
      async () => addresses(await ask(port, query(NAME, 1), host, resolver)).includes(host2),
      { what: 'a worker naming the node that joined', limitMs: 30_000, everyMs: 100 },
    );

    // SIGTERM's part: every worker drains, none is started again, the port is free.
    await node.stop();
    expect(lines.filter((l) => l.msg === 'DNS workers drained')).toMatchObject([{ drained: 2 }]);
    expect(lines.filter((l) => l.msg === 'worker exited; starting it again')).toHaveLength(1);
    await expect(
      ask(port, query(NAME, 9), host).then(
        () => 'answered',
        () => 'silent',
      ),
    ).resolves.toBe('silent');
  });
});
