/**
 * A node's TLS listener end to end over loopback: the process path (`runNode`, its banner and
 * its signals), an https origin with a certificate from its own test CA (trusted through
 * `tls.originCa`), a cache hit over TLS, a SIGHUP reload that new handshakes see while a
 * keep-alive connection opened before it goes on serving, and the local development CA's banner
 * line (for the example http origin: its ---h name) run as printed with curl.
 */
import { execFile } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { X509Certificate } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { Agent, createServer, request } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueCert, makeTestCa } from '@coral/testkit';
import { coralizeUrl } from '@coral/names';
import { loadConfig } from '../../src/config/load.js';
import { runNode } from '../../src/compose/run.js';
import { realServices } from '../../src/compose/services.js';
import { randomSubnet, tmpDir, waitFor } from '../helpers.js';

const subnet = randomSubnet();
const dir = tmpDir('tls');
const originRequests: string[] = [];
let originPort = 0;
let origin: ReturnType<typeof createServer>;

beforeAll(async () => {
  const ca = await makeTestCa({ name: 'origin CA' });
  const leaf = await issueCert(ca, { dnsNames: ['www.origin.test'] });
  await writeFile(join(dir, 'origin-ca.pem'), ca.cert);
  origin = createServer({ cert: leaf.chain, key: leaf.key }, (req, res) => {
    originRequests.push(`${(req.socket as TLSSocket).servername} ${req.url}`);
    res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'max-age=300' });
    res.end(`origin says hello from ${req.url}`);
  });
  origin.listen(0, '127.0.0.1');
  await once(origin, 'listening');
  originPort = (origin.address() as { port: number }).port;
});

afterAll(() => origin?.close());

/** Start a node through the CLI's path; resolves once its banner is printed. */
async function startNode(ip: string, env: Record<string, string>) {
  const config = loadConfig({
    env: {
      CORAL_HOST: ip,
      CORAL_DNS_HOST: ip,
      CORAL_ADMIN_HOST: ip,
      CORAL_DATA_DIR: join(dir, ip),
      CORAL_ALLOW_PRIVATE_ORIGINS: 'true',
      CORAL_HOSTS: 'www.origin.test=127.0.0.1',
      CORAL_TLS_ORIGIN_CA: join(dir, 'origin-ca.pem'),
      CORAL_EXAMPLE_ORIGIN: `http://www.origin.test:${originPort}/`,
      CORAL_LOG_LEVEL: 'silent',
      ...env,
    },
  });
  const signals = new EventEmitter();
  let out = '';
  let err = '';
  const exit = runNode(
    config,
    {
      stdout: { write: (s: string) => (out += s) },
      stderr: { write: (s: string) => (err += s) },
      env: {},
    },
    realServices,
    signals,
  );
  let exited: number | undefined;
  void exit.then((c) => (exited = c));
  await waitFor(() => out.includes('coral-node') || exited !== undefined, 30_000, 'the banner');
  if (exited !== undefined) throw new Error(`node exited ${exited}: ${err}`);
  return {
    banner: () => out,
    signals,
    stop: async () => {
      signals.emit('SIGTERM');
      return exit;
    },
  };
}

