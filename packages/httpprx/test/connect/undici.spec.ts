import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import type tls from 'node:tls';

import { ManualClock, issueCert, makeTestCa } from '@coral/testkit';
import type { IssuedCert, TestCa } from '@coral/testkit';
import { Agent, request } from 'undici';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';

import { SmartConnector } from '../../src/connect/index.js';
import { TableResolver, until } from './helpers.js';
import { LoopbackLab, canStall, recordingDial } from './loopback-lab.js';

const noDns = new TableResolver({}); // names outside the hosts map have no address

async function listen(server: net.Server, host: string, port = 0): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => resolve());
  });
  return (server.address() as net.AddressInfo).port;
}

const close = (s: net.Server): Promise<void> =>
  new Promise((r) => {
    (s as http.Server).closeAllConnections?.();
    s.close(() => r());
  });

describe('SmartConnector as undici connect', () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f();
  });

  it('an undici Agent fetches from a local node:http origin through a hosts-map name', async () => {
    const seen: string[] = [];
    const server = http.createServer((req, res) => {
      seen.push(`${req.headers.host} ${req.url} ${req.socket.localAddress}`);
      res.end(`hello ${req.url}`);
    });
    const port = await listen(server, '127.0.0.2');
    cleanup.push(() => close(server));
    const rec = recordingDial();
    const connector = new SmartConnector(
      { resolver: noDns, dial: rec.dial },
      // 127.0.0.3 has no listener on this port: the race still picks 127.0.0.2.
      { allowPrivate: true, hosts: { 'origin.test': ['127.0.0.3', '127.0.0.2'] } },
    );
    const agent = new Agent({ connect: connector.undiciConnect() });
    cleanup.push(() => agent.close());

    for (const p of ['/a', '/b']) {
      const res = await request(`http://origin.test:${port}${p}`, { dispatcher: agent });
      expect(res.statusCode).toBe(200);
      expect(await res.body.text()).toBe(`hello ${p}`);
    }
    expect(seen).toEqual([`origin.test:${port} /a 127.0.0.2`, `origin.test:${port} /b 127.0.0.2`]);
    expect(connector.cacheSnapshot()).toMatchObject([
      { key: `origin.test:${port}`, address: '127.0.0.2' },
    ]);
    // One race (the only dial of 127.0.0.3); any further connection undici opened went straight
    // to the cached winner.
    const dialled = rec.calls.map((c) => c.address);
    expect(dialled.filter((a) => a === '127.0.0.3')).toHaveLength(1);
    expect(dialled.slice(2).every((a) => a === '127.0.0.2')).toBe(true);
  });

  it('connector errors reach the undici caller with their codes', async () => {
    const connector = new SmartConnector(
      { resolver: noDns },
      { hosts: { 'private.test': ['127.0.0.1'], 'gone.test': [] } },
    );
    const agent = new Agent({ connect: connector.undiciConnect() });
    cleanup.push(() => agent.close());
    await expect(request('http://private.test:8080/', { dispatcher: agent })).rejects.toMatchObject(
      {
        code: 'CORAL_ORIGIN_FORBIDDEN',
        status: 403,
      },
    );
    await expect(request('http://gone.test/', { dispatcher: agent })).rejects.toMatchObject({
      code: 'EADDRNOTAVAIL',
      port: 80,
    });
    await expect(request('http://unknown.test/', { dispatcher: agent })).rejects.toMatchObject({
      code: 'EADDRNOTAVAIL',
    });
  });

  it.skipIf(!canStall)(
    'the undici connector is bounded: ETIMEDOUT on the injected clock',
    async () => {
      const lab = await LoopbackLab.create();
      cleanup.push(() => lab.close());
      await lab.stall('127.0.0.4');
      const clock = new ManualClock();
      const rec = recordingDial();
      const connector = new SmartConnector(
        { clock, resolver: noDns, dial: rec.dial },
        { allowPrivate: true, hosts: { 'slow.test': ['127.0.0.4'] } },
      );
      const agent = new Agent({ connect: connector.undiciConnect({ timeoutMs: 2_000 }) });
      cleanup.push(() => agent.destroy());
      const p = request(`http://slow.test:${lab.port}/`, { dispatcher: agent });
      const settled = expect(p).rejects.toMatchObject({ code: 'ETIMEDOUT', status: 504 });
      await until(() => rec.calls.length === 1);
      await clock.advance(2_000);
      await settled;
      await until(() => rec.outcomes.get('127.0.0.4') === 'aborted');
    },
  );

  describe('https origins', () => {
    let ca: TestCa;
    let leaf: IssuedCert;
    beforeAll(async () => {
      ca = await makeTestCa();
      leaf = await issueCert(ca, { dnsNames: ['origin.test'] });
    });

    /** An https server on `ip` counting TCP connections and completed handshakes. */
    async function secureOrigin(ip: string, port = 0) {
      const counts = { tls: 0 };
      const server = https.createServer({ key: leaf.key, cert: leaf.chain }, (req, res) => {
        const s = req.socket as tls.TLSSocket;
        res.end(`secure ${String(s.servername)} ${String(s.alpnProtocol)} ${ip}`);
      });
      server.on('secureConnection', () => counts.tls++);
      const p = await listen(server, ip, port);
      cleanup.push(() => close(server));
      return { port: p, counts };
    }

    it('speaks TLS over the won socket with SNI set to the origin name and ALPN http/1.1', async () => {
      const { port } = await secureOrigin('127.0.0.2');
      const connector = new SmartConnector(
        { resolver: noDns },
        { allowPrivate: true, hosts: { 'origin.test': ['127.0.0.2'] } },
      );
      const agent = new Agent({ connect: connector.undiciConnect({ tls: { ca: ca.cert } }) });
      cleanup.push(() => agent.close());
      const res = await request(`https://origin.test:${port}/`, { dispatcher: agent });
      expect(await res.body.text()).toBe('secure origin.test http/1.1 127.0.0.2');

      // Certificate checks stay on: a connector that does not trust the test CA is refused.
      const strict = new Agent({ connect: connector.undiciConnect() });
      cleanup.push(() => strict.close());
      await expect(
        request(`https://origin.test:${port}/`, { dispatcher: strict }),
      ).rejects.toMatchObject({
        code: 'SELF_SIGNED_CERT_IN_CHAIN',
      });
    });

    it('races the TCP connects to every address, then runs one handshake on the winner', async () => {
      const a = await secureOrigin('127.0.0.2');
      const b = await secureOrigin('127.0.0.3', a.port);
      const rec = recordingDial();
      const connector = new SmartConnector(
        { resolver: noDns, dial: rec.dial },
        { allowPrivate: true, hosts: { 'origin.test': ['127.0.0.2', '127.0.0.3'] } },
      );
      const agent = new Agent({ connect: connector.undiciConnect({ tls: { ca: ca.cert } }) });
      cleanup.push(() => agent.close());
      const res = await request(`https://origin.test:${a.port}/`, { dispatcher: agent });
      expect(await res.body.text()).toMatch(/^secure origin\.test http\/1\.1 127\.0\.0\.[23]$/);
      expect(connector.stats().races).toBe(1);
      // Both addresses were dialled at once; only the winner got a TLS handshake.
      expect(rec.calls.map((c) => c.address).sort()).toEqual(['127.0.0.2', '127.0.0.3']);
      expect(a.counts.tls + b.counts.tls).toBe(1);
    });
  });
});
