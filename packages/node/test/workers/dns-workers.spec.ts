/**
 * DNS on every worker (issue 26), over real sockets and real worker threads (the `tsc -b` build of
 * worker-main.js): two workers on one port with reusePort, the directory the owner keeps pushed to
 * both, a killed worker replaced.
 */
import dgram from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { InMemoryNodeDirectory, InMemoryChallengeStore } from '@coral/dnssrv';
import { SeededRandom, waitFor } from '@coral/testkit';
import { loadConfig } from '../../src/config/index.js';
import { CoralMetrics } from '../../src/metrics/metrics.js';
import { systemClock } from '@coral/runtime';
import { DnsWorkers } from '../../src/workers/dns-workers.js';
import type { SupervisorLogger } from '../../src/workers/supervisor.js';
import { addresses, ask, query, texts } from './dns-client.js';

const hex = (i: number) => i.toString(16).padStart(40, '0');
const node = (i: number) => ({ id: hex(i), ipv4: `10.0.0.${i}`, httpPort: 8090 });
const NAME = 'www.example.com.nyud.net';

const quiet: SupervisorLogger = { info() {}, warn() {}, error() {} };

function setup() {
  const directory = new InMemoryNodeDirectory(
    { random: new SeededRandom(1) },
    { self: node(1) },
  ).add(node(2), { clusters: [1, 2] });
  const challenges = new InMemoryChallengeStore();
  const config = loadConfig({
    overrides: {
      workers: 2,
      dns: {
        host: '127.0.0.1',
        rateLimitPerSecond: 0,
        nameservers: [{ name: 'ns1.nyud.net', ip: '192.0.2.53' }],
      },
      log: { level: 'silent' },
    },
  });
  const metrics = new CoralMetrics({ defaultMetrics: false });
  const errors: object[] = [];
  const logger: SupervisorLogger = { ...quiet, error: (o) => errors.push(o) };
  const dns = new DnsWorkers(
    { directory, challenges, clock: systemClock, logger, metrics: metrics.workers },
    { config, publishIntervalMs: 3_600_000 },
  );
  return { directory, challenges, dns, metrics, errors };
}

