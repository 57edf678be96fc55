import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import { X509Certificate } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { issueCert, loadCa, makeCa } from '../src/x509.js';

/** Handshake with a loopback TLS server presenting `chain`; resolves to the client's verdict. */
async function handshake(
  chain: { cert: string; key: string },
  client: { ca: string; servername: string },
): Promise<{ authorized: boolean; error?: string }> {
  const server = tls.createServer({ cert: chain.cert, key: chain.key }, (s) => s.end());
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  try {
    return await new Promise((resolve) => {
      const s = tls.connect({ host: '127.0.0.1', port, ...client }, () => {
        resolve({ authorized: s.authorized });
        s.destroy();
      });
      s.on('error', (e: Error & { code?: string }) =>
        resolve({ authorized: false, error: e.code ?? e.message }),
      );
    });
  } finally {
    server.close();
  }
}

describe('certificate authority (makeCa, issueCert, loadCa)', () => {
  it('issues a wildcard certificate that Node verifies for one-label names and the apex', async () => {
    const ca = await makeCa({ name: 'Coral test CA' });
    const leaf = await issueCert(ca, { dnsNames: ['*.nyud.net', 'nyud.net'] });
    const x = new X509Certificate(leaf.cert);
    expect(x.checkIssued(new X509Certificate(ca.cert))).toBe(true);
    expect(x.subjectAltName).toBe('DNS:*.nyud.net, DNS:nyud.net');
    expect(new X509Certificate(ca.cert).ca).toBe(true);
    const chain = { cert: leaf.chain, key: leaf.key };
    expect(await handshake(chain, { ca: ca.cert, servername: 'www-example-com.nyud.net' })).toEqual(
      {
        authorized: true,
      },
    );
    expect(await handshake(chain, { ca: ca.cert, servername: 'nyud.net' })).toEqual({
      authorized: true,
    });
    // A wildcard covers one label only (RFC 6125 §6.4.3).
    const deep = await handshake(chain, { ca: ca.cert, servername: 'www.example.com.nyud.net' });
    expect(deep.error).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
  });

  it('an expired certificate and an unknown CA are refused', async () => {
    const ca = await makeCa({ name: 'Coral test CA' });
    const other = await makeCa({ name: 'someone else' });
    const past = new Date(Date.now() - 10 * 86_400_000);
    const expired = await issueCert(ca, {
      dnsNames: ['origin.test'],
      notBefore: new Date(past.getTime() - 86_400_000),
      notAfter: past,
    });
    expect(
      await handshake(
        { cert: expired.chain, key: expired.key },
        { ca: ca.cert, servername: 'origin.test' },
      ),
    ).toMatchObject({ authorized: false, error: 'CERT_HAS_EXPIRED' });
    const good = await issueCert(ca, { dnsNames: ['origin.test'] });
    const r = await handshake(
      { cert: good.chain, key: good.key },
      { ca: other.cert, servername: 'origin.test' },
    );
    expect(r.authorized).toBe(false);
  });

  it('a CA kept as PEM issues again (loadCa), with the same SPKI hash', async () => {
    const ca = await makeCa({ name: 'Coral test CA' });
    const again = loadCa({ cert: ca.cert, key: ca.key });
    expect(again.spkiSha256).toBe(ca.spkiSha256);
    expect(again.subject).toBe(ca.subject);
    const leaf = await issueCert(again, { dnsNames: ['a.test'], ipAddresses: ['127.0.0.1'] });
    expect(new X509Certificate(leaf.cert).checkIssued(new X509Certificate(ca.cert))).toBe(true);
    expect(new X509Certificate(leaf.cert).subjectAltName).toBe('DNS:a.test, IP Address:127.0.0.1');
    await expect(issueCert(ca, {})).rejects.toThrow(TypeError);
  });

  it('loads the certificate library only when a certificate is made, not with the package', () => {
    // @peculiar/x509 brings reflect-metadata, which installs Reflect.getMetadata: a process that
    // imports the package for its clock must not pay for it (about 19 MB of RSS).
    const probe = (code: string) =>
      execFileSync(process.execPath, ['--input-type=module', '-e', code], {
        cwd: fileURLToPath(new URL('..', import.meta.url)),
        encoding: 'utf8',
      }).trim();
    expect(probe(`import '@coral/runtime'; console.log(typeof Reflect.getMetadata);`)).toBe(
      'undefined',
    );
    expect(
      probe(
        `import { makeCa } from '@coral/runtime'; await makeCa({ name: 'x' }); console.log(typeof Reflect.getMetadata);`,
      ),
    ).toBe('function');
  });
});
