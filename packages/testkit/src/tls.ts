/**
 * Certificate authorities for tests over real loopback TLS: `@coral/runtime`'s CA helpers (the
 * ones a node's local development CA is made with) with a default name.
 *
 * ```ts
 * const ca = await makeTestCa();
 * const leaf = await issueCert(ca, { dnsNames: ['*.nyud.net', 'nyud.net'] });
 * https.createServer({ cert: leaf.chain, key: leaf.key }, handler);
 * tls.connect({ ca: ca.cert, servername: 'www-example-com.nyud.net', ... });
 * ```
 */
import { makeCa, type CaOptions, type CertificateAuthority } from '@coral/runtime';

/** A CA made for a test. */
export type TestCa = CertificateAuthority;

/** A self-signed root CA, named `'Coral test CA'` unless `opts.name` says otherwise. */
export function makeTestCa(opts: Partial<CaOptions> = {}): Promise<TestCa> {
  return makeCa({ ...opts, name: opts.name ?? 'Coral test CA' });
}
