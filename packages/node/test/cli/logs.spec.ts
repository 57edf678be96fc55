/**
 * `coral-node logs`: the CLI side of the live log stream, against a server that streams a hub
 * the way the admin API does (the node's own `/v1/logs` is tested in test/admin/logs.spec.ts).
 */
import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LiveHub, formatJson, parseFilter, streamLogs, type AccessRecord } from '@coral/accesslog';
import { afterEach, describe, expect, it } from 'vitest';
import { cliAt, waitFor } from '../helpers.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

function record(requestId: string, status = 200): AccessRecord {
  return {
    time: Date.UTC(2026, 11, 4, 18, 0, 0),
    client: '127.0.0.1',
    method: 'GET',
    host: 'www.example.com.nyud.net',
    url: 'http://www.example.com.nyud.net:8090/a',
    protocol: 'HTTP/1.1',
    status,
    bytes: 10,
    cache: { result: 'hit', hit: true, stored: false, collapsed: false },
    served: { from: 'memory' },
    totalMs: 1,
    requestId,
    aborted: false,
  };
}

/** A stand-in admin API streaming `hub`; the query strings it was asked with. */
async function fakeAdmin(hub: LiveHub) {
  const queries: string[] = [];
  const responses: ServerResponse[] = [];
  const server = createServer((req, res) => {
    responses.push(res);
    const url = new URL(req.url ?? '/', 'http://x');
    queries.push(url.search);
    if (req.headers.authorization !== 'Bearer t0k') {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'CORAL_ERR_ADMIN_UNAUTHORIZED', message: 'no' } }));
      return;
    }
    const q = Object.fromEntries(url.searchParams);
    void streamLogs(hub.subscribe(parseFilter(q)), res);
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, queries, responses };
}

describe('coral-node logs', () => {
  it('prints the lines as they come, with the filters sent to the node, in either format', async () => {
    const hub = new LiveHub();
    const admin = await fakeAdmin(hub);
    const json = cliAt(admin.url, '--token', 't0k', 'logs', '--lines', '2', '--status', '5xx');
    const combined = cliAt(admin.url, '--token', 't0k', 'logs', '-n', '1', '--format', 'combined');
    await waitFor(() => hub.stats.subscribers === 2, 10_000, 'two readers');
    for (const r of [record('a'), record('b', 503), record('c', 502)]) {
      hub.publish(r, () => formatJson(r));
    }
    const j = await json;
    expect(j.code).toBe(0);
    expect(
      j.out
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { requestId: string }).requestId),
    ).toEqual(['b', 'c']);
    const c = await combined;
    expect(c.code).toBe(0);
    expect(c.out).toBe(
      '127.0.0.1 - - [04/Dec/2026:18:00:00 +0000] "GET /a HTTP/1.1" 200 10 "-" "-" "HIT"\n',
    );
    expect(admin.queries).toContain('?status=5xx');
    await waitFor(() => hub.stats.subscribers === 0, 10_000, 'readers gone');
  });

  it('exits 1 with the node’s code when refused, and when its stream is cut', async () => {
    const hub = new LiveHub({}, { queueBytes: 4096 });
    const admin = await fakeAdmin(hub);
    const refused = await cliAt(admin.url, '--token', 'wrong', 'logs', '--follow');
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/401 CORAL_ERR_ADMIN_UNAUTHORIZED/);

    const cut = cliAt(admin.url, '--token', 't0k', 'logs', '--follow');
    await waitFor(() => hub.stats.subscribers === 1, 10_000, 'the reader');
    admin.responses.at(-1)!.destroy(); // as the node does to a reader that fell behind
    const c = await cut;
    expect(c.code).toBe(1);
    expect(c.err).toMatch(/the stream was cut/);
    await waitFor(() => hub.stats.subscribers === 0, 10_000, 'the cut reader gone');

    const follow = cliAt(admin.url, '--token', 't0k', 'logs', '--follow');
    await waitFor(() => hub.stats.subscribers === 1, 10_000, 'the reader');
    hub.close();
    expect((await follow).code).toBe(0); // the node ended the stream (it is stopping)
  });

  it('asks for --follow or --lines: the node keeps no history', async () => {
    const r = await cliAt('http://127.0.0.1:1', 'logs');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/--follow/);
  });
});
