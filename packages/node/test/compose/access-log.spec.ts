/**
 * The access log of real nodes (two in this process, real DSHT, proxy and admin API on 127.0.B.x,
 * real sockets): one line per request with the right fields for a miss, a hit from memory and
 * from disk, a peer fetch, a 4xx, a 5xx and an aborted transfer; and the live log stream
 * (`GET /v1/logs`): its filters, its authentication, a reader that stops reading disconnected
 * while what the node holds for it stays bounded.
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccessRecord } from '@coral/accesslog';
import { loadConfig } from '../../src/config/load.js';
import { CoralNode } from '../../src/compose/node.js';
import { realServices } from '../../src/compose/services.js';
import { createLogger } from '../../src/logging/logger.js';
import { SampleOrigin, fetchVia } from '../../src/fleet/index.js';
import { randomSubnet, tmpDir, waitFor } from '../helpers.js';

const FLEET_KEY = 'acce55'.repeat(10) + 'acce';
const token = 'access-log-admin-token-0123';
const subnet = randomSubnet();
const ipA = `127.0.${subnet}.211`;
const ipB = `127.0.${subnet}.212`;
const dir = tmpDir('access-log');
/** Object 3 is larger than a hot object (1 MiB): its hits are read from disk. */
const BIG = 3;
const origin = new SampleOrigin({
  host: '127.0.0.1',
  objects: 4,
  objectBytes: (i) => (i === BIG ? 1536 * 1024 : 4096),
});
/** An origin that sends a head and part of a body, then nothing. */
let stalling: Server;
let name = '';
let stallName = '';
let deadName = '';
let nodeA: CoralNode;
let nodeB: CoralNode;
const logFile = (ip: string) => join(dir, `${ip}.access.log`);

function configFor(ip: string, extra: Record<string, string> = {}) {
  return loadConfig({
    env: {
      CORAL_HOST: ip,
      CORAL_DNS_HOST: ip,
      CORAL_ADMIN_HOST: ip,
      CORAL_DATA_DIR: `${dir}/${ip}`,
      CORAL_ALLOW_PRIVATE_ORIGINS: 'true',
      CORAL_HOSTS:
        'www.origin.test=127.0.0.1,stall.origin.test=127.0.0.1,dead.origin.test=127.0.0.1',
      CORAL_ADMIN_TOKEN: token,
      CORAL_LOG_LEVEL: 'silent',
      CORAL_FLEET_KEYS: FLEET_KEY,
      CORAL_PROXY_AUDIT_FRACTION: '0',
      CORAL_LOG_ACCESS_DESTINATION: logFile(ip),
      ...extra,
    },
  });
}

