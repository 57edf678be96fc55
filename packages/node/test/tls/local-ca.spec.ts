/**
 * The local development CA: created on first start, reused on restart, the leaf reissued before
 * it expires (on a manual clock), a leaf for another zone or CA replaced, and the certificate
 * accepted by a real TLS client that trusts the CA for `*.<zone>` and the apex only.
 */
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import { connect, createServer, type TLSSocket } from 'node:tls';
import { X509Certificate, createHash } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { LocalCa, LOCAL_CA_FILES, LOCAL_LEAF_RENEW_BEFORE_MS } from '../../src/tls/local-ca.js';
import { NodeCertificates, readPair, type TlsMaterial } from '../../src/tls/certificates.js';
import { tmpDir, waitFor } from '../helpers.js';

const DAY = 86_400_000;

async function handshake(m: { certPem: string; keyPem: string }, caPem: string, name: string) {
  const server = createServer({ cert: m.certPem, key: m.keyPem }, (s) => s.end('ok'));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  try {
    const socket: TLSSocket = connect({ host: '127.0.0.1', port, servername: name, ca: caPem });
    const result = await new Promise<{ ok: boolean; error?: string }>((resolve) => {
      socket.once('secureConnect', () => resolve({ ok: socket.authorized }));
      socket.once('error', (e: Error & { code?: string }) =>
        resolve({ ok: false, error: e.code ?? e.message }),
      );
    });
    socket.destroy();
    return result;
  } finally {
    server.close();
  }
}

describe('LocalCa', () => {
  it('creates a CA and a wildcard certificate for *.<zone> and the apex, private keys 0600', async () => {
    const dir = join(tmpDir('ca'), 'tls');
    const clock = new ManualClock(Date.now());
    const m = await new LocalCa({ clock }, { dir, zone: 'Coral.Test' }).ensure();
    expect(m).toMatchObject({
      createdCa: true,
      issuedLeaf: true,
      caPath: join(dir, 'local-ca.pem'),
    });
    const leaf = new X509Certificate(m.certPem);
    const ca = new X509Certificate(m.caPem);
    expect(leaf.subjectAltName).toBe('DNS:*.coral.test, DNS:coral.test');
    // Served as leaf then CA, so a client pinning the CA's SPKI sees it in the chain.
    expect(m.certPem.endsWith(m.caPem)).toBe(true);
    expect(m.certPem.match(/BEGIN CERTIFICATE/g)).toHaveLength(2);
    expect(leaf.checkIssued(ca)).toBe(true);
    expect(leaf.verify(ca.publicKey)).toBe(true);
    expect(ca.ca).toBe(true);
    expect(leaf.ca).toBe(false);
    expect(leaf.publicKey.asymmetricKeyType).toBe('ec');
    expect(Date.parse(leaf.validTo) - clock.now()).toBeGreaterThan(29 * DAY);
    for (const f of [LOCAL_CA_FILES.caKey, LOCAL_CA_FILES.key]) {
      expect((await stat(join(dir, f))).mode & 0o777).toBe(0o600);
    }
    // The SPKI hash Chromium's --ignore-certificate-errors-spki-list takes.
    const spki = ca.publicKey.export({ type: 'spki', format: 'der' });
    expect(m.caSpkiSha256).toBe(createHash('sha256').update(spki).digest('base64'));

    expect(await handshake(m, m.caPem, 'www-example-com.coral.test')).toEqual({ ok: true });
    expect(await handshake(m, m.caPem, 'coral.test')).toEqual({ ok: true });
    // A wildcard covers one label: legacy multi-label names are not covered.
    expect(await handshake(m, m.caPem, 'www.example.com.coral.test')).toMatchObject({
      ok: false,
      error: 'ERR_TLS_CERT_ALTNAME_INVALID',
    });
    // A client that does not trust the CA refuses it.
    const other = await new LocalCa(
      { clock },
      { dir: join(tmpDir('ca2'), 'tls'), zone: 'coral.test' },
    ).ensure();
    expect((await handshake(m, other.caPem, 'coral.test')).ok).toBe(false);
  });

  it('reuses the CA and the leaf on restart, and reissues the leaf when it is due', async () => {
    const dir = join(tmpDir('ca'), 'tls');
    const clock = new ManualClock(Date.now());
    const first = await new LocalCa({ clock }, { dir, zone: 'coral.test' }).ensure();
    await clock.advance(DAY);
    const again = await new LocalCa({ clock }, { dir, zone: 'coral.test' }).ensure();
    expect(again).toMatchObject({ createdCa: false, issuedLeaf: false });
    expect(again.certPem).toBe(first.certPem);
    expect(again.caPem).toBe(first.caPem);

    // Inside the renewal window: same CA, new leaf.
    await clock.advanceTo(first.notAfter - LOCAL_LEAF_RENEW_BEFORE_MS + 1);
    const renewed = await new LocalCa({ clock }, { dir, zone: 'coral.test' }).ensure();
    expect(renewed).toMatchObject({ createdCa: false, issuedLeaf: true });
    expect(renewed.caPem).toBe(first.caPem);
    expect(renewed.notAfter).toBeGreaterThan(first.notAfter);
    expect(new X509Certificate(renewed.certPem).checkIssued(new X509Certificate(first.caPem))).toBe(
      true,
    );
    expect(await readFile(join(dir, LOCAL_CA_FILES.cert), 'utf8')).toBe(renewed.certPem);
  });

  it('reissues a leaf for another zone, a mismatched key, or one from another CA', async () => {
    const dir = join(tmpDir('ca'), 'tls');
    const clock = new ManualClock(Date.now());
    const a = await new LocalCa({ clock }, { dir, zone: 'coral.test' }).ensure();
    const b = await new LocalCa({ clock }, { dir, zone: 'other.test' }).ensure();
    expect(b).toMatchObject({ createdCa: false, issuedLeaf: true });
    expect(new X509Certificate(b.certPem).subjectAltName).toBe('DNS:*.other.test, DNS:other.test');

    // A key file that does not match the certificate (a crash between the two writes).
    const otherDir = join(tmpDir('ca'), 'tls');
    const c = await new LocalCa({ clock }, { dir: otherDir, zone: 'other.test' }).ensure();
    await writeFile(join(dir, LOCAL_CA_FILES.key), c.keyPem);
    const d = await new LocalCa({ clock }, { dir, zone: 'other.test' }).ensure();
    expect(d.issuedLeaf).toBe(true);

    // A leaf issued by another CA, put in place of ours.
    await writeFile(join(dir, LOCAL_CA_FILES.cert), c.certPem);
    await writeFile(join(dir, LOCAL_CA_FILES.key), c.keyPem);
    const e = await new LocalCa({ clock }, { dir, zone: 'other.test' }).ensure();
    expect(e.issuedLeaf).toBe(true);
    expect(e.caPem).toBe(a.caPem);
  });

  it('refuses an incomplete CA with CORAL_ERR_TLS rather than replacing it', async () => {
    const dir = join(tmpDir('ca'), 'tls');
    const clock = new ManualClock(Date.now());
    await new LocalCa({ clock }, { dir, zone: 'coral.test' }).ensure();
    await rm(join(dir, LOCAL_CA_FILES.caKey));
    await expect(
      new LocalCa({ clock }, { dir, zone: 'coral.test' }).ensure(),
    ).rejects.toMatchObject({
      code: 'CORAL_ERR_TLS',
      message: expect.stringMatching(/incomplete/),
    });
    await writeFile(join(dir, LOCAL_CA_FILES.caKey), 'not a key');
    await expect(
      new LocalCa({ clock }, { dir, zone: 'coral.test' }).ensure(),
    ).rejects.toMatchObject({ code: 'CORAL_ERR_TLS' });
  });
});

