/**
 * The TLS listener's session-ticket keys over real loopback TLS (issue 28): proxies given the same
 * `ticketKeys` resume each other's sessions — also when the other is another process, started with
 * another command line — `setTlsTicketKeys` replaces them, and a certificate reload
 * (`setTlsCertificate`, which builds a new secure context) keeps the keys in use.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { issueCert, tlsVisit } from '@coral/testkit';
import { startProxy } from '../helpers/harness.js';
import type { ProxyHarness } from '../helpers/harness.js';
import { makePki } from '../helpers/tls.js';
import type { TestPki } from '../helpers/tls.js';

const NAME = 'www-example-com.nyud.net';
const VERSIONS = ['TLSv1.2', 'TLSv1.3'] as const;

let pki: TestPki;
beforeAll(async () => {
  pki = await makePki();
});

const proxies: ProxyHarness[] = [];
afterEach(async () => {
  while (proxies.length) await proxies.pop()!.close();
});

/** A proxy whose TLS listener has `ticketKeys` (Node's random keys when undefined); its port. */
async function tlsProxy(ticketKeys?: Uint8Array): Promise<{ px: ProxyHarness; port: number }> {
  const px = await startProxy();
  proxies.push(px);
  const { port } = await px.proxy.listenTls({
    port: 0,
    host: '127.0.0.1',
    cert: pki.wildcard.chain,
    key: pki.wildcard.key,
    ...(ticketKeys ? { ticketKeys } : {}),
  });
  return { px, port };
}

function visit(port: number, version: (typeof VERSIONS)[number], session?: Buffer) {
  return tlsVisit({
    port,
    servername: NAME,
    ca: pki.zoneCa.cert,
    maxVersion: version,
    ...(session ? { session } : {}),
  });
}

describe.each(VERSIONS)('session tickets (%s)', (version) => {
  it('a ticket from one proxy resumes at another with the same keys, not at one without them', async () => {
    const keys = randomBytes(48);
    const a = await tlsProxy(keys);
    const b = await tlsProxy(Buffer.from(keys));
    const stranger = await tlsProxy();
    keys.fill(0); // the listener holds its own copy
    const first = await visit(a.port, version);
    expect(first.reused).toBe(false);
    expect(first.protocol).toBe(version);
    expect(first.session).toBeDefined();
    expect((await visit(a.port, version, first.session)).reused).toBe(true);
    expect((await visit(b.port, version, first.session)).reused).toBe(true);
    expect((await visit(stranger.port, version, first.session)).reused).toBe(false);
  });

  it('setTlsTicketKeys: tickets under the old keys no longer resume, tickets under the new ones do', async () => {
    const a = await tlsProxy(randomBytes(48));
    const next = randomBytes(48);
    const b = await tlsProxy(next);
    const before = await visit(a.port, version);
    a.px.proxy.setTlsTicketKeys(Buffer.from(next));
    expect((await visit(a.port, version, before.session)).reused).toBe(false);
    const after = await visit(a.port, version);
    expect((await visit(b.port, version, after.session)).reused).toBe(true);
  });

  it('a certificate reload keeps the ticket keys in use (the ones set last, not the first)', async () => {
    const a = await tlsProxy(randomBytes(48));
    const rotated = randomBytes(48);
    a.px.proxy.setTlsTicketKeys(rotated);
    const twin = await tlsProxy(rotated);
    const before = await visit(a.port, version);
    const renewed = await issueCert(pki.zoneCa, { dnsNames: ['*.nyud.net', 'nyud.net'] });
    a.px.proxy.setTlsCertificate({ cert: renewed.chain, key: renewed.key });
    // Resumes at the reloaded listener itself, and what it issues now still resumes at its twin.
    expect((await visit(a.port, version, before.session)).reused).toBe(true);
    const after = await visit(a.port, version);
    expect(after.reused).toBe(false);
    expect((await visit(twin.port, version, after.session)).reused).toBe(true);
  });
});

const ROOT = resolve(fileURLToPath(new URL('../../../..', import.meta.url)));
const ENTRY = join(ROOT, 'packages/httpprx/dist/bin/proxy-process.js');

/** A proxy in a process of its own (the compiled stand-alone entry) with a TLS listener. */
function proxyProcess(ticketKeys: Buffer): Promise<{ child: ChildProcess; tlsPort: number }> {
  const config = {
    tls: {
      cert: pki.wildcard.chain,
      key: pki.wildcard.key,
      ticketKeys: ticketKeys.toString('hex'),
    },
  };
  const child = spawn(process.execPath, [ENTRY, JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolveP, reject) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (!out.includes('\n')) return;
      resolveP({
        child,
        tlsPort: (JSON.parse(out.split('\n')[0]!) as { tlsPort: number }).tlsPort,
      });
    });
    child.on('exit', (code) => reject(new Error(`proxy process exited early with ${code}`)));
  });
}

describe('another process', () => {
  beforeAll(() => {
    execFileSync(
      process.execPath,
      [join(ROOT, 'node_modules/typescript/bin/tsc'), '-b', 'packages/httpprx'],
      { cwd: ROOT, stdio: 'inherit' },
    );
  }, 120_000);

  it.each(VERSIONS)(
    '%s: a ticket from this process resumes at a proxy process with another command line and the same keys',
    async (version) => {
      // Node's default session-id context is a hash of process.argv, which differs here.
      const keys = randomBytes(48);
      const here = await tlsProxy(keys);
      const { child, tlsPort } = await proxyProcess(keys);
      try {
        const first = await visit(here.port, version);
        expect((await visit(tlsPort, version, first.session)).reused).toBe(true);
        const there = await visit(tlsPort, version);
        expect((await visit(here.port, version, there.session)).reused).toBe(true);
      } finally {
        child.kill('SIGKILL');
      }
    },
  );
});

describe('ticket key checks', () => {
  it('refuses keys that are not 48 bytes, and before the listener starts', async () => {
    const { px } = await tlsProxy();
    expect(() => px.proxy.setTlsTicketKeys(new Uint8Array(32))).toThrow(
      /TLS ticket keys must be 48 bytes, got 32/,
    );
    const plain = await startProxy();
    proxies.push(plain);
    expect(() => plain.proxy.setTlsTicketKeys(new Uint8Array(48))).toThrow(
      /TLS listener is not started/,
    );
    await expect(
      plain.proxy.listenTls({
        port: 0,
        host: '127.0.0.1',
        cert: pki.wildcard.chain,
        key: pki.wildcard.key,
        ticketKeys: new Uint8Array(47),
      }),
    ).rejects.toThrow(/48 bytes, got 47/);
  });
});
