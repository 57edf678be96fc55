import { X509Certificate, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { issueCert, makeTestCa, tlsVisit } from '../src/index.js';

describe('makeTestCa', () => {
  it('makes a runtime CA named "Coral test CA" unless told otherwise, which issues leaves', async () => {
    const ca = await makeTestCa();
    expect(ca.subject).toBe('CN=Coral test CA');
    expect((await makeTestCa({ name: 'origin CA' })).subject).toBe('CN=origin CA');
    const leaf = await issueCert(ca, { dnsNames: ['a.test'] });
    expect(new X509Certificate(leaf.cert).checkIssued(new X509Certificate(ca.cert))).toBe(true);
  });
});

describe('tlsVisit', () => {
  it.each(['TLSv1.2', 'TLSv1.3'] as const)(
    'gets a %s session that resumes where the ticket keys match, with the response to a request',
    async (version) => {
      const ca = await makeTestCa();
      const leaf = await issueCert(ca, { dnsNames: ['a.test'] });
      const keys = randomBytes(48);
      const servers = [0, 1, 2].map(() =>
        createServer({ cert: leaf.chain, key: leaf.key }, (s) => s.end('hello')),
      );
      servers[0]!.setTicketKeys(keys);
      servers[1]!.setTicketKeys(keys);
      servers[2]!.setTicketKeys(randomBytes(48));
      const ports = await Promise.all(
        servers.map(async (s) => {
          s.listen(0, '127.0.0.1');
          await once(s, 'listening');
          return (s.address() as AddressInfo).port;
        }),
      );
      try {
        const at = (port: number, session?: Buffer, request?: string) =>
          tlsVisit({
            port,
            servername: 'a.test',
            ca: ca.cert,
            maxVersion: version,
            ...(session ? { session } : {}),
            ...(request !== undefined ? { request } : {}),
          });
        const first = await at(ports[0]!, undefined, 'hi');
        expect(first).toMatchObject({ reused: false, protocol: version, response: 'hello' });
        expect(first.session).toBeInstanceOf(Buffer);
        const twin = await at(ports[1]!, first.session);
        expect(twin.reused).toBe(true);
        expect(twin.session).toBeInstanceOf(Buffer);
        expect((await at(ports[2]!, first.session)).reused).toBe(false);
        await expect(
          tlsVisit({ port: ports[0]!, servername: 'b.test', ca: ca.cert }),
        ).rejects.toThrow(/b\.test/);
      } finally {
        for (const s of servers) s.close();
      }
    },
  );
});
