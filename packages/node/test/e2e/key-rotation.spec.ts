/**
 * Issue 10, must-show 2: the fleet key rotates over five `coral-node` processes with no downtime —
 * install B on every node, make B primary on every node, remove A from every node — while DSHT gets
 * and proxy fetches through peers keep succeeding after every single node's change. A sixth node
 * then started with only key A (a stale configuration) is isolated: it says so in its log and its
 * /readyz (503, naming key B), and it recovers once it is given B. Every step is an admin API call (what
 * `coral-node keys install|use|remove` sends); nothing waits on a duration.
 */
import { readFileSync, rmSync } from 'node:fs';
import { Keyring } from '@coral/keyring';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fleet, SampleOrigin, fetchVia, type FleetNode } from '../../src/fleet/index.js';
import { tmpDir, waitFor } from '../helpers.js';

const A = Keyring.generateKey();
const B = Keyring.generateKey();
const idA = Keyring.keyId(A);
const idB = Keyring.keyId(B);
const dataRoot = tmpDir('rotation');
const origin = new SampleOrigin({ host: '127.0.0.1', objects: 24, objectBytes: 4096 });
let fleet: Fleet;
let rotating: FleetNode[];
let laggard: FleetNode;
/** Logs and data stay behind for a look unless the test passed. */
let passed = false;

type Ready = { ready: boolean; checks: Record<string, boolean>; reason?: string };

beforeAll(async () => {
  await origin.listen();
  fleet = new Fleet({
    nodes: 5,
    dataRoot,
    keys: [A],
    logLevel: process.env.CORAL_TEST_LOG_LEVEL ?? 'info',
    env: { CORAL_ALLOW_PRIVATE_ORIGINS: 'true', CORAL_HOSTS: 'www.origin.test=127.0.0.1' },
    readyTimeoutMs: 30_000,
  });
  await fleet.start();
  rotating = fleet.nodes.slice(0, 5);
}, 60_000);

afterAll(async () => {
  await fleet?.stop();
  await origin.close();
  if (passed && fleet?.nodes.every((n) => n.process.exitCode === 0))
    rmSync(dataRoot, { recursive: true, force: true });
});