function get(
  ip: string,
  name: string,
  path: string,
  ca: string[],
  agent: Agent,
): Promise<{
  status: number;
  body: string;
  headers: Record<string, unknown>;
  cert: string;
  reused: boolean;
}> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: ip,
        port: 8443,
        path,
        servername: name,
        headers: { host: `${name}:8443` },
        ca,
        agent,
      },
      (res) => {
        let body = '';
        // Read now: the socket goes back to the agent at the end.
        const cert = (res.socket as TLSSocket).getPeerCertificate().fingerprint256 ?? '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body,
            headers: res.headers,
            cert,
            reused: req.reusedSocket,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('the TLS listener of a node', () => {
  it('serves an https origin over TLS, hits its cache, and reloads its certificate on SIGHUP without dropping a connection', async () => {
    const zoneA = await makeTestCa({ name: 'zone CA A' });
    const zoneB = await makeTestCa({ name: 'zone CA B' });
    const a = await issueCert(zoneA, { dnsNames: ['*.nyud.net', 'nyud.net'] });
    const b = await issueCert(zoneB, { dnsNames: ['*.nyud.net', 'nyud.net'] });
    const cert = join(dir, 'zone-cert.pem');
    const key = join(dir, 'zone-key.pem');
    await writeFile(cert, a.chain);
    await writeFile(key, a.key);
    const ip = `127.0.${subnet}.61`;
    const node = await startNode(ip, { CORAL_TLS_CERT: cert, CORAL_TLS_KEY: key });
    try {
      expect(node.banner()).toContain(`proxy  https ${ip}:8443  certificate ${cert}`);
      const url = coralizeUrl(`https://www.origin.test:${originPort}/page`, 'nyud.net');
      const name = new URL(url).hostname;
      expect(name).toBe(`www-origin-test---${originPort}.nyud.net`);
      const trust = [zoneA.cert, zoneB.cert];
      const kept = new Agent({ keepAlive: true, maxSockets: 1 });
      const first = await get(ip, name, '/page', trust, kept);
      expect(first).toMatchObject({ status: 200, body: 'origin says hello from /page' });
      expect(String(first.headers['cache-status'])).toMatch(/fwd=uri-miss/);
      // SNI to the origin is the origin's own name.
      expect(originRequests).toEqual(['www.origin.test /page']);
      // Until the body is committed a second request joins the fetch (`collapsed`); then a hit.
      const hit = await waitFor(
        async () => {
          const r = await get(ip, name, '/page', trust, kept);
          return /hit/.test(String(r.headers['cache-status'])) ? r : undefined;
        },
        10_000,
        'a cache hit over TLS',
      );
      expect(hit.reused).toBe(true);
      expect(originRequests).toHaveLength(1);
      const certA = new X509Certificate(a.cert).fingerprint256;
      expect(first.cert).toBe(certA);

      // Replace the files (as an ACME client's renewal does) and send SIGHUP.
      await writeFile(cert, b.chain);
      await writeFile(key, b.key);
      node.signals.emit('SIGHUP');
      const certB = new X509Certificate(b.cert).fingerprint256;
      await waitFor(
        async () => (await get(ip, name, '/page', trust, new Agent())).cert === certB,
        10_000,
        'new handshakes to get the new certificate',
      );
      // The connection opened before the reload is still there and still serves.
      const after = await get(ip, name, '/page', trust, kept);
      expect(after).toMatchObject({ status: 200, reused: true, cert: certA });

      kept.destroy();
    } finally {
      expect(await node.stop()).toBe(0);
    }
  });

  it('creates a local development CA on first start, prints a curl line that works as printed, and reuses the CA on restart', async () => {
    const ip = `127.0.${subnet}.62`;
    // The banner's example origin is an http origin: its one-label name is the ---h form.
    const plain = createHttpServer((req, res) =>
      res.end(`plain origin says hello from ${req.url}`),
    );
    plain.listen(0, '127.0.0.1');
    await once(plain, 'listening');
    const plainPort = (plain.address() as { port: number }).port;
    const node = await startNode(ip, {
      CORAL_EXAMPLE_ORIGIN: `http://www.origin.test:${plainPort}/`,
    });
    let caPem: string;
    try {
      const banner = node.banner();
      const caPath = join(dir, ip, 'tls', 'local-ca.pem');
      expect(banner).toContain(`local development CA ${caPath}`);
      const line = banner.split('\n').find((l) => l.trim().startsWith('curl --cacert'));
      expect(line).toBeDefined();
      const args = line!.trim().split(/\s+/).slice(1);
      expect(args).toEqual([
        '--cacert',
        caPath,
        '--resolve',
        `www-origin-test---h${plainPort}.nyud.net:8443:${ip}`,
        `https://www-origin-test---h${plainPort}.nyud.net:8443/`,
      ]);
      const { stdout } = await promisify(execFile)('curl', ['-sS', '--fail', ...args]);
      expect(stdout).toBe('plain origin says hello from /');
      caPem = await readFile(caPath, 'utf8');
      expect(banner).toMatch(/--ignore-certificate-errors-spki-list=[A-Za-z0-9+/]{43}=/);
    } finally {
      expect(await node.stop()).toBe(0);
      plain.close();
    }
    const again = await startNode(ip, {});
    try {
      expect(await readFile(join(dir, ip, 'tls', 'local-ca.pem'), 'utf8')).toBe(caPem);
    } finally {
      await again.stop();
    }
  });
});
