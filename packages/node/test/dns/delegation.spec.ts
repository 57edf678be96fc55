/**
 * `dns.delegation` reaches the node's DNS server: a short Coralized name is aliased into the
 * deepest sub-zone (l2.l1.l0) and the answer carries the target's addresses too (RFC 1034 §4.3.2),
 * so a stub resolver asked at a real node gets the fleet's proxies; with it off, no alias.
 */
import { Resolver } from 'node:dns/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { CoralNode } from '../../src/compose/node.js';
import { realServices } from '../../src/compose/services.js';
import { createLogger } from '../../src/logging/logger.js';
import { nodeEnv } from '../adversary/attacker.js';
import { randomSubnet, tmpDir, waitFor } from '../helpers.js';

const subnet = randomSubnet();
const ips = [1, 2, 3].map((i) => `127.0.${subnet}.${60 + i}`);
const dir = tmpDir('delegation');
const nodes: CoralNode[] = [];
const NAME = 'www.origin.test.8080.nyud.net';

function start(ip: string, delegation: boolean, bootstrap?: string) {
  const config = loadConfig({
    env: {
      ...nodeEnv(ip, `${dir}/${ip}`, 'keyed'),
      CORAL_TLS_LOCAL_CA: 'false',
      CORAL_DNS_DELEGATION: String(delegation),
      CORAL_DNS_DELEGATION_PORT: '5353',
      ...(bootstrap ? { CORAL_BOOTSTRAP: bootstrap } : {}),
    },
  });
  return CoralNode.start(config, {
    services: realServices,
    logger: createLogger({ level: 'silent' }),
  });
}

function resolverAt(ip: string): Resolver {
  const r = new Resolver({ timeout: 2_000, tries: 2 });
  r.setServers([`${ip}:5353`]);
  return r;
}

beforeAll(async () => {
  nodes.push(await start(ips[0]!, true));
  nodes.push(await start(ips[1]!, true, `${ips[0]}:8091`));
  nodes.push(await start(ips[2]!, false, `${ips[0]}:8091`));
  // Each node answers with proxies once it knows the others as members.
  for (const ip of ips) {
    await waitFor(
      async () =>
        (
          await resolverAt(ip)
            .resolve4(`www.origin.test.8080.l0.nyud.net`)
            .catch(() => [])
        ).length >= 2,
      15_000,
      `proxies answered at ${ip}`,
    );
  }
}, 30_000);

afterAll(async () => {
  for (const n of nodes.reverse()) await n.stop();
});

describe('dns.delegation at a running node', () => {
  it('on: the short name is an alias into l2.l1.l0, answered with the proxies in the same answer', async () => {
    const r = resolverAt(ips[0]!);
    expect(await r.resolveCname(NAME)).toEqual(['www.origin.test.8080.l2.l1.l0.nyud.net']);
    const addresses = await r.resolve4(NAME);
    expect(addresses.length).toBeGreaterThanOrEqual(1);
    for (const a of addresses) expect(ips).toContain(a);
    expect(new Set(addresses).size).toBe(addresses.length);
  });

  it('off: the same name is answered directly, with no alias', async () => {
    const r = resolverAt(ips[2]!);
    await expect(r.resolveCname(NAME)).rejects.toMatchObject({ code: 'ENODATA' });
    expect((await r.resolve4(NAME)).length).toBeGreaterThanOrEqual(1);
  });
});