describe('key rotation over five node processes', () => {
  it('adds B, makes it primary, removes A with gets and peer fetches succeeding throughout; a node left on A is isolated and says so', async () => {
    const name = `www.origin.test.${origin.address.port}.nyud.net`;
    const keys = [0, 1].map((i) => ({ key: `rotation-${i}`, value: `value-${i}` }));
    for (const [i, { key, value }] of keys.entries())
      await rotating[i]!.admin.json('PUT', `/v1/dsht/values/${key}`, { value, ttl: 600 });
    let object = 0;
    let asked = 0;
    const succeeding = async (step: string) => {
      for (const n of rotating) {
        for (const { key, value } of keys) {
          const r = await n.admin.json<{ values: { text?: string }[] }>(
            'GET',
            `/v1/dsht/values/${key}`,
          );
          expect(
            r.values.map((v) => v.text),
            `${step}: get ${key} on ${n.ip}`,
          ).toContain(value);
        }
      }
      // A new object asked of two nodes: one origin fetch, and a peer fetch between members (the
      // first node asks the member designated for the URL, or is that member and the second asks
      // it; a second node designated for it holds it already).
      const path = `/obj/${++object}`;
      const first = rotating[asked++ % 5]!;
      const second = rotating[asked % 5]!;
      const r1 = await fetchVia({ ip: first.ip, port: first.proxyPort }, name, path);
      expect(r1.status, `${step}: ${path} via ${first.ip}`).toBe(200);
      const url = `http://www.origin.test:${origin.address.port}${path}`;
      await waitFor(
        async () =>
          (await first.admin.json<{ objects: { url: string }[] }>('GET', '/v1/cache')).objects.some(
            (o) => o.url === url,
          ),
        10_000,
        'the first copy to be cached',
      );
      const r2 = await fetchVia({ ip: second.ip, port: second.proxyPort }, name, path);
      expect(r2.status, `${step}: ${path} via ${second.ip}`).toBe(200);
      expect(r2.body.equals(origin.body(object)), step).toBe(true);
      expect(
        [r1.cacheStatus, r2.cacheStatus].some((cs) => /peer/i.test(cs)),
        `${step}: ${path} via ${first.ip} (${r1.cacheStatus}) then ${second.ip} (${r2.cacheStatus})`,
      ).toBe(true);
      expect(origin.counts.get(path), step).toBe(1);
    };

    await succeeding('before');
    for (const [step, call] of [
      ['install B', (n: FleetNode) => n.admin.json('POST', '/v1/fleet/keys', { key: B })],
      ['use B', (n: FleetNode) => n.admin.json('POST', `/v1/fleet/keys/${idB}/use`)],
      ['remove A', (n: FleetNode) => n.admin.json('DELETE', `/v1/fleet/keys/${idA}`)],
    ] as const) {
      for (const [i, n] of rotating.entries()) {
        await call(n);
        await succeeding(`${step} on ${i + 1} of 5`);
      }
    }
    for (const n of rotating) {
      expect(await n.admin.json('GET', '/v1/fleet/keys')).toMatchObject({
        keys: [{ id: idB, primary: true }],
      });
      expect((await n.admin.json<Ready>('GET', '/readyz')).ready).toBe(true);
    }

    // A sixth node with the old configuration (key A only; it notices isolation after 1 s without
    // authenticated traffic). The fleet reaches out to it under B: it authenticates none of that,
    // nor does the fleet authenticate its datagrams under A.
    laggard = fleet.addNode({ CORAL_FLEET_ISOLATION_AFTER_MS: '1000' });
    expect(laggard.env.CORAL_FLEET_KEYS).toBe(A);
    await waitFor(
      () =>
        laggard.admin.json('GET', '/healthz').then(
          () => true,
          () => false,
        ),
      15_000,
      'the sixth node to answer again',
    );
    const address = `${laggard.ip}:${laggard.dshtPort}`;
    const ready = () => laggard.admin.json<Ready>('GET', '/readyz');
    // One PING from the fleet at a time (under its primary key), until the node's isolation is as wanted.
    const pingUntil = (isolated: boolean, what: string) =>
      waitFor(
        async () => {
          await rotating[0]!.admin.json('POST', '/v1/dsht/ping', { address, retries: 0 });
          return (await ready()).checks.fleetKeys === !isolated;
        },
        15_000,
        what,
      );
    await pingUntil(true, 'the node left on key A to report isolation');
    const isolated = await ready();
    expect(isolated.checks.fleetKeys).toBe(false);
    expect(isolated.reason).toMatch(/^isolated from the fleet: /);
    expect(isolated.reason).toContain(idB);
    const res = await fetch(`${laggard.adminUrl}/readyz`);
    await res.arrayBuffer();
    expect(res.status).toBe(503);
    const line = readFileSync(laggard.logFile, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: number; msg: string })
      .find((l) => l.msg.startsWith('this node is isolated from its fleet'));
    expect(line?.level).toBe(50); // pino's error
    expect(line?.msg).toContain(idB);
    // It never became a member of the five; their gets and fetches still succeed.
    for (const n of rotating) {
      const auth = await n.admin.json<{ members: { ip: string }[] }>('GET', '/v1/fleet/auth');
      expect(auth.members.map((m) => m.ip)).not.toContain(laggard.ip);
    }
    await succeeding('after isolation');

    // Given the fleet's key, it is no longer isolated at the next authenticated datagram.
    await laggard.admin.json('POST', '/v1/fleet/keys', { key: B });
    await pingUntil(false, 'the node to recover');
    expect((await ready()).reason).toBeUndefined();
    passed = true;
  }, 60_000);
});
