/**
 * The first node of a fleet is reached by fleet purges (issue 31's soak: 13 of 37 purges missed
 * node 1, `no-admin-record`). Five real nodes in this process (real DSHT over UDP, real proxy and
 * admin API on 127.0.B.x): the first starts alone and publishes its admin record while it knows
 * nobody, so the record is held only by itself; four more join it. The first node's address is
 * chosen so that it is the farthest of the five from its own record's key — the case where a
 * record left on the first node is missed by every other node's lookup (a get ends when the three
 * closest nodes it knows have answered). A purge asked of each of the others, through the admin
 * API and through the CLI, must reach every member, the first node included, and say complete;
 * the first node's copy is gone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareDistance, nodeIdFor, toHex } from '@coral/dsht';
import { loadConfig } from '../../src/config/load.js';
import { CoralNode } from '../../src/compose/node.js';
import { realServices } from '../../src/compose/services.js';
import { createLogger } from '../../src/logging/logger.js';
import { SampleOrigin, fetchVia } from '../../src/fleet/index.js';
import { adminRecordKey } from '../../src/trust/admin-records.js';
import { cliAt, randomSubnet, tmpDir, waitFor } from '../helpers.js';

const FLEET_KEY = 'f125'.repeat(16);
const token = 'test-admin-token-first-node-0123';
const DSHT_PORT = 8091;
const subnet = randomSubnet();
const joinerIps = [11, 12, 13, 14].map((x) => `127.0.${subnet}.${x}`);

/**
 * An address for the first node that is the farthest of the five from its own record's key.
 * Ids are SHA-1 of `ip:port`, so this is a deterministic search (about one address in five fits).
 */
function farthestFirstIp(): string {
  for (let x = 20; x < 250; x++) {
    const ip = `127.0.${subnet}.${x}`;
    const id = nodeIdFor(ip, DSHT_PORT);
    const key = adminRecordKey(toHex(id));
    if (joinerIps.every((o) => compareDistance(nodeIdFor(o, DSHT_PORT), id, key) < 0)) return ip;
  }
  throw new Error(`no address in 127.0.${subnet}.20-249 is the farthest from its own record`);
}

const firstIp = farthestFirstIp();
const dir = tmpDir('first-node');
const origin = new SampleOrigin({ host: '127.0.0.1', objects: 8 });
const logger = createLogger({ level: 'silent' });
let first: CoralNode;
const joiners: CoralNode[] = [];
let name = '';

function start(ip: string, extra: Record<string, string> = {}): Promise<CoralNode> {
  const config = loadConfig({
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
      CORAL_PROXY_AUDIT_FRACTION: '0',
      ...extra,
    },
  });
  return CoralNode.start(config, { services: realServices, logger });
}

const admin = (node: CoralNode, method: string, url: string, body?: unknown) =>
  node.admin
    .handle({
      method,
      url,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      remoteAddress: '127.0.0.1',
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    .then((r) => ({ status: r.status, json: () => JSON.parse(r.body) }));

type PurgeAnswer = {
  propagation: {
    complete: boolean;
    members: { nodeId: string; address: string; ok: boolean; count?: number; error?: string }[];
  };
};

const cachedUrls = async (node: CoralNode): Promise<string[]> =>
  (await admin(node, 'GET', '/v1/cache')).json().objects.map((o: { url: string }) => o.url);

beforeAll(async () => {
  const { port } = await origin.listen();
  name = `www.origin.test.${port}.nyud.net`;
  // The first node alone: it publishes its admin record while it knows no other node.
  first = await start(firstIp);
  await waitFor(
    async () => (await admin(first, 'GET', '/readyz')).status === 200,
    20_000,
    'the first node ready alone',
  );
  for (const ip of joinerIps)
    joiners.push(await start(ip, { CORAL_BOOTSTRAP: `${firstIp}:${DSHT_PORT}` }));
  const all = [first, ...joiners];
  await waitFor(
    () => all.every((n) => n.dsht.members().length === all.length - 1),
    30_000,
    'every node verifies the four others',
  );
}, 90_000);

afterAll(async () => {
  for (const n of joiners) await n.stop();
  await first?.stop();
  await origin.close();
});

describe('a fleet purge reaches the first node of the fleet', () => {
  it('is applied by the first node when asked of each other member, and says complete', async () => {
    const firstId = first.view.info().nodeId;
    for (const [i, asked] of joiners.entries()) {
      const path = `/obj/${i + 1}`;
      const url = `http://www.origin.test:${origin.address.port}${path}`;
      expect((await fetchVia({ ip: firstIp, port: 8090 }, name, path)).status).toBe(200);
      await waitFor(async () => (await cachedUrls(first)).includes(url), 10_000, 'first caches');
      const r = await admin(asked, 'POST', '/v1/purge', { url });
      const answer = r.json() as PurgeAnswer;
      const members = JSON.stringify(answer.propagation.members);
      expect(r.status, `purge asked of ${joinerIps[i]}: ${members}`).toBe(200);
      expect(answer.propagation.complete).toBe(true);
      const atFirst = answer.propagation.members.find((m) => m.nodeId === firstId);
      expect(atFirst, members).toMatchObject({ ok: true, address: `${firstIp}:8092`, count: 1 });
      expect(answer.propagation.members).toHaveLength(4);
      expect(await cachedUrls(first)).not.toContain(url);
    }
  });

  it('the CLI asked of a joiner prints the first node’s count and exits 0', async () => {
    const path = '/obj/4';
    const url = `http://www.origin.test:${origin.address.port}${path}`;
    expect((await fetchVia({ ip: firstIp, port: 8090 }, name, path)).status).toBe(200);
    await waitFor(async () => (await cachedUrls(first)).includes(url), 10_000, 'first caches');
    const cli = await cliAt(`http://${joinerIps[3]}:8092`, 'purge', '--url', url);
    expect(cli.code, cli.err + cli.out).toBe(0);
    expect(cli.out).toMatch(new RegExp(`${firstIp.replaceAll('.', '\\.')}:8092  1$`, 'm'));
    expect(await cachedUrls(first)).not.toContain(url);
  });
});
