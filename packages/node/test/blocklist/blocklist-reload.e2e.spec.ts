/**
 * Issue 13, Must-show 4 (blocklist reload): a real `coral-node` process with `proxy.blocklistFile`
 * refuses Coralized names of blocked origins (and their subdomains) with 403
 * `CORAL_ERR_ORIGIN_BLOCKED` — in the legacy and one-label forms, in absolute-form targets and in
 * an HTTP/1.0 request with no Host — without asking the origin; a real SIGHUP after the file
 * changes blocks a domain it had cached (no longer served from the cache, dropped from it) and
 * unblocks another, on the same keep-alive connection. A file that no longer parses changes
 * nothing. Every wait is on a condition.
 */
import { once } from 'node:events';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { coralizeHost } from '@coral/names';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../../src/cli/client.js';
import { CLI_PATH, stopProcess } from '../../src/fleet/index.js';
import { randomSubnet, tmpDir, waitFor, waitReady } from '../helpers.js';

const ip = `127.0.${randomSubnet()}.61`;
const dir = tmpDir('blocklist');
const listFile = join(dir, 'blocklist.txt');
const logFile = join(dir, 'node.log');
const counts = new Map<string, number>();
const origin = createServer((req, res) => {
  const host = String(req.headers.host).split(':')[0]!;
  counts.set(host, (counts.get(host) ?? 0) + 1);
  const body = `hello from ${host}${req.url}\n`;
  res.writeHead(200, {
    'content-type': 'text/plain',
    'content-length': String(body.length),
    'cache-control': 'public, max-age=3600',
  });
  res.end(body);
});
let port = 0;
let child: ChildProcess;
const admin = new AdminClient({ url: `http://${ip}:8092`, timeoutMs: 5_000 });
/** One connection for every proxy request: a reload must not drop it. */
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
const localPorts = new Set<number>();

const legacy = (host: string) => `${host}.${port}.nyud.net`;

