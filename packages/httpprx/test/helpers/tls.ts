/**
 * Loopback TLS for the proxy tests: CAs made by the test (@coral/testkit), an origin that speaks
 * http and https on one port (so the two variants of a URL differ only by scheme) and checks the
 * SNI it is sent, and an https client that verifies the proxy against the test CA.
 */
import { createServer as createHttpServer, request as httpRequest } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import { createServer as createNetServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { issueCert, makeTestCa } from '@coral/testkit';
import type { IssuedCert, TestCa } from '@coral/testkit';
import { closer, readReply } from './harness.js';
import type { ProxyHarness, Reply } from './harness.js';

export interface DualHit {
  scheme: 'http' | 'https';
  method: string;
  url: string;
  /** SNI the client sent (https). */
  servername?: string | false;
  /** ALPN protocol agreed (https). */
  alpn?: string | false | null;
}

export interface DualOrigin {
  ip: string;
  port: number;
  hits: DualHit[];
  /** Handshakes refused because the SNI was not the expected name. */
  badSni: string[];
  close(): Promise<void>;
}

export type DualHandler = (
  scheme: 'http' | 'https',
  req: IncomingMessage,
  res: ServerResponse,
) => void;

/**
 * An origin on `ip:port` speaking plain http and TLS on the same port (the first byte tells: a TLS
 * ClientHello starts with 0x16). Over TLS it presents `cert` and completes only handshakes whose
 * SNI is `sni`.
 */
export async function startDualOrigin(
  handler: DualHandler,
  cert: IssuedCert,
  sni: string,
  ip = '127.0.0.2',
): Promise<DualOrigin> {
  const hits: DualHit[] = [];
  const badSni: string[] = [];
  const plain = createHttpServer((req, res) => {
    hits.push({ scheme: 'http', method: req.method ?? '', url: req.url ?? '' });
    handler('http', req, res);
  });
  const secure = createHttpsServer(
    {
      cert: cert.chain,
      key: cert.key,
      ALPNProtocols: ['http/1.1'],
      SNICallback: (name, cb) => {
        if (name === sni) return cb(null, undefined);
        badSni.push(name);
        cb(new Error(`unexpected SNI ${name}`));
      },
    },
    (req, res) => {
      const s = req.socket as TLSSocket;
      hits.push({
        scheme: 'https',
        method: req.method ?? '',
        url: req.url ?? '',
        servername: s.servername ?? false,
        alpn: s.alpnProtocol,
      });
      handler('https', req, res);
    },
  );
  secure.on('tlsClientError', () => {});
  const sockets = new Set<Socket>();
  const front = createNetServer((sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => {});
    sock.once('readable', () => {
      const first = sock.read(1) as Buffer | null;
      if (first === null) return sock.destroy();
      sock.unshift(first);
      (first[0] === 0x16 ? secure : plain).emit('connection', sock);
    });
  });
  const close = closer(front);
  await new Promise<void>((r) => front.listen(0, ip, r));
  const port = (front.address() as AddressInfo).port;
  return {
    ip,
    port,
    hits,
    badSni,
    close: async () => {
      for (const s of sockets) s.destroy();
      plain.closeAllConnections();
      secure.closeAllConnections();
      await close();
    },
  };
}

/** One https request to the proxy's TLS listener, verifying it against `ca` for `host`'s name. */
export function getTls(
  port: number,
  host: string,
  ca: TestCa,
  path = '/',
  headers: Record<string, string> = {},
  ip = '127.0.0.1',
): Promise<Reply & { peerCertSerial: string }> {
  const servername = host.replace(/:\d+$/, '');
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: ip,
        port,
        path,
        servername,
        ca: ca.cert,
        headers: { host, ...headers },
        agent: false,
      },
      (res) => {
        const serial = (res.socket as TLSSocket).getPeerCertificate().serialNumber;
        readReply(res).then((r) => resolve({ ...r, peerCertSerial: serial.toLowerCase() }), reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Follow an absolute Location (http or https) the way a browser would, trusting `ca`. */
export function follow(location: string, ca: TestCa, ip = '127.0.0.1'): Promise<Reply> {
  const u = new URL(location);
  const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
  if (u.protocol === 'https:') return getTls(port, u.host, ca, u.pathname + u.search, {}, ip);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: ip, port, path: u.pathname + u.search, headers: { host: u.host }, agent: false },
      (res) => void readReply(res).then(resolve, reject),
    );
    req.on('error', reject);
    req.end();
  });
}

/** The certificates the TLS tests share, made once per test file. */
export interface TestPki {
  /** Signs the proxy's wildcard certificate (what clients trust). */
  zoneCa: TestCa;
  /** A private CA for the origins (the proxy's `originCa`). */
  originCa: TestCa;
  /** `*.nyud.net` and `nyud.net`. */
  wildcard: IssuedCert;
  /** `origin.test`, from `originCa`. */
  originCert: IssuedCert;
}

export async function makePki(): Promise<TestPki> {
  const zoneCa = await makeTestCa({ name: 'Coral zone test CA' });
  const originCa = await makeTestCa({ name: 'Origin private CA' });
  return {
    zoneCa,
    originCa,
    wildcard: await issueCert(zoneCa, { dnsNames: ['*.nyud.net', 'nyud.net'] }),
    originCert: await issueCert(originCa, { dnsNames: ['origin.test'] }),
  };
}

/** Start `px`'s TLS listener on 127.0.0.1 with the wildcard certificate; resolves to its port. */
export async function listenTls(
  px: ProxyHarness,
  pki: TestPki,
  extra: { publicPort?: number } = {},
): Promise<number> {
  const { port } = await px.proxy.listenTls({
    port: 0,
    host: '127.0.0.1',
    cert: pki.wildcard.chain,
    key: pki.wildcard.key,
    ...extra,
  });
  return port;
}
