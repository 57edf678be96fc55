/**
 * Issue 13, origin opt-out over real `coral-node` processes (a keyed fleet of three): an origin
 * answering `Coral-Control: redirect-home` has every member send its clients home, including
 * members that never fetched from it (they read the record its fetcher published in the DSHT).
 * Which member fetches from the origin depends on the node ids (designated fetcher), so the test
 * asks only members that had not touched the site before the opt-out, once the fetcher's record
 * can be read through them (it is published after the fetcher's answer). A client's own
 * `Coral-Control` request field opts nothing out.
 */
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fleet, fetchVia, type FleetNode } from '../../src/fleet/index.js';
import { siteKey } from '@coral/httpprx';
import { everyNodeVerifiesTheOthers, tmpDir, waitFor } from '../helpers.js';

/** An origin that counts requests per path and may ask the fleet to send its clients home. */
class Origin {
  readonly counts = new Map<string, number>();
  readonly seen: IncomingHttpHeaders[] = [];
  readonly #server: Server;
  port = 0;
  constructor(control: string | undefined) {
    this.#server = createServer((req, res) => {
      const path = req.url ?? '/';
      this.counts.set(path, (this.counts.get(path) ?? 0) + 1);
      this.seen.push(req.headers);
      res.writeHead(200, {
        'content-type': 'text/plain',
        'cache-control': 'public, max-age=3600',
        ...(control ? { 'coral-control': control } : {}),
      });
      res.end(`object ${path}\n`);
    });
  }
  async listen(): Promise<void> {
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    this.port = (this.#server.address() as AddressInfo).port;
  }
  count(path: string): number {
    return this.counts.get(path) ?? 0;
  }
  close(): Promise<void> {
    return new Promise((r) => this.#server.close(() => r()));
  }
}

const home = new Origin('redirect-home; max-age=600');
const plain = new Origin(undefined);
const dataRoot = tmpDir('opt-out-fleet');
let fleet: Fleet;
let nodes: FleetNode[];
let ok = 0;

const via = (n: FleetNode, host: string, path: string, headers: Record<string, string> = {}) =>
  fetchVia({ ip: n.ip, port: n.proxyPort }, host, path, { headers });

beforeAll(async () => {
  await home.listen();
  await plain.listen();
  fleet = new Fleet({
    nodes: 3,
    dataRoot,
    logLevel: process.env.CORAL_TEST_LOG_LEVEL ?? 'info',
    env: {
      CORAL_ALLOW_PRIVATE_ORIGINS: 'true',
      CORAL_HOSTS: 'www.home.test=127.0.0.1,www.plain.test=127.0.0.1',
      CORAL_TLS_LOCAL_CA: 'false',
    },
    readyTimeoutMs: 60_000,
  });
  await fleet.start();
  nodes = fleet.nodes;
  await everyNodeVerifiesTheOthers(nodes);
}, 90_000);

afterAll(async () => {
  await fleet?.stop();
  await home.close();
  await plain.close();
  if (ok === 2) rmSync(dataRoot, { recursive: true, force: true });
});

describe('Coral-Control: redirect-home across a fleet', () => {
  it('members that never fetched from the origin send its clients home', async () => {
    const host = `www.home.test.${home.port}.nyud.net`;
    const first = await via(nodes[0]!, host, '/first');
    expect(first.status).toBe(200);
    expect(first.headers['coral-control']).toBeUndefined();
    expect(home.count('/first')).toBe(1);
    // The fetcher publishes the opt-out after it answered its client: once the record can be read
    // from the DSHT through each other member, that member must send the site's clients home.
    const record = Buffer.from(siteKey(`http://www.home.test:${home.port}`)).toString('hex');
    for (const n of nodes.slice(1)) {
      await waitFor(
        async () =>
          (await n.admin.json<{ values: unknown[] }>('GET', `/v1/dsht/values/${record}`)).values
            .length > 0,
        10_000,
        `the opt-out record, read through ${n.ip}`,
      );
    }
    for (const n of nodes.slice(1)) {
      const r = await via(n, host, '/next');
      expect(r.status, n.ip).toBe(307);
      expect(r.headers.location).toBe(`http://www.home.test:${home.port}/next`);
      expect(r.headers['cache-control']).toBe('private, no-store');
      expect(r.cacheStatus).toContain('detail=redirect-home');
    }
    expect(home.count('/next')).toBe(0);
    ok++;
  });

  it("a client's Coral-Control request field opts nothing out", async () => {
    const host = `www.plain.test.${plain.port}.nyud.net`;
    const r = await via(nodes[1]!, host, '/x', { 'coral-control': 'redirect-home; max-age=600' });
    expect(r.status).toBe(200);
    expect(plain.seen.every((h) => h['coral-control'] === undefined)).toBe(true);
    for (const n of nodes) expect((await via(n, host, '/y')).status, n.ip).toBe(200);
    ok++;
  });
});