/** The records in a node's access log file so far. */
function records(ip: string): AccessRecord[] {
  let text: string;
  try {
    text = readFileSync(logFile(ip), 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as AccessRecord & { log: string });
}

/** The record of the request to `path` through `ip` that comes after `skip` such records. */
async function recordOf(ip: string, path: string, skip = 0): Promise<AccessRecord> {
  return waitFor(
    async () => {
      await (ip === ipA ? nodeA : nodeB).flushAccessLog();
      return records(ip).filter((r) => r.url.endsWith(path))[skip];
    },
    10_000,
    `the access line of ${path} on ${ip}`,
  );
}

beforeAll(async () => {
  const { port } = await origin.listen();
  name = `www.origin.test.${port}.nyud.net`;
  stalling = createServer((_req, res) => {
    res.writeHead(200, { 'content-length': '1000000', 'cache-control': 'max-age=60' });
    res.write(Buffer.alloc(2000, 'x'));
  });
  stalling.listen(0, '127.0.0.1');
  await once(stalling, 'listening');
  stallName = `stall.origin.test.${(stalling.address() as AddressInfo).port}.nyud.net`;
  // A port nothing listens on: connections refused, the node answers 502.
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  deadName = `dead.origin.test.${(probe.address() as AddressInfo).port}.nyud.net`;
  await new Promise((r) => probe.close(r));
  const logger = createLogger({ level: 'silent' });
  nodeA = await CoralNode.start(configFor(ipA), { services: realServices, logger });
  nodeB = await CoralNode.start(configFor(ipB, { CORAL_BOOTSTRAP: `${ipA}:8091` }), {
    services: realServices,
    logger,
  });
  await waitFor(
    async () => (await nodeB.admin.handle(get('/readyz'))).status === 200,
    20_000,
    'B ready',
  );
  await waitFor(() => nodeA.dsht.routes(0).length > 0, 20_000, 'A learns B');
});

afterAll(async () => {
  await nodeB?.stop();
  await nodeA?.stop();
  await origin.close();
  stalling?.closeAllConnections();
  await new Promise((r) => stalling?.close(r));
});

const get = (url: string, remoteAddress = '127.0.0.1', headers: Record<string, string> = {}) => ({
  method: 'GET',
  url,
  headers,
  remoteAddress,
});

describe('the access log of a running node', () => {
  it('logs a miss, a hit from memory and a peer fetch, each with its facts', async () => {
    const first = await fetchVia({ ip: ipA, port: 8090 }, name, '/obj/1', {
      headers: { 'user-agent': 'access-test/1', referer: 'http://ref.example/' },
    });
    expect(first.status).toBe(200);
    const miss = await recordOf(ipA, '/obj/1');
    expect(miss).toMatchObject({
      log: 'access',
      client: '127.0.0.1',
      method: 'GET',
      host: name,
      url: `http://${name}/obj/1`, // as the client sent Host (no port)
      originUrl: `http://www.origin.test:${origin.address.port}/obj/1`,
      protocol: 'HTTP/1.1',
      status: 200,
      cache: { result: 'miss', hit: false },
      aborted: false,
      userAgent: 'access-test/1',
      referer: 'http://ref.example/',
    });
    expect(miss.bytes).toBeGreaterThan(4096);
    expect(miss.requestId).toMatch(/^[0-9a-f]{8}-[0-9a-z]+$/);
    expect(miss.upstreamMs).toBeGreaterThanOrEqual(0);
    expect(miss.ttfbMs).toBeGreaterThanOrEqual(0);
    expect(miss.totalMs).toBeGreaterThanOrEqual(miss.ttfbMs!);
    expect(['origin', 'peer']).toContain(miss.served.from);

    // Stored as the response ends: then a hit, from memory (a hot object).
    await waitFor(
      async () => /hit/.test((await fetchVia({ ip: ipA, port: 8090 }, name, '/obj/1')).cacheStatus),
      10_000,
      'a hit',
    );
    const hits = await waitFor(
      async () => {
        await nodeA.flushAccessLog();
        const r = records(ipA).filter((x) => x.url.endsWith('/obj/1') && x.cache.result === 'hit');
        return r.length > 0 && r;
      },
      10_000,
      'the hit line',
    );
    expect(hits[0]).toMatchObject({
      status: 200,
      served: { from: 'memory' },
      cache: { hit: true },
    });
    expect(hits[0]).not.toHaveProperty('upstreamMs');

    // The other node: one of the two fetches went through the other member.
    await fetchVia({ ip: ipB, port: 8090 }, name, '/obj/1');
    const onB = await recordOf(ipB, '/obj/1');
    const peerFetch = [miss, onB].find((r) => r.served.from === 'peer');
    expect(peerFetch, 'a peer fetch on either node').toBeDefined();
    const other = peerFetch === miss ? nodeB : nodeA;
    expect(peerFetch!.served.peer).toBe(other.view.info().nodeId.slice(0, 12));
    expect(peerFetch!.cache.fwd).toBe('peer');
    expect(origin.counts.get('/obj/1')).toBe(1);
  });

  it('logs a hit read from disk', async () => {
    await fetchVia({ ip: ipA, port: 8090 }, name, `/obj/${BIG}`);
    await waitFor(
      async () =>
        /hit/.test((await fetchVia({ ip: ipA, port: 8090 }, name, `/obj/${BIG}`)).cacheStatus),
      10_000,
      'a hit',
    );
    const hit = await waitFor(
      async () => {
        await nodeA.flushAccessLog();
        return records(ipA).find((x) => x.url.endsWith(`/obj/${BIG}`) && x.cache.hit);
      },
      10_000,
      'the disk hit line',
    );
    expect(hit.served).toEqual({ from: 'disk' });
    expect(hit.bytes).toBeGreaterThan(1536 * 1024);
  });

  it('logs a 4xx answered by the node and one from the origin', async () => {
    const notCoral = await fetchVia({ ip: ipA, port: 8090 }, 'www.example.com', '/x');
    expect(notCoral.status).toBe(403);
    const refused = await recordOf(ipA, 'www.example.com/x');
    expect(refused).toMatchObject({
      status: 403,
      host: 'www.example.com',
      cache: { result: 'error', detail: 'CORAL_NOT_CORALIZED' },
      served: { from: 'node' },
      aborted: false,
    });
    expect(refused).not.toHaveProperty('originUrl');

    const missing = await fetchVia({ ip: ipA, port: 8090 }, name, '/no-such-object');
    expect(missing.status).toBe(404);
    const notFound = await recordOf(ipA, '/no-such-object');
    expect(notFound).toMatchObject({ status: 404, cache: { fwdStatus: 404 } });
    expect(['origin', 'peer']).toContain(notFound.served.from);
  });

  it('logs a 5xx: the origin refuses connections', async () => {
    const r = await fetchVia({ ip: ipA, port: 8090 }, deadName, '/down');
    expect(r.status).toBe(502);
    expect(await recordOf(ipA, '/down')).toMatchObject({
      status: 502,
      host: deadName,
      cache: { result: 'error' },
      served: { from: 'node' },
      aborted: false,
    });
  });

  it('logs a transfer the client abandons as aborted, with the status it was sent', async () => {
    const s = connect(8090, ipA);
    s.on('error', () => {});
    s.write(`GET /big HTTP/1.1\r\nHost: ${stallName}\r\n\r\n`);
    await once(s, 'data'); // the head and the first bytes
    s.destroy();
    const r = await recordOf(ipA, `${stallName}/big`);
    expect(r).toMatchObject({ status: 200, aborted: true, cache: { result: 'miss' } });
    expect(r.bytes).toBeGreaterThan(0);
  });
});

/** A raw client of the admin API's stream: what it has read so far. */
function streamClient(ip: string, path: string) {
  const s = connect(8092, ip);
  let text = '';
  s.on('error', () => {});
  s.on('data', (d: Buffer) => (text += d.toString('latin1')));
  s.write(`GET ${path} HTTP/1.1\r\nHost: ${ip}:8092\r\n\r\n`);
  return { socket: s, text: () => text };
}

describe('GET /v1/logs on a running node', () => {
  it('streams the lines its filters pass, as requests happen', async () => {
    // A hit to come: /obj/0 fetched and stored first.
    await fetchVia({ ip: ipA, port: 8090 }, name, '/obj/0');
    await waitFor(
      async () => /hit/.test((await fetchVia({ ip: ipA, port: 8090 }, name, '/obj/0')).cacheStatus),
      10_000,
      'a hit',
    );
    const errors = streamClient(ipA, '/v1/logs?status=5xx');
    const hits = streamClient(ipA, `/v1/logs?cache=hit&host=www.origin.test&client=127.0.0.0/8`);
    try {
      await waitFor(() => errors.text().includes('\r\n\r\n') && hits.text().includes('\r\n\r\n'));
      expect(errors.text()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      expect(errors.text()).toContain('content-type: application/x-ndjson');
      await fetchVia({ ip: ipA, port: 8090 }, name, '/obj/0'); // a hit
      await fetchVia({ ip: ipA, port: 8090 }, deadName, '/stream-5xx'); // a 502
      await waitFor(() => errors.text().includes('/stream-5xx'), 10_000, 'the 502 line');
      await waitFor(() => hits.text().includes('/obj/0'), 10_000, 'the hit line');
      expect(errors.text()).not.toContain('/obj/0');
      expect(hits.text()).not.toContain('/stream-5xx');
      // The body is chunked: its JSON lines are whole within each chunk.
      const json = (text: string) =>
        text
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as AccessRecord);
      expect(json(hits.text()).map((r) => [r.cache.result, r.url.endsWith('/obj/0')])).toEqual([
        ['hit', true],
      ]);
      expect(json(errors.text())).toMatchObject([{ status: 502, host: deadName }]);
    } finally {
      errors.socket.destroy();
      hits.socket.destroy();
    }
  });

  it('is authenticated like the rest, and refuses a bad filter', async () => {
    expect((await nodeA.admin.handle(get('/v1/logs', '192.0.2.1'))).status).toBe(401);
    const bad = await nodeA.admin.handle(get('/v1/logs?status=9xx'));
    expect(bad.status).toBe(400);
    expect(bad.body).toContain('CORAL_ERR_ADMIN_BAD_REQUEST');
    expect((await nodeA.admin.handle(get('/v1/logs?colour=red'))).status).toBe(400);
    const ok = await nodeA.admin.handle(
      get('/v1/logs', '192.0.2.1', { authorization: `Bearer ${token}` }),
    );
    expect(ok.status).toBe(200);
    expect(ok.stream).toBeDefined();
    ok.stream!.cancel();
  });

  it('disconnects a reader that stops reading, holding no more than its bounds meanwhile', async () => {
    const slow = streamClient(ipA, '/v1/logs');
    await waitFor(() => slow.text().includes('\r\n\r\n'));
    slow.socket.pause();
    const metric = async (name: string) => {
      const text = (await nodeA.admin.handle(get('/metrics'))).body;
      return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    };
    // The readers of the tests before are gone once their connections' close reached the node.
    await waitFor(
      async () => (await metric('coral_log_stream_readers')) === 1,
      10_000,
      'one reader',
    );
    // Hits with a long User-Agent make long lines: the socket's buffers, then the reader's queue,
    // fill after a few thousand; the reader is then dropped.
    const agent = 'a'.repeat(8000);
    let sent = 0;
    while ((await metric('coral_log_stream_dropped_total')) === 0 && sent < 20_000) {
      await Promise.all(
        Array.from({ length: 50 }, () =>
          fetchVia({ ip: ipA, port: 8090 }, name, '/obj/2', { headers: { 'user-agent': agent } }),
        ),
      );
      sent += 50;
    }
    expect(await metric('coral_log_stream_dropped_total')).toBe(1);
    expect(sent).toBeLessThan(20_000);
    expect(await metric('coral_log_stream_readers')).toBe(0);
    // Dropped once its queue (1 MiB) and the socket's buffers were full: long before every line
    // sent could have been held for it (20,000 of them would be 160 MB).
    expect(sent * agent.length).toBeLessThan(64 * 1024 * 1024);
    slow.socket.destroy();
  });
});
