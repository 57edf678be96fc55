/**
 * Issue 11, Must-show 5: `_acme-challenge.<zone>` TXT values set through one node's admin API
 * (and CLI) are answered by every node of a 3-node fleet — asked with Node's own resolver at each
 * node's DNS port — and, once removed, answered by none (NODATA). The peer endpoint they travel
 * through is attacked from real sockets: no signature, a stranger's key, a replayed request, a
 * request re-aimed at another member, and a node without fleet keys.
 */
import { Resolver } from 'node:dns/promises';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpPeerSigner, Keyring } from '@coral/keyring';
import { loadConfig } from '../../src/config/load.js';
import { CoralNode } from '../../src/compose/node.js';
import { realServices } from '../../src/compose/services.js';
import { createLogger } from '../../src/logging/logger.js';
import { randomSubnet, runCli, tmpDir, waitFor } from '../helpers.js';

const subnet = randomSubnet();
const ips = [1, 2, 3, 4].map((i) => `127.0.${subnet}.${40 + i}`);
const dir = tmpDir('acme');
const NAME = '_acme-challenge.nyud.net';
const fleetKey = Keyring.generateKey();
const nodes: CoralNode[] = [];
let lone: CoralNode;

function start(ip: string, opts: { bootstrap?: string; key?: string }) {
  const config = loadConfig({
    env: {
      CORAL_HOST: ip,
      CORAL_DNS_HOST: ip,
      CORAL_ADMIN_HOST: ip,
      CORAL_DATA_DIR: `${dir}/${ip}`,
      CORAL_LOG_LEVEL: 'silent',
      CORAL_TLS_LOCAL_CA: 'false',
      ...(opts.bootstrap ? { CORAL_BOOTSTRAP: opts.bootstrap } : {}),
      // Keyed with the fleet's key; a node without it runs open (it must not join the others).
      ...(opts.key ? { CORAL_FLEET_KEYS: opts.key } : { CORAL_FLEET_OPEN: 'true' }),
    },
  });
  return CoralNode.start(config, {
    services: realServices,
    logger: createLogger({ level: 'silent' }),
    ...(opts.key ? { peerAuth: new HttpPeerSigner({ keyring: Keyring.parse([opts.key]) }) } : {}),
  });
}

/** TXT values at `_acme-challenge.<zone>` as the node at `ip` answers them (a fresh resolver: no cache). */
async function txt(ip: string): Promise<string[] | 'NODATA'> {
  const r = new Resolver({ timeout: 2_000, tries: 2 });
  r.setServers([`${ip}:5353`]);
  try {
    return (await r.resolveTxt(NAME)).map((chunks) => chunks.join('')).sort();
  } catch (err) {
    if ((err as { code?: string }).code === 'ENODATA') return 'NODATA';
    throw err;
  }
}

/** A raw request to an admin port from a chosen local address (a stranger on the network). */
function raw(
  ip: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  from = `127.0.${subnet}.99`,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: ip, port: 8092, method, path, headers, localAddress: from },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const cli = (ip: string, ...args: string[]) => runCli(['--admin', `http://${ip}:8092`, ...args]);

beforeAll(async () => {
  nodes.push(await start(ips[0]!, { key: fleetKey }));
  for (const ip of ips.slice(1, 3)) {
    nodes.push(await start(ip, { key: fleetKey, bootstrap: `${ips[0]}:8091` }));
  }
  // Every node knows the two others as live members.
  await waitFor(
    () =>
      nodes.every(
        (n) =>
          n.view.clusters() &&
          (n.view.clusters() as { liveProxies: unknown[] }).liveProxies.length === 3,
      ),
    30_000,
    'a fleet of three',
  );
  lone = await start(ips[3]!, {});
}, 60_000);

afterAll(async () => {
  await lone?.stop();
  for (const n of nodes.reverse()) await n.stop();
});

