/**
 * Issue 11, Must-show 2, over real loopback TLS with CAs made here: client → proxy (wildcard
 * certificate for the zone) → origin (its own certificate, SNI checked by the origin); hits over
 * TLS; origins whose certificate fails verification; http and https variants as different keys;
 * the certificate replaced at run time without dropping connections.
 */
import { request as httpsRequest, Agent as HttpsAgent } from 'node:https';
import { connect } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { issueCert } from '@coral/testkit';
import type { IssuedCert, TestCa } from '@coral/testkit';
import { urlKey } from '../../src/mapping/coral-name.js';
import { get, startProxy } from '../helpers/harness.js';
import type { ProxyHarness } from '../helpers/harness.js';
import { getTls, listenTls, makePki, startDualOrigin } from '../helpers/tls.js';
import type { DualOrigin, TestPki } from '../helpers/tls.js';

const DAY = 86_400_000;

let zoneCa: TestCa; // signs the proxy's wildcard certificate
let originCa: TestCa; // a private CA for the origins
let wildcard: IssuedCert;
let originCert: IssuedCert;
let pki: TestPki;

beforeAll(async () => {
  pki = await makePki();
  ({ zoneCa, originCa, wildcard, originCert } = pki);
});

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A proxy (plain + TLS listeners) trusting the origin CA, and a dual-scheme origin. */
async function setup(
  cert: IssuedCert = originCert,
  proxyOpts: Parameters<typeof startProxy>[0] = { originCa: [originCa.cert] },
): Promise<{ px: ProxyHarness; tlsPort: number; origin: DualOrigin; name: string }> {
  const origin = await startDualOrigin(
    (scheme, _req, res) => {
      const body = `${scheme} body`;
      res.writeHead(200, {
        'content-type': 'text/plain',
        'content-length': String(body.length),
        'cache-control': 'max-age=600',
        'alt-svc': 'h3=":443"; ma=86400',
        'set-cookie': 'sid=1; Domain=nyud.net',
      });
      res.end(body);
    },
    cert,
    'origin.test',
  );
  cleanups.push(() => origin.close());
  const px = await startProxy(proxyOpts);
  cleanups.push(() => px.close());
  const tlsPort = await listenTls(px, pki);
  return { px, tlsPort, origin, name: `origin-test---${origin.port}.nyud.net` };
}