describe('DNS on every worker', () => {
  const open: DnsWorkers[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((d) => d.close()));
  });

  it('spreads queries over both workers, each answering the same from the directory the owner pushes', async () => {
    const t = setup();
    open.push(t.dns);
    const { port } = await t.dns.listen({ port: 0, host: '127.0.0.1' });
    expect(port).toBeGreaterThan(0);

    const answers = new Set<string>();
    for (let i = 0; i < 64; i++) answers.add(addresses(await ask(port, query(NAME, i))).join(','));
    // Every worker answers with the node's two proxies (answerCount 2 of a fleet of 2).
    expect([...answers]).toEqual(['10.0.0.1,10.0.0.2']);
    await t.dns.refreshStats();
    const per = t.dns.workerStates().map((w) => w.queries.udp);
    expect(per[0]! + per[1]!).toBe(64);
    // Both got a share: 64 independent flows on one socket has p = 2^-63.
    expect(per[0]).toBeGreaterThan(0);
    expect(per[1]).toBeGreaterThan(0);
    expect(t.dns.stats().queries.udp).toBe(64);
    // Why each answer was what it was: every worker's decisions, merged in time order.
    const decisions = await t.dns.recentDecisions();
    expect(decisions).toHaveLength(64);
    expect(decisions.every((d) => d.name === NAME && d.rcode === 'NOERROR')).toBe(true);
    expect(decisions.map((d) => d.at)).toEqual(
      [...decisions.map((d) => d.at)].sort((a, b) => a - b),
    );
    expect(Array.isArray(await t.dns.probeCache())).toBe(true);
    const metrics = await t.metrics.registry.getMetricsAsJSON();
    const perWorker = metrics.find((m) => m.name === 'coral_worker_dns_queries_total')!;
    expect(perWorker.values.map((v) => [v.labels.worker, v.value]).sort()).toEqual([
      ['0', per[0]],
      ['1', per[1]],
    ]);

    // The node's one /metrics: the answers every worker sent, in coral_dns_answers_total (reported
    // once a second by each worker).
    await waitFor(
      async () => {
        const all = await t.metrics.registry.getMetricsAsJSON();
        const answers = all.find((m) => m.name === 'coral_dns_answers_total');
        return answers?.values.reduce((n, v) => n + v.value, 0) === 64;
      },
      { what: 'the workers reporting their 64 answers' },
    );

    // The owner's directory changes (node 2 dies, node 3 joins): once pushed, every worker says so.
    t.directory.setLive(hex(2), false);
    t.directory.add(node(3), { clusters: [1, 2] });
    t.dns.publish();
    await waitFor(
      async () => {
        const seen = new Set<string>();
        for (let i = 0; i < 32; i++) seen.add(addresses(await ask(port, query(NAME, i))).join(','));
        return seen.size === 1 && seen.has('10.0.0.1,10.0.0.3');
      },
      { what: 'every worker answering with the new directory' },
    );

    // A member event pushes by itself, without waiting for the (here hour-long) timer.
    t.directory.setLive(hex(3), false);
    t.dns.changed();
    t.dns.changed(); // one push for a burst
    await waitFor(
      async () => {
        const seen = new Set<string>();
        for (let i = 0; i < 32; i++) seen.add(addresses(await ask(port, query(NAME, i))).join(','));
        return seen.size === 1 && seen.has('10.0.0.1');
      },
      { what: 'every worker answering without node 3' },
    );

    // ACME TXT values set on the owner are answered by every worker once pushed.
    t.challenges.set('nyud.net', 'token-value');
    t.dns.publish();
    await waitFor(
      async () => {
        for (let i = 0; i < 16; i++) {
          const r = await ask(port, query('_acme-challenge.nyud.net', i, 16));
          if (!texts(r).includes('token-value')) return false;
        }
        return true;
      },
      { what: 'the TXT value on every worker' },
    );
    expect(t.errors).toEqual([]);
  });

  it('fails the start with CORAL_ERR_WORKER_START, saying why, when the port is taken', async () => {
    const taken = dgram.createSocket('udp4');
    await new Promise<void>((r) => taken.bind(0, '127.0.0.1', () => r()));
    try {
      const t = setup();
      await expect(
        t.dns.listen({ port: taken.address().port, host: '127.0.0.1' }),
      ).rejects.toMatchObject({
        code: 'CORAL_ERR_WORKER_START',
        message: expect.stringMatching(
          /worker 0 exited with code 1 before it was ready: cannot listen on 127\.0\.0\.1/,
        ),
      });
      await t.dns.close();
    } finally {
      taken.close();
    }
  });

  it('replaces a killed worker, which answers again on the same port', async () => {
    const t = setup();
    open.push(t.dns);
    const { port } = await t.dns.listen({ port: 0, host: '127.0.0.1' });
    const before = t.dns.workerStates()[1]!.threadId;
    await t.dns.kill(1);
    // Meanwhile the other worker answers every query.
    for (let i = 0; i < 8; i++) expect(addresses(await ask(port, query(NAME, i)))).toHaveLength(2);
    await waitFor(() => t.dns.workerStates()[1]!.ready, { what: 'worker 1 restarted' });
    const after = t.dns.workerStates()[1]!;
    expect(after.threadId).not.toBe(before);
    expect(after.restarts).toBe(1);
    expect(t.errors).toHaveLength(1);
    await waitFor(
      async () => {
        await ask(port, query(NAME, 1));
        await t.dns.refreshStats();
        return t.dns.workerStates()[1]!.queries.udp > 0;
      },
      { what: 'the new worker 1 answering' },
    );
    const restarts = (await t.metrics.registry.getMetricsAsJSON()).find(
      (m) => m.name === 'coral_workers_restarts_total',
    )!;
    expect(restarts.values).toEqual([
      expect.objectContaining({ labels: { worker: '1' }, value: 1 }),
    ]);
  });
});