describe('ACME DNS-01 across the fleet', () => {
  it('answers a value set on one node from every node, and none after removal', async () => {
    for (const ip of ips.slice(0, 3)) expect(await txt(ip)).toBe('NODATA');

    const set = await cli(ips[0]!, 'acme', 'set', 'token-wildcard-AAAA', '--ttl', '300');
    expect(set.code, set.err).toBe(0);
    const answer = JSON.parse(set.out);
    expect(answer.challenge).toMatchObject({ zone: 'nyud.net', value: 'token-wildcard-AAAA' });
    expect(answer.propagation).toMatchObject({ mode: 'sent', complete: true });
    expect(answer.propagation.members.map((m: { address: string }) => m.address).sort()).toEqual([
      `${ips[1]}:8092`,
      `${ips[2]}:8092`,
    ]);
    // A wildcard plus apex order: two values at once, set through the admin API itself.
    const apex = await fetch(`http://${ips[1]}:8092/v1/acme/challenges`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ value: 'token-apex-BBBB' }),
    });
    expect(apex.status).toBe(200);
    for (const ip of ips.slice(0, 3)) {
      expect(await txt(ip)).toEqual(['token-apex-BBBB', 'token-wildcard-AAAA']);
    }
    const list = await cli(ips[2]!, 'acme', 'list');
    expect(
      JSON.parse(list.out)
        .challenges.map((c: { value: string }) => c.value)
        .sort(),
    ).toEqual(['token-apex-BBBB', 'token-wildcard-AAAA']);

    const removed = await cli(ips[2]!, 'acme', 'remove', 'token-wildcard-AAAA');
    expect(removed.code, removed.err).toBe(0);
    expect(JSON.parse(removed.out)).toMatchObject({ removed: 1, propagation: { complete: true } });
    for (const ip of ips.slice(0, 3)) expect(await txt(ip)).toEqual(['token-apex-BBBB']);
    const all = await cli(ips[0]!, 'acme', 'remove', '--all');
    expect(all.code, all.err).toBe(0);
    for (const ip of ips.slice(0, 3)) expect(await txt(ip)).toBe('NODATA');
  });

  it('refuses bad values and usage with clear errors', async () => {
    const bad = await cli(ips[0]!, 'acme', 'set', 'not printable \u00e9');
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/400 CORAL_ERR_ADMIN_BAD_REQUEST DNS_ERR_CHALLENGE/);
    const usage = await cli(ips[0]!, 'acme', 'remove');
    expect(usage.code).toBe(1);
    expect(usage.err).toMatch(/a VALUE or --all/);
    const ttl = await cli(ips[0]!, 'acme', 'set', 'x', '--ttl', '0');
    expect(ttl.code).toBe(1);
    // The operator's endpoints keep the admin rules: a client off loopback without the token is
    // refused (every socket of this test is on loopback, so the address is given in-process).
    const stranger = await nodes[0]!.admin.handle({
      method: 'POST',
      url: '/v1/acme/challenges',
      headers: { 'content-type': 'application/json', host: `${ips[0]}:8092` },
      remoteAddress: '192.0.2.7',
      body: JSON.stringify({ value: 'x' }),
    });
    expect(stranger.status).toBe(403);
  });

  it('refuses peer requests that do not authenticate with the fleet keys', async () => {
    const target = `${ips[1]}:8092`;
    const path = '/v1/peer/acme/challenges/evil-token?ttl=600';
    const sign = (key: string, authority = target, p = path, method = 'PUT') =>
      new HttpPeerSigner({ keyring: Keyring.parse([key]) }).sign({ method, authority, path: p });

    const attempts: [string, Record<string, string>][] = [
      ['missing', {}],
      ['malformed', { 'coral-peer-auth': 'garbage' }],
      ['unknown-key', { 'coral-peer-auth': sign(Keyring.generateKey()) }],
      // Signed for another member, sent to this one.
      ['bad-mac', { 'coral-peer-auth': sign(fleetKey, `${ips[2]}:8092`) }],
      // Signed for removing, sent as a set.
      ['bad-mac', { 'coral-peer-auth': sign(fleetKey, target, path, 'DELETE') }],
    ];
    for (const [reason, headers] of attempts) {
      const r = await raw(ips[1]!, 'PUT', path, headers);
      expect(r.status, reason).toBe(403);
      expect(JSON.parse(r.body).error).toMatchObject({
        code: 'CORAL_ERR_PEER_UNAUTHORIZED',
        message: expect.stringContaining(reason),
      });
    }
    expect(await txt(ips[1]!)).toBe('NODATA');

    // A request the fleet did sign is applied once; the same bytes again are a replay.
    const good = { 'coral-peer-auth': sign(fleetKey) };
    expect((await raw(ips[1]!, 'PUT', path, good)).status).toBe(200);
    expect(await txt(ips[1]!)).toEqual(['evil-token']);
    const replay = await raw(ips[1]!, 'PUT', path, good);
    expect(replay.status).toBe(403);
    expect(replay.body).toMatch(/replayed/);
    // A peer change is applied there only: it is not passed on.
    expect(await txt(ips[0]!)).toBe('NODATA');
    const del = '/v1/peer/acme/challenges';
    const cleared = await raw(ips[1]!, 'DELETE', del, {
      'coral-peer-auth': sign(fleetKey, target, del, 'DELETE'),
    });
    expect(cleared.status).toBe(200);
    expect(await txt(ips[1]!)).toBe('NODATA');
  });

  it('a node without fleet keys answers its own values only and takes no peer requests', async () => {
    const set = await cli(ips[3]!, 'acme', 'set', 'lone-value');
    // Alone, there is nobody to pass it on to: complete, and the answer says why nothing was sent.
    expect(set.code, set.err).toBe(0);
    expect(JSON.parse(set.out)).toMatchObject({
      challenge: { value: 'lone-value' },
      propagation: { mode: 'off', complete: true, reason: expect.stringMatching(/no fleet keys/) },
    });
    expect(await txt(ips[3]!)).toEqual(['lone-value']);
    const path = '/v1/peer/acme/challenges/x?ttl=60';
    const r = await raw(ips[3]!, 'PUT', path, {
      'coral-peer-auth': new HttpPeerSigner({ keyring: Keyring.parse([fleetKey]) }).sign({
        method: 'PUT',
        authority: `${ips[3]}:8092`,
        path,
      }),
    });
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body).error.message).toMatch(/no fleet keys/);
  });
});