describe('https origins and TLS clients (loopback, test CAs)', () => {
  it('client → proxy (wildcard cert) → https origin (SNI, ALPN http/1.1), then a hit over TLS', async () => {
    const { px, tlsPort, origin, name } = await setup();
    const r1 = await getTls(tlsPort, `${name}:${tlsPort}`, zoneCa, '/a.txt');
    expect(r1.status).toBe(200);
    expect(r1.body.toString()).toBe('https body');
    expect(r1.peerCertSerial).toBe(wildcard.serial);
    expect(r1.headers['cache-status']).toContain('fwd=uri-miss');
    // The origin was asked over TLS with its own name as SNI and agreed on http/1.1.
    expect(origin.hits).toEqual([
      {
        scheme: 'https',
        method: 'GET',
        url: '/a.txt',
        servername: 'origin.test',
        alpn: 'http/1.1',
      },
    ]);
    expect(origin.badSni).toEqual([]);
    // What acts on the whole zone or on the origin's own endpoints never reaches the client.
    expect(r1.headers['set-cookie']).toBeUndefined();
    expect(r1.headers['alt-svc']).toBeUndefined();
    const r2 = await getTls(tlsPort, `${name}:${tlsPort}`, zoneCa, '/a.txt');
    expect(r2.body.toString()).toBe('https body');
    expect(r2.headers['cache-status']).toMatch(/^Coral; hit/);
    expect(origin.hits).toHaveLength(1);
    expect((await px.proxy.cacheList()).map((e) => e.url)).toEqual([
      `https://origin.test:${origin.port}/a.txt`,
    ]);
  });

  it('the apex and names outside the zone are answered over TLS with the proxy pages', async () => {
    const { tlsPort } = await setup();
    const apex = await getTls(tlsPort, 'nyud.net', zoneCa);
    expect(apex.status).toBe(403);
    expect(apex.headers['x-coral-error']).toBe('CORAL_NOT_CORALIZED');
  });

  it('http and https variants of one URL are different cache keys and different objects', async () => {
    const { px, tlsPort, origin, name } = await setup();
    const legacy = `origin.test.${origin.port}.nyud.net`;
    const plain = await get(px.port, legacy, '/v');
    const secure = await getTls(tlsPort, `${name}:${tlsPort}`, zoneCa, '/v');
    expect(plain.body.toString()).toBe('http body');
    expect(secure.body.toString()).toBe('https body');
    const httpUrl = `http://origin.test:${origin.port}/v`;
    const httpsUrl = `https://origin.test:${origin.port}/v`;
    expect(Buffer.from(urlKey(httpUrl))).not.toEqual(Buffer.from(urlKey(httpsUrl)));
    const listed = await px.proxy.cacheList();
    expect(listed.map((e) => e.url).sort()).toEqual([httpUrl, httpsUrl]);
    expect(new Set(listed.map((e) => e.key)).size).toBe(2);
    // Each is a hit for its own scheme; neither answers for the other.
    expect((await get(px.port, legacy, '/v')).body.toString()).toBe('http body');
    expect((await getTls(tlsPort, `${name}:${tlsPort}`, zoneCa, '/v')).body.toString()).toBe(
      'https body',
    );
    // The one-label http name over TLS is the http origin again (same key as the legacy name).
    const h = await getTls(tlsPort, `origin-test---h${origin.port}.nyud.net`, zoneCa, '/v');
    expect(h.body.toString()).toBe('http body');
    expect(h.headers['cache-status']).toMatch(/^Coral; hit/);
    expect(origin.hits.map((x) => x.scheme)).toEqual(['http', 'https']);
    // The index was told about both, under their own keys.
    expect(await px.index.lookup(urlKey(httpUrl))).toHaveLength(1);
    expect(await px.index.lookup(urlKey(httpsUrl))).toHaveLength(1);
  });

  const bad: Array<[string, () => Promise<IssuedCert>, () => TestCa[], string]> = [
    [
      'a certificate for another name',
      () => issueCert(originCa, { dnsNames: ['someone-else.test'] }),
      () => [originCa],
      'ERR_TLS_CERT_ALTNAME_INVALID',
    ],
    [
      'an expired certificate',
      () =>
        issueCert(originCa, {
          dnsNames: ['origin.test'],
          notBefore: new Date(Date.now() - 30 * DAY),
          notAfter: new Date(Date.now() - DAY),
        }),
      () => [originCa],
      'CERT_HAS_EXPIRED',
    ],
    [
      'a certificate from a CA the proxy does not trust',
      async () => originCert,
      () => [],
      'SELF_SIGNED_CERT_IN_CHAIN',
    ],
  ];
  it.each(bad)(
    '%s → 502 CORAL_ORIGIN_CERT_INVALID, nothing served or cached',
    async (_w, make, cas, cause) => {
      const cert = await make();
      const { px, tlsPort, origin, name } = await setup(cert, {
        originCa: cas().map((c) => c.cert),
      });
      for (let i = 0; i < 2; i++) {
        const r = await getTls(tlsPort, `${name}:${tlsPort}`, zoneCa, '/secret');
        expect(r.status).toBe(502);
        expect(r.headers['x-coral-error']).toBe('CORAL_ORIGIN_CERT_INVALID');
        expect(r.headers['x-coral-cause']).toBe(cause);
        expect(r.body.toString()).not.toContain('https body');
      }
      // The origin never got an HTTP request, and nothing was stored or announced.
      expect(origin.hits).toEqual([]);
      expect(await px.proxy.cacheList()).toEqual([]);
    },
  );

  it('the address policy applies to https origins after resolution, as for http', async () => {
    const { origin, name } = await setup();
    const px = await startProxy({ originCa: [originCa.cert], allowPrivateOrigins: false });
    cleanups.push(() => px.close());
    const r = await get(px.port, name, '/');
    expect(r.status).toBe(403);
    expect(r.headers['x-coral-error']).toBe('CORAL_ORIGIN_FORBIDDEN');
    expect(origin.hits).toEqual([]);
  });

  it('hostile TLS clients: plain http, garbage and a silent handshake are closed; service goes on', async () => {
    const { px, name } = await setup();
    await px.proxy.close(); // this test wants its own handshake bound
    const p2 = await startProxy({ originCa: [originCa.cert] });
    cleanups.push(() => p2.close());
    const { port } = await p2.proxy.listenTls({
      port: 0,
      host: '127.0.0.1',
      cert: wildcard.chain,
      key: wildcard.key,
      handshakeTimeoutMs: 200,
    });
    const closedAfter = (bytes: string | undefined) =>
      new Promise<string>((resolve, reject) => {
        const s = connect(port, '127.0.0.1', () => {
          if (bytes !== undefined) s.write(bytes);
        });
        let got = '';
        s.on('data', (c: Buffer) => (got += c.toString('latin1')));
        s.on('error', () => {});
        s.on('close', () => resolve(got));
        setTimeout(() => reject(new Error('not closed')), 10_000).unref();
      });
    // Plain HTTP on the TLS port: no HTTP answer (no plaintext reply that could be reflected).
    expect(await closedAfter(`GET / HTTP/1.1\r\nHost: ${name}\r\n\r\n`)).not.toContain(
      'HTTP/1.1 200',
    );
    expect(await closedAfter('\x16\x03\x01\x00\x05garbage')).not.toContain('HTTP/');
    // A client that never says hello is cut at the handshake bound.
    expect(await closedAfter(undefined)).toBe('');
    const ok = await getTls(port, name, zoneCa, '/after');
    expect(ok.status).toBe(200);
  });

  it('setTlsCertificate: new handshakes get the new certificate, open connections stay up', async () => {
    const { px, tlsPort, name } = await setup();
    const agent = new HttpsAgent({ keepAlive: true, maxSockets: 1, ca: zoneCa.cert });
    cleanups.push(async () => agent.destroy());
    const viaAgent = () =>
      new Promise<{ serial: string; socket: TLSSocket; body: string }>((resolve, reject) => {
        const req = httpsRequest(
          {
            host: '127.0.0.1',
            port: tlsPort,
            path: '/k',
            servername: name,
            headers: { host: name },
            agent,
          },
          (res) => {
            const socket = res.socket as TLSSocket;
            const serial = socket.getPeerCertificate().serialNumber.toLowerCase();
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              resolve({ serial, socket, body: Buffer.concat(chunks).toString() }),
            );
          },
        );
        req.on('error', reject);
        req.end();
      });
    const first = await viaAgent();
    expect(first.serial).toBe(wildcard.serial);
    const renewed = await issueCert(zoneCa, { dnsNames: ['*.nyud.net', 'nyud.net'] });
    px.proxy.setTlsCertificate({ cert: renewed.chain, key: renewed.key });
    // The kept-alive connection is the same socket and still serves.
    const again = await viaAgent();
    expect(again.socket).toBe(first.socket);
    expect(again.body).toBe('https body');
    expect(again.serial).toBe(wildcard.serial);
    // A new connection sees the new certificate.
    const fresh = await getTls(tlsPort, name, zoneCa, '/k');
    expect(fresh.peerCertSerial).toBe(renewed.serial);
    expect(fresh.status).toBe(200);
    // A key that does not match is refused and the current certificate stays.
    const other = await issueCert(zoneCa, { dnsNames: ['*.nyud.net'] });
    expect(() => px.proxy.setTlsCertificate({ cert: renewed.chain, key: other.key })).toThrow();
    expect((await getTls(tlsPort, name, zoneCa, '/k')).peerCertSerial).toBe(renewed.serial);
  });
});