describe('NodeCertificates', () => {
  it('renews the local leaf on the clock and hands it to onChange', async () => {
    const dataDir = tmpDir('certs');
    const clock = new ManualClock(Date.now());
    const changes: TlsMaterial[] = [];
    const certs = new NodeCertificates(
      { clock, onChange: (m) => void changes.push(m) },
      { zone: 'coral.test', dataDir, localCa: true },
    );
    const first = (await certs.load())!;
    expect(first).toMatchObject({ source: 'local-ca', names: ['*.coral.test', 'coral.test'] });
    expect(first.localCa?.caPath).toBe(join(dataDir, 'tls', LOCAL_CA_FILES.caCert));
    await clock.advance(15 * DAY);
    expect(changes).toHaveLength(0);
    await clock.advance(6 * DAY); // past notAfter - 10 days
    await waitFor(() => changes.length === 1, 10_000, 'the renewal');
    expect(changes[0]!.notAfter).toBeGreaterThan(first.notAfter);
    expect(changes[0]!.localCa?.caPem).toBe(first.localCa?.caPem);
    expect(certs.current).toBe(changes[0]);
    // And again a renewal period later.
    await clock.advance(21 * DAY);
    await waitFor(() => changes.length === 2, 10_000, 'the second renewal');
    certs.stop();
    await clock.advance(60 * DAY);
    expect(changes).toHaveLength(2);
  });

  it('reads configured files, reloads them, and keeps the old pair when the new one is bad', async () => {
    const dataDir = tmpDir('certs');
    const clock = new ManualClock(Date.now());
    const a = await new LocalCa(
      { clock },
      { dir: join(dataDir, 'a'), zone: 'coral.test' },
    ).ensure();
    const b = await new LocalCa(
      { clock },
      { dir: join(dataDir, 'b'), zone: 'coral.test' },
    ).ensure();
    const cert = join(dataDir, 'cert.pem');
    const key = join(dataDir, 'key.pem');
    await writeFile(cert, a.certPem);
    await writeFile(key, a.keyPem);
    const changes: TlsMaterial[] = [];
    const certs = new NodeCertificates(
      { clock, onChange: (m) => void changes.push(m) },
      { zone: 'coral.test', dataDir, cert, key, localCa: true },
    );
    expect((await certs.load())?.certPem).toBe(a.certPem);
    await writeFile(cert, b.certPem);
    await writeFile(key, b.keyPem);
    expect((await certs.reload())?.certPem).toBe(b.certPem);
    expect(changes.map((c) => c.certPem)).toEqual([b.certPem]);
    // Half-replaced: the new certificate with the old key.
    await writeFile(cert, a.certPem);
    await expect(certs.reload()).rejects.toMatchObject({
      code: 'CORAL_ERR_TLS',
      message: expect.stringMatching(/tls\.key .* cannot be used with tls\.cert/),
    });
    expect(certs.current?.certPem).toBe(b.certPem);
    await expect(readPair(join(dataDir, 'missing.pem'), key)).rejects.toMatchObject({
      code: 'CORAL_ERR_TLS',
      message: expect.stringMatching(/cannot read tls\.cert/),
    });
    await writeFile(cert, 'garbage');
    await expect(readPair(cert, key)).rejects.toMatchObject({ code: 'CORAL_ERR_TLS' });
  });

  it('has no certificate when none is configured and the local CA is off', async () => {
    const certs = new NodeCertificates(
      {},
      { zone: 'coral.test', dataDir: tmpDir('c'), localCa: false },
    );
    expect(await certs.load()).toBeUndefined();
  });
});
