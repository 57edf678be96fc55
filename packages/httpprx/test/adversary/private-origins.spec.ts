/**
 * Adversary: a site-mode deployment whose origin is on a private network (the campus CDN) must not
 * open that network to Coralized names. The configured site origin (host and port) may be private
 * without `allowPrivateOrigins`; any other private address stays refused before any connection.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get, startOrigin, startProxy } from '../helpers/harness.js';
import type { Origin, ProxyHarness } from '../helpers/harness.js';
import { rawRequest, startTrap } from './attacker.js';
import type { Trap } from './attacker.js';

const SITE = 'www.school.test';
let trap: Trap;
let origin: Origin;
let proxy: ProxyHarness;

beforeAll(async () => {
  trap = await startTrap('127.0.0.66'); // e.g. an admin API on the private network
  origin = await startOrigin((req, res) => {
    res.writeHead(200, { 'cache-control': 'max-age=60', 'content-type': 'text/plain' });
    res.end(`site origin saw ${req.url}`);
  });
  proxy = await startProxy({
    sites: { [SITE]: `http://origin.test:${origin.port}` },
    allowPrivateOrigins: false,
    hosts: { 'origin.test': ['127.0.0.2'], 'admin.test': ['127.0.0.66'] },
  });
});

afterAll(async () => {
  await proxy.close();
  await origin.close();
  await trap.close();
});

const req = (host: string, target = '/') =>
  rawRequest(proxy.port, `GET ${target} HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n\r\n`);

describe('private site origin without allowPrivateOrigins', () => {
  it('the configured site origin is fetched', async () => {
    const r = await get(proxy.port, SITE, '/page');
    expect(r.status).toBe(200);
    expect(r.body.toString()).toBe('site origin saw /page');
  });

  it('Coralized names for other private addresses are refused before any connection', async () => {
    for (const host of [
      `127.0.0.66.${trap.port}.nyud.net`,
      `admin.test.${trap.port}.nyud.net`,
      `origin.test.${trap.port}.nyud.net`, // the site origin's name, another port
    ]) {
      const r = await req(host);
      expect(r.status, host).toBe(403);
      expect(r.headers['x-coral-error'], host).toBe('CORAL_ORIGIN_FORBIDDEN');
    }
    expect(trap.connections).toEqual([]);
  });
});
