/**
 * Issue 13, Must-show 4 (purge): over five real `coral-node` processes on 127.x addresses, a purge
 * taken by one node through its admin API (and CLI) by URL, by prefix and by tag (`Surrogate-Key`
 * and `Cache-Tag`) drops the matching objects on every member, each member's count is in the
 * answer, and a fetch through any node goes back to the origin. A node stopped during a purge
 * applies it when it is started again, before it turns ready. Forged, unsigned, replayed and
 * tampered propagations sent from an attacker's socket are refused and purge nothing. Every wait
 * is on a condition (waitFor), none on a duration.
 */
import { once } from 'node:events';
import { spawn } from 'node:child_process';
import { openSync, closeSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpPeerSigner, Keyring } from '@coral/keyring';
import { ManualClock } from '@coral/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_PATH, Fleet, fetchVia, stopProcess, type FleetNode } from '../../src/fleet/index.js';
import { AdminClient } from '../../src/cli/client.js';
import { bodyDigest } from '../../src/peer/requests.js';
import { cliAt, everyNodeVerifiesTheOthers, tmpDir, waitFor, waitReady } from '../helpers.js';

/** Tags by path: `/img/*` carry Surrogate-Key (spaces), `/doc/*` Cache-Tag (commas). */
function tagHeaders(path: string): Record<string, string> {
  if (path.startsWith('/img/')) return { 'surrogate-key': `images product-${path.slice(5)} all` };
  if (path.startsWith('/doc/')) return { 'cache-tag': `docs, product-${path.slice(5)}, all` };
  return {};
}

/** An origin of tagged, cacheable objects that counts the requests it answers per path. */
class TaggedOrigin {
  readonly counts = new Map<string, number>();
  readonly #server: Server = createServer((req, res) => {
    const path = req.url ?? '/';
    this.counts.set(path, (this.counts.get(path) ?? 0) + 1);
    const body = `object ${path}\n`;
    res.writeHead(200, {
      'content-type': 'text/plain',
      'content-length': String(Buffer.byteLength(body)),
      'cache-control': 'public, max-age=3600',
      ...tagHeaders(path),
    });
    res.end(body);
  });
  port = 0;
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

const origin = new TaggedOrigin();
const dataRoot = tmpDir('purge-fleet');
let fleet: Fleet;
let nodes: FleetNode[];
let name: string;
let passed = 0;
const url = (path: string) => `http://www.origin.test:${origin.port}${path}`;

type CacheList = { objects: { url: string }[] };
const cachedUrls = async (n: FleetNode) =>
  new Set((await n.admin.json<CacheList>('GET', '/v1/cache')).objects.map((o) => o.url));

/** Fetch `paths` through every node in turn, until each node holds its own copy of each. */
async function warm(paths: string[], on: FleetNode[] = nodes): Promise<void> {
  for (const n of on) {
    for (const p of paths) {
      const r = await fetchVia({ ip: n.ip, port: n.proxyPort }, name, p);
      expect(r.status, `${p} via ${n.ip}`).toBe(200);
      expect(r.body.toString()).toBe(`object ${p}\n`);
    }
  }
  await waitFor(
    async () => {
      for (const n of on) {
        const have = await cachedUrls(n);
        if (!paths.every((p) => have.has(url(p)))) return false;
      }
      return true;
    },
    20_000,
    'every node caches its copy',
  );
}

type PurgeAnswer = {
  id: string;
  local: { nodeId: string; count: number };
  propagation: {
    mode: string;
    complete: boolean;
    members: { nodeId: string; address: string; ok: boolean; count?: number; error?: string }[];
  };
};

/**
 * POST /v1/purge (each member is given 5 s: the client waits longer than that); an answer that
 * some member did not apply is a 502 with the same body.
 */
async function purge(on: FleetNode, body: Record<string, string>): Promise<PurgeAnswer> {
  return new AdminClient({ url: on.adminUrl, timeoutMs: 15_000 }).json<PurgeAnswer>(
    'POST',
    '/v1/purge',
    body,
    [502],
  );
}

