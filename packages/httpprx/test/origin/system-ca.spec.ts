// Origins over TLS are verified against the system's CA bundle as well as Node's root store and
// `originCa` (issue 11: "certificate verification against the system's CAs"): a CA installed the
// distribution's way (or named by SSL_CERT_FILE) is trusted, and nothing else is.
import { once } from 'node:events';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueCert, makeTestCa } from '@coral/testkit';
import type { TestCa } from '@coral/testkit';
import { originTlsOptions, SYSTEM_CA_FILES, systemCaBundle } from '../../src/origin/connector.js';

let ca: TestCa;
let other: TestCa;
let server: tls.Server;
let port: number;

beforeAll(async () => {
  ca = await makeTestCa({ name: 'Installed private CA' });
  other = await makeTestCa({ name: 'Someone else' });
  const leaf = await issueCert(ca, { dnsNames: ['origin.test'] });
  server = tls.createServer({ cert: leaf.cert, key: leaf.key }, (s) => s.end('hi'));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});

afterAll(() => server.close());

/** Connects with the given options: 'ok' or the verification error's code. */
async function handshake(options: tls.ConnectionOptions): Promise<string> {
  const socket = tls.connect({ ...options, host: '127.0.0.1', port, servername: 'origin.test' });
  try {
    await once(socket, 'secureConnect');
    return 'ok';
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  } finally {
    socket.destroy();
  }
}

describe('the system CA bundle', () => {
  it('SSL_CERT_FILE names it first; otherwise the first usual path that holds certificates', () => {
    const files: Record<string, string> = {
      '/custom.pem': ca.cert,
      [SYSTEM_CA_FILES[1]!]: other.cert,
      [SYSTEM_CA_FILES[0]!]: 'not a certificate',
    };
    const read = (p: string): string => {
      const f = files[p];
      if (f === undefined) throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
      return f;
    };
    expect(systemCaBundle({ SSL_CERT_FILE: '/custom.pem' }, read)).toBe(ca.cert);
    expect(systemCaBundle({}, read)).toBe(other.cert);
    expect(systemCaBundle({}, () => 'nothing')).toBeUndefined();
  });

  it('a CA in the system bundle verifies an origin without originCa', async () => {
    expect(await handshake(originTlsOptions(undefined, ca.cert))).toBe('ok');
  });

  it('is in addition to originCa, and neither trusts an unrelated CA', async () => {
    expect(await handshake(originTlsOptions([ca.cert], other.cert))).toBe('ok');
    expect(await handshake(originTlsOptions([other.cert], null))).toBe(
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    );
    expect(await handshake(originTlsOptions(undefined, null))).toBe(
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    );
  });
});
