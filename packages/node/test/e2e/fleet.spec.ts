/**
 * End to end: six node processes on 127.0.B.11-16 and a counting origin on loopback reached by a
 * test host name. A client resolves www.origin.test.<port>.nyud.net through a node's DNS server
 * with Node's stub resolver and fetches through the proxy it was given; a second client through
 * another node is served from the first node's copy (Cache-Status: peer); the origin saw one request.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fleet, SampleOrigin, fetchVia, resolveThrough } from '../../src/fleet/index.js';
import { tmpDir } from '../helpers.js';

const dataRoot = tmpDir('e2e');
const origin = new SampleOrigin({ host: '127.0.0.1', objects: 6 });
let fleet: Fleet;

beforeAll(async () => {
  await origin.listen();
  fleet = new Fleet({
    nodes: 6,
    dataRoot,
    env: { CORAL_ALLOW_PRIVATE_ORIGINS: 'true', CORAL_HOSTS: 'www.origin.test=127.0.0.1' },
    readyTimeoutMs: 60_000,
  });
  await fleet.start();
}, 90_000);

afterAll(async () => {
  const processes = fleet?.nodes.map((n) => n.process) ?? [];
  await fleet?.stop();
  await origin.close();
  if (processes.every((p) => p.exitCode === 0)) rmSync(dataRoot, { recursive: true, force: true });
});

describe('a six-process fleet', () => {
  it('serves a Coralized URL found through DNS, then a peer copy, with one origin request', async () => {
    const name = `www.origin.test.${origin.address.port}.nyud.net`;
    const fleetIps = fleet.nodes.map((n) => n.ip);
    const dnsA = fleet.nodes[0]!;
    const answers = await resolveThrough({ ip: dnsA.ip, port: dnsA.dnsPort }, name);
    expect(answers.length).toBeGreaterThan(0);
    for (const ip of answers) expect(fleetIps).toContain(ip);
    const first = answers[0]!;
    const r1 = await fetchVia({ ip: first, port: 8090 }, name, '/obj/3');
    expect(r1.status).toBe(200);
    expect(r1.body.equals(origin.body(3))).toBe(true);
    expect(origin.counts.get('/obj/3')).toBe(1);

    // The second client asks another node's DNS server and uses a proxy other than the first.
    const other = fleet.nodes.find((n) => n.ip !== first && n.ip !== dnsA.ip) ?? fleet.nodes[1]!;
    const answers2 = await resolveThrough({ ip: other.ip, port: other.dnsPort }, name);
    const second = answers2.find((ip) => ip !== first) ?? other.ip;
    expect(second).not.toBe(first);
    const r2 = await fetchVia({ ip: second, port: 8090 }, name, '/obj/3');
    expect(r2.status).toBe(200);
    expect(r2.body.equals(origin.body(3))).toBe(true);
    // One of the two went through another member (the one designated for the URL, maybe the second).
    expect([r1.cacheStatus, r2.cacheStatus].some((cs) => /peer/i.test(cs))).toBe(true);
    expect(origin.counts.get('/obj/3')).toBe(1);
  });

  it('shuts every node down cleanly on SIGTERM', async () => {
    await fleet.stop();
    for (const n of fleet.nodes) expect(n.process.exitCode, fleet.log(n.index)).toBe(0);
  });
});
