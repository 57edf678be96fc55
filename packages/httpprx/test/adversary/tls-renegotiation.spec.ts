/**
 * Adversary: client-initiated TLS renegotiation (issue 31, item 5). In TLS 1.2 a client may ask
 * for a new handshake on an open connection at any time; each costs the server a full handshake
 * (the asymmetric work is on the server's side: a CPU exhaustion lever, CVE-2011-1473 / THC's
 * ssl-dos), and it has no use for a CDN's clients. A real `tls` client on loopback, limited to
 * TLS 1.2, calls `renegotiate()` against the proxy's TLS listener: it is refused and the
 * connection closed, while normal requests over TLS 1.2 and 1.3 still work.
 */
import { connect } from 'node:tls';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOrigin, startProxy } from '../helpers/harness.js';
import type { Origin, ProxyHarness } from '../helpers/harness.js';
import { listenTls, makePki } from '../helpers/tls.js';
import type { TestPki } from '../helpers/tls.js';

let pki: TestPki;
let origin: Origin;
let px: ProxyHarness;
let tlsPort: number;

beforeAll(async () => {
  pki = await makePki();
  origin = await startOrigin((_req, res) => {
    res.writeHead(200, { 'cache-control': 'max-age=600', 'content-length': '2' });
    res.end('ok');
  });
  px = await startProxy();
  tlsPort = await listenTls(px, pki);
});

afterAll(async () => {
  await px.close();
  await origin.close();
});

const NAME = 'origin-test---h.nyud.net';

function open(maxVersion: 'TLSv1.2' | 'TLSv1.3'): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const s = connect({
      host: '127.0.0.1',
      port: tlsPort,
      servername: NAME,
      ca: pki.zoneCa.cert,
      maxVersion,
    });
    s.once('secureConnect', () => resolve(s));
    s.once('error', reject);
  });
}

/** One keep-alive GET on an open TLS socket; resolves with the status line. */
function ask(s: TLSSocket, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (d: Buffer) => {
      text += d.toString('latin1');
      if (/\r\n\r\nok$/.test(text)) {
        s.off('data', onData);
        resolve(text.split('\r\n')[0]!);
      }
    };
    s.on('data', onData);
    s.once('error', reject);
    s.write(`GET ${path} HTTP/1.1\r\nHost: origin-test---h${origin.port}.nyud.net\r\n\r\n`);
  });
}

describe('TLS renegotiation on the proxy listener', () => {
  it.each(['as started', 'after a certificate reload'])(
    'a TLS 1.2 client asking to renegotiate is refused and its connection closed (%s)',
    async (when) => {
      if (when !== 'as started')
        px.proxy.setTlsCertificate({ cert: pki.wildcard.chain, key: pki.wildcard.key });
      const s = await open('TLSv1.2');
      expect(s.getProtocol()).toBe('TLSv1.2');
      expect(await ask(s, '/before')).toBe('HTTP/1.1 200 OK');
      const closed = new Promise<void>((r) => s.once('close', () => r()));
      const outcome = await new Promise<Error | null>((resolve) => {
        // The refusal arrives as the socket's error (OpenSSL's no_renegotiation alert); a
        // renegotiation that went through calls back without one.
        s.once('error', resolve);
        const asked = s.renegotiate({ rejectUnauthorized: true }, (err) => resolve(err ?? null));
        if (!asked) resolve(new Error('renegotiate() refused locally'));
        s.resume(); // read the server's answer to the new ClientHello
      });
      // Refused: the server answers the request for a new handshake with a no_renegotiation
      // alert, never a second handshake, and the connection is closed.
      expect(outcome).toBeInstanceOf(Error);
      expect((outcome as Error & { code?: string }).code).toBe('ERR_SSL_NO_RENEGOTIATION');
      s.on('error', () => {});
      await closed;
    },
  );

  it('normal requests still work over TLS 1.2 and TLS 1.3', async () => {
    for (const v of ['TLSv1.2', 'TLSv1.3'] as const) {
      const s = await open(v);
      expect(s.getProtocol()).toBe(v);
      expect(await ask(s, `/normal-${v}`)).toBe('HTTP/1.1 200 OK');
      expect(await ask(s, `/again-${v}`)).toBe('HTTP/1.1 200 OK');
      s.destroy();
    }
  });
});