/** A raw request to an admin port from a stranger's address. */
function raw(
  to: FleetNode,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: to.ip,
        port: to.adminPort,
        method,
        path,
        headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
        localAddress: `127.0.${fleet.subnet}.99`,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Start a stopped node again on its data directory; resolves to its first ready /readyz. */
async function restart(n: FleetNode) {
  const fd = openSync(n.logFile, 'a');
  n.process = spawn(process.execPath, [CLI_PATH, 'start'], {
    env: { PATH: process.env.PATH ?? '', ...n.env },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  return waitReady(n.admin, 'the restarted node is ready', 60_000);
}

beforeAll(async () => {
  await origin.listen();
  name = `www.origin.test.${origin.port}.nyud.net`;
  fleet = new Fleet({
    nodes: 5,
    dataRoot,
    logLevel: process.env.CORAL_TEST_LOG_LEVEL ?? 'info',
    env: {
      CORAL_ALLOW_PRIVATE_ORIGINS: 'true',
      CORAL_HOSTS: 'www.origin.test=127.0.0.1',
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
  await origin.close();
  if (passed === 6) rmSync(dataRoot, { recursive: true, force: true });
});

describe('fleet purge over five node processes', () => {
  it('purges one URL on every member, with each member’s count, and the next fetch goes to the origin', async () => {
    await warm(['/u/1', '/u/2']);
    const before = origin.count('/u/1');
    const r = await purge(nodes[2]!, { url: url('/u/1') });
    expect(r.local.count).toBe(1);
    expect(r.propagation, JSON.stringify(r.propagation)).toMatchObject({
      mode: 'sent',
      complete: true,
    });
    expect(r.propagation.members.map((m) => m.address).sort()).toEqual(
      nodes
        .filter((n) => n !== nodes[2])
        .map((n) => `${n.ip}:${n.adminPort}`)
        .sort(),
    );
    for (const m of r.propagation.members)
      expect(m, m.address).toMatchObject({ ok: true, count: 1 });
    for (const n of nodes) {
      const have = await cachedUrls(n);
      expect(have.has(url('/u/1')), n.ip).toBe(false);
      expect(have.has(url('/u/2')), n.ip).toBe(true);
    }
    // Every member withdrew its announcement: across every node's DSHT store, the newest record of
    // each of the five is a tombstone.
    const key = encodeURIComponent(`url:${url('/u/1')}`);
    await waitFor(
      async () => {
        const newest = new Map<string, { state: string; at: number }>();
        for (const n of nodes) {
          const r = await n.admin.json<{
            values: { holder?: { nodeId: string; state: string; at: number } }[];
          }>('GET', `/v1/dsht/local/${key}`);
          for (const { holder: h } of r.values) {
            if (h && (newest.get(h.nodeId)?.at ?? -1) < h.at) newest.set(h.nodeId, h);
          }
        }
        return newest.size === 5 && [...newest.values()].every((h) => h.state === 'withdrawn');
      },
      20_000,
      'every announcement of /u/1 withdrawn',
    );
    // Not served from any cache any more: the first fetch after the purge goes to the origin.
    const again = await fetchVia({ ip: nodes[4]!.ip, port: nodes[4]!.proxyPort }, name, '/u/1');
    expect(again.status).toBe(200);
    expect(origin.count('/u/1')).toBe(before + 1);
    passed++;
  });

  it('purges a prefix, and the CLI prints each member’s count', async () => {
    await warm(['/p/a/1', '/p/a/2', '/p/b/1']);
    const cli = await cliAt(nodes[0]!.adminUrl, 'purge', '--prefix', url('/p/a/'));
    expect(cli.code, cli.err).toBe(0);
    const lines = cli.out.trim().split('\n');
    expect(lines[0]).toMatch(new RegExp(`^purge [0-9a-f]{32}  prefix ${url('/p/a/')}$`));
    expect(lines[1]).toMatch(/\(this node\) {2}2$/);
    for (const n of nodes.slice(1)) {
      expect(lines).toContainEqual(expect.stringMatching(new RegExp(`${n.ip}:8092  2$`)));
    }
    for (const n of nodes) {
      const have = await cachedUrls(n);
      expect([have.has(url('/p/a/1')), have.has(url('/p/a/2')), have.has(url('/p/b/1'))]).toEqual([
        false,
        false,
        true,
      ]);
    }
    passed++;
  });

  it('purges by Surrogate-Key and by Cache-Tag', async () => {
    await warm(['/img/1', '/img/2', '/doc/1', '/doc/2']);
    const images = await purge(nodes[1]!, { tag: 'images' });
    expect(images.local.count).toBe(2);
    expect(images.propagation.members.map((m) => m.count)).toEqual([2, 2, 2, 2]);
    const doc = await purge(nodes[3]!, { tag: 'product-2' }); // /doc/2 only (Cache-Tag list)
    expect(doc.local.count).toBe(1);
    expect(doc.propagation.members.map((m) => m.count)).toEqual([1, 1, 1, 1]);
    for (const n of nodes) {
      const have = await cachedUrls(n);
      expect(['/img/1', '/img/2', '/doc/1', '/doc/2'].map((p) => have.has(url(p)))).toEqual([
        false,
        false,
        true,
        false,
      ]);
    }
    // Bad requests are refused with a clear error and purge nothing.
    const two = await nodes[0]!.admin.raw('POST', '/v1/purge', { url: url('/doc/1'), tag: 'all' });
    expect(two.status).toBe(400);
    expect(((await two.json()) as { error: { code: string } }).error.code).toBe(
      'CORAL_ERR_ADMIN_BAD_REQUEST',
    );
    const badPrefix = await nodes[0]!.admin.raw('POST', '/v1/purge', { prefix: 'ftp://x/' });
    expect(badPrefix.status).toBe(400);
    expect(((await badPrefix.json()) as { error: { code: string } }).error.code).toBe(
      'CORAL_ERR_PURGE_INVALID',
    );
    expect((await cachedUrls(nodes[0]!)).has(url('/doc/1'))).toBe(true);
    passed++;
  });

  it('a node stopped during a purge applies it when it starts again, before it is ready', async () => {
    const paths = ['/img/7', '/doc/7', '/k/7'];
    await warm(paths);
    const away = nodes[4]!;
    expect(await stopProcess(away.process, 10_000)).toBe(0);
    // product-7 tags /img/7 (Surrogate-Key) and /doc/7 (Cache-Tag): nothing of the other tests.
    const r = await purge(nodes[0]!, { tag: 'product-7' });
    expect(r.local.count).toBe(2);
    const toAway = r.propagation.members.find((m) => m.address === `${away.ip}:8092`);
    // Either still listed as a member (and refused the connection) or already gone from the list.
    if (toAway) expect(toAway).toMatchObject({ ok: false });
    for (const m of r.propagation.members.filter((x) => x !== toAway)) expect(m.count).toBe(2);
    expect(r.propagation.complete).toBe(toAway === undefined);

    // Start it again on the same data directory (its cache still holds the tagged objects).
    const ready = await restart(away);
    expect(ready.checks.purgeLog).toBe(true);
    // Ready means caught up: the purge is in its log and the tagged objects are gone.
    const log = await away.admin.json<{ entries: { id: string }[]; lastSync: { applied: number } }>(
      'GET',
      '/v1/purge/log',
    );
    expect(log.entries.map((e) => e.id)).toContain(r.id);
    const have = await cachedUrls(away);
    expect(have.has(url('/img/7'))).toBe(false);
    expect(have.has(url('/doc/7'))).toBe(false);
    expect(have.has(url('/k/7'))).toBe(true); // untagged: kept
    const before = origin.count('/img/7');
    const again = await fetchVia({ ip: away.ip, port: away.proxyPort }, name, '/img/7');
    expect(again.status).toBe(200);
    expect(origin.count('/img/7')).toBe(before + 1);
    passed++;
  });

  it('a restarted seed catches up before it is ready', async () => {
    await warm(['/img/8']);
    const seed = nodes[0]!; // the node every other bootstraps from: it has no bootstrap itself
    expect(await stopProcess(seed.process, 10_000)).toBe(0);
    const r = await purge(nodes[1]!, { tag: 'product-8' });
    expect(r.local.count).toBe(1);
    const ready = await restart(seed);
    expect(ready.checks.purgeLog).toBe(true);
    const log = await seed.admin.json<{ entries: { id: string }[] }>('GET', '/v1/purge/log');
    expect(log.entries.map((e) => e.id)).toContain(r.id);
    expect((await cachedUrls(seed)).has(url('/img/8'))).toBe(false);
    passed++;
  });

  it('refuses unsigned, forged, stale, replayed and tampered propagations from an attacker’s socket', async () => {
    await warm(['/x/1'], [nodes[1]!]);
    const target = nodes[1]!;
    const authority = `${target.ip}:8092`;
    const entry = (id: string) =>
      JSON.stringify({
        id,
        at: Date.now(),
        kind: 'prefix',
        value: url('/'),
        origin: 'ab'.repeat(20),
      });
    const body = entry('e'.repeat(32));
    const path = `/v1/peer/purges/${bodyDigest(body)}`;
    const sign = (key: string, p = path, auth = authority, method = 'POST') =>
      new HttpPeerSigner({ keyring: Keyring.parse([key]) }).sign({
        method,
        authority: auth,
        path: p,
      });
    const fleetKey = fleet.keys[0]!;

    const attempts: [string, Record<string, string>][] = [
      ['missing', {}],
      ['malformed', { 'coral-peer-auth': 'garbage' }],
      ['unknown-key', { 'coral-peer-auth': sign(Keyring.generateKey()) }],
      ['bad-mac', { 'coral-peer-auth': sign(fleetKey, path, `${nodes[2]!.ip}:8092`) }],
      ['bad-mac', { 'coral-peer-auth': sign(fleetKey, path, authority, 'GET') }],
      // Signed by the fleet an hour ago (a captured request played back later).
      [
        'stale',
        {
          'coral-peer-auth': new HttpPeerSigner({
            keyring: Keyring.parse([fleetKey]),
            clock: new ManualClock(Date.now() - 3_600_000),
          }).sign({ method: 'POST', authority, path }),
        },
      ],
    ];
    for (const [reason, headers] of attempts) {
      const r = await raw(target, 'POST', path, headers, body);
      expect(r.status, reason).toBe(403);
      expect(JSON.parse(r.body).error).toMatchObject({
        code: 'CORAL_ERR_PEER_UNAUTHORIZED',
        message: expect.stringContaining(reason),
      });
    }
    // A request signed by the fleet but carrying another body than the one its path names.
    const tampered = await raw(
      target,
      'POST',
      path,
      { 'coral-peer-auth': sign(fleetKey) },
      entry('f'.repeat(32)),
    );
    expect(tampered.status).toBe(400);
    expect(JSON.parse(tampered.body).error.code).toBe('CORAL_ERR_PURGE_INVALID');
    // The log is not readable without the fleet's signature either.
    const pull = await raw(target, 'GET', '/v1/peer/purges?since=0', {});
    expect(pull.status).toBe(403);
    // Nothing was purged.
    expect((await cachedUrls(target)).has(url('/x/1'))).toBe(true);
    const log = await target.admin.json<{ entries: { id: string }[] }>('GET', '/v1/purge/log');
    expect(log.entries.map((e) => e.id)).not.toContain('e'.repeat(32));

    // A genuine pull signed for member B, captured and sent to member A with `Host: B`: A refuses
    // it (it is not addressed to A), counts it, and B itself still takes it (nothing was burned).
    const other = nodes[2]!;
    const pullPath = '/v1/peer/purges?since=0&limit=10';
    const forB = {
      host: `${other.ip}:8092`,
      'coral-peer-auth': sign(fleetKey, pullPath, `${other.ip}:8092`, 'GET'),
    };
    const reaimed = await raw(target, 'GET', pullPath, forB);
    expect(reaimed.status, reaimed.body).toBe(403);
    expect(JSON.parse(reaimed.body).error.message).toMatch(/not addressed to this node/);
    expect(reaimed.headers['coral-peer-answer']).toBeUndefined();
    expect(await target.admin.text('/metrics')).toMatch(
      /coral_peer_requests_refused_total\{reason="wrong-host"\} [1-9]/,
    );
    const atB = await raw(other, 'GET', pullPath, forB);
    expect(atB.status, atB.body).toBe(200);
    // ...and B seals its answer for the member that asked (peer/answers.ts).
    expect(atB.headers['coral-peer-answer']).toMatch(/^v1;kid=[0-9a-f]{8};mac=/);

    // Signed by the fleet: applied once; the very same request again is a replay.
    const good = { 'coral-peer-auth': sign(fleetKey) };
    const applied = await raw(target, 'POST', path, good, body);
    expect(applied.status, applied.body).toBe(200);
    expect(JSON.parse(applied.body)).toMatchObject({ id: 'e'.repeat(32) });
    expect(JSON.parse(applied.body).count).toBeGreaterThan(0);
    expect((await cachedUrls(target)).has(url('/x/1'))).toBe(false);
    const replay = await raw(target, 'POST', path, good, body);
    expect(replay.status).toBe(403);
    expect(replay.body).toMatch(/replayed/);
    passed++;
  });
});