function get(
  host: string,
  path = '/a',
  method = 'GET',
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: ip, port: 8090, path, method, headers: { host }, agent }, (res) => {
      localPorts.add(res.socket.localPort!);
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** An HTTP/1.0 request with an absolute-form target and no Host field, on its own connection. */
async function http10(target: string): Promise<string> {
  const s = connect(8090, ip);
  await once(s, 'connect');
  s.end(`GET ${target} HTTP/1.0\r\n\r\n`);
  let text = '';
  s.setEncoding('utf8');
  s.on('data', (c: string) => (text += c));
  await once(s, 'close');
  return text;
}

const blocklist = () => admin.json<{ domains: string[] }>('GET', '/v1/blocklist');
const cachedHosts = async () =>
  (await admin.json<{ objects: { url: string }[] }>('GET', '/v1/cache')).objects.map(
    (o) => new URL(o.url).hostname,
  );
const log = () => readFileSync(logFile, 'utf8');

beforeAll(async () => {
  origin.listen(0, '127.0.0.1');
  await once(origin, 'listening');
  port = (origin.address() as AddressInfo).port;
  writeFileSync(listFile, '# origins refused by this CDN\nblocked.test   # and its subdomains\n');
  const { openSync, closeSync } = await import('node:fs');
  const fd = openSync(logFile, 'a');
  child = spawn(process.execPath, [CLI_PATH, 'start'], {
    env: {
      PATH: process.env.PATH ?? '',
      CORAL_HOST: ip,
      CORAL_DNS_HOST: ip,
      CORAL_ADMIN_HOST: ip,
      CORAL_DATA_DIR: join(dir, 'data'),
      CORAL_LOG_LEVEL: 'info',
      CORAL_TLS_LOCAL_CA: 'false',
      CORAL_ALLOW_PRIVATE_ORIGINS: 'true',
      CORAL_HOSTS:
        'www.allowed.test=127.0.0.1,www.blocked.test=127.0.0.1,cdn.blocked.test=127.0.0.1,notblocked.test=127.0.0.1',
      CORAL_PROXY_BLOCKLIST_FILE: listFile,
    },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  await waitReady(admin);
}, 60_000);

afterAll(async () => {
  agent.destroy();
  if (child) await stopProcess(child, 10_000);
  origin.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('origin blocklist', () => {
  it('refuses blocked origins in every name form before any fetch, and reloads on SIGHUP', async () => {
    expect((await blocklist()).domains).toEqual(['blocked.test']);

    // Blocked: the domain and a subdomain, legacy and one-label forms, GET and HEAD.
    const oneLabel = coralizeHost({ scheme: 'http', host: 'www.blocked.test', port }, 'nyud.net');
    for (const host of [legacy('www.blocked.test'), legacy('cdn.blocked.test'), oneLabel]) {
      const r = await get(host);
      expect(r.status, host).toBe(403);
      expect(r.headers['x-coral-error']).toBe('CORAL_ERR_ORIGIN_BLOCKED');
      expect(r.headers['cache-control']).toBe('no-store');
      expect(r.body).toMatch(
        /^403 Forbidden: CORAL_ERR_ORIGIN_BLOCKED: .*blocked\.test.* is blocked/,
      );
    }
    const head = await get(legacy('www.blocked.test'), '/a', 'HEAD');
    expect(head.status).toBe(403);
    expect(head.body).toBe('');
    // Absolute-form targets, with a Host and (HTTP/1.0) without.
    const abs = await get(
      legacy('www.blocked.test'),
      `http://${legacy('www.blocked.test')}:8090/a`,
    );
    expect(abs.status).toBe(403);
    expect(await http10(`http://${legacy('www.blocked.test')}:8090/a`)).toMatch(
      /^HTTP\/1\.1 403 [\s\S]*CORAL_ERR_ORIGIN_BLOCKED/,
    );
    // A name that merely ends like a blocked one is not blocked.
    expect((await get(legacy('notblocked.test'))).status).toBe(200);
    expect(counts.get('www.blocked.test') ?? 0).toBe(0);
    expect(counts.get('cdn.blocked.test') ?? 0).toBe(0);

    // Allowed and cached.
    expect((await get(legacy('www.allowed.test'))).body).toBe('hello from www.allowed.test/a\n');
    await waitFor(async () => (await cachedHosts()).includes('www.allowed.test'), 10_000, 'cached');
    expect((await get(legacy('www.allowed.test'))).status).toBe(200);
    expect(counts.get('www.allowed.test')).toBe(1);

    // Block allowed.test, unblock blocked.test: a real SIGHUP.
    writeFileSync(listFile, 'allowed.test\n');
    child.kill('SIGHUP');
    await waitFor(
      async () => (await blocklist()).domains.join() === 'allowed.test',
      10_000,
      'the reloaded list',
    );
    const now = await get(legacy('www.allowed.test'));
    expect(now.status).toBe(403); // not served from the cache any more
    expect(counts.get('www.allowed.test')).toBe(1); // nor fetched
    await waitFor(
      async () => !(await cachedHosts()).includes('www.allowed.test'),
      10_000,
      'dropped from the cache',
    );
    expect((await get(legacy('www.blocked.test'))).status).toBe(200);
    expect(counts.get('www.blocked.test')).toBe(1);

    // A file that does not parse changes nothing (and says so in the log).
    writeFileSync(listFile, 'allowed.test\nnot a domain!\n');
    child.kill('SIGHUP');
    await waitFor(() => /configuration not reloaded/.test(log()), 10_000, 'the refusal logged');
    expect(log()).toMatch(/line 2: .*not a domain!.* is not a domain name/);
    expect((await blocklist()).domains).toEqual(['allowed.test']);
    expect((await get(legacy('www.allowed.test'))).status).toBe(403);

    // Counted for the operator.
    const metrics = await admin.text('/metrics');
    expect(
      Number(/^coral_blocked_requests_total (\d+)$/m.exec(metrics)?.[1]),
    ).toBeGreaterThanOrEqual(7);
    // Every request above went over one keep-alive connection: reloads dropped none.
    expect(localPorts.size).toBe(1);
  });
});
