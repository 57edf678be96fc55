/**
 * Certificate authorities made on the spot: a node's local development CA (`@coral/node`'s
 * `LocalCa`) and the CAs of tests over real loopback TLS (`@coral/testkit`'s `makeTestCa`). An
 * ECDSA P-256 root and the leaf certificates it signs, as PEM.
 *
 * ```ts
 * const ca = await makeCa({ name: 'Coral local CA for nyud.net' });
 * const leaf = await issueCert(ca, { dnsNames: ['*.nyud.net', 'nyud.net'] });
 * https.createServer({ cert: leaf.cert + ca.cert, key: leaf.key }, handler);
 * tls.connect({ ca: ca.cert, servername: 'www-example-com.nyud.net', ... });
 * ```
 *
 * Built on `@peculiar/x509` (WebCrypto, RFC 5280 extensions), loaded on the first certificate
 * made: every process imports this package for its clock, and the library with its dependencies
 * costs about 19 MB of RSS, which a node that makes no certificate should not pay. Reading a CA
 * back ({@link loadCa}) uses Node's own X509Certificate. Nothing is written to disk.
 */
import { createHash, webcrypto, X509Certificate } from 'node:crypto';
import type * as X509 from '@peculiar/x509';

let loading: Promise<typeof X509> | undefined;

/** `@peculiar/x509`, loaded once, with WebCrypto as its provider. */
function x509lib(): Promise<typeof X509> {
  loading ??= (async () => {
    // @peculiar/x509 resolves its algorithms through tsyringe, which needs the Reflect metadata API.
    await import('reflect-metadata');
    const x509 = await import('@peculiar/x509');
    x509.cryptoProvider.set(webcrypto);
    return x509;
  })();
  return loading;
}

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;

export interface CertificateAuthority {
  /** The CA certificate, PEM. Trust it with `ca: [ca.cert]`. */
  cert: string;
  /** Its private key, PKCS #8 PEM. */
  key: string;
  /** Base64 SHA-256 of its SubjectPublicKeyInfo (Chromium's `--ignore-certificate-errors-spki-list`). */
  spkiSha256: string;
  /** The subject distinguished name (`CN=…`). */
  subject: string;
}

export interface CaOptions {
  /** Common name. */
  name: string;
  /** Default: one day before now. */
  notBefore?: Date;
  /** Default: ten years from now. */
  notAfter?: Date;
}

export interface IssueOptions {
  /** DNS names for the SubjectAltName (wildcards as `*.zone`). The first is also the CN. */
  dnsNames?: string[];
  /** IP addresses for the SubjectAltName. */
  ipAddresses?: string[];
  /** Default: one day before now. */
  notBefore?: Date;
  /** Default: 90 days after now. */
  notAfter?: Date;
}

export interface IssuedCert {
  /** The leaf certificate, PEM. */
  cert: string;
  /** The leaf followed by the CA certificate (what a server presents). */
  chain: string;
  /** The leaf's private key, PKCS #8 PEM. */
  key: string;
  /** Hex serial number. */
  serial: string;
}

async function keyPem(key: webcrypto.CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', key);
  return (await x509lib()).PemConverter.encode(der, 'PRIVATE KEY');
}

function serial(): string {
  // Positive, 16 random bytes (RFC 5280 §4.1.2.2: at most 20 octets, non-negative).
  const b = webcrypto.getRandomValues(new Uint8Array(16));
  b[0] = b[0]! & 0x7f || 0x01;
  return Buffer.from(b).toString('hex');
}

/** A self-signed root CA (basicConstraints cA, keyCertSign + cRLSign). */
export async function makeCa(opts: CaOptions): Promise<CertificateAuthority> {
  const x509 = await x509lib();
  const keys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const now = Date.now();
  const subject = `CN=${opts.name}`;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: subject,
    notBefore: opts.notBefore ?? new Date(now - DAY_MS),
    notAfter: opts.notAfter ?? new Date(now + 3650 * DAY_MS),
    signingAlgorithm: ALG,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const spki = Buffer.from(cert.publicKey.rawData);
  return {
    cert: cert.toString('pem') + '\n',
    key: await keyPem(keys.privateKey),
    spkiSha256: createHash('sha256').update(spki).digest('base64'),
    subject,
  };
}

/** A CA kept as PEM (a node's development CA in its data dir), ready for {@link issueCert}. */
export function loadCa(pem: { cert: string; key: string }): CertificateAuthority {
  const cert = new X509Certificate(pem.cert);
  const spki = cert.publicKey.export({ type: 'spki', format: 'der' });
  return {
    cert: pem.cert,
    key: pem.key,
    spkiSha256: createHash('sha256').update(spki).digest('base64'),
    // Node writes one attribute per line; the CAs made here have a single CN.
    subject: cert.subject.split('\n').join(', '),
  };
}

/** A server certificate signed by `ca` (serverAuth, digitalSignature, the SANs asked for). */
export async function issueCert(ca: CertificateAuthority, opts: IssueOptions): Promise<IssuedCert> {
  const x509 = await x509lib();
  const dnsNames = opts.dnsNames ?? [];
  const ips = opts.ipAddresses ?? [];
  if (dnsNames.length === 0 && ips.length === 0) {
    throw new TypeError('issueCert needs at least one DNS name or IP address');
  }
  const keys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const now = Date.now();
  const caCert = new x509.X509Certificate(ca.cert);
  const signingKey = await webcrypto.subtle.importKey(
    'pkcs8',
    x509.PemConverter.decodeFirst(ca.key),
    ALG,
    false,
    ['sign'],
  );
  const sn = serial();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: sn,
    subject: `CN=${dnsNames[0] ?? ips[0]!}`,
    issuer: caCert.subject,
    notBefore: opts.notBefore ?? new Date(now - DAY_MS),
    notAfter: opts.notAfter ?? new Date(now + 90 * DAY_MS),
    signingAlgorithm: ALG,
    publicKey: keys.publicKey,
    signingKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([
        ...dnsNames.map((value) => ({ type: 'dns' as const, value })),
        ...ips.map((value) => ({ type: 'ip' as const, value })),
      ]),
      await x509.AuthorityKeyIdentifierExtension.create(caCert),
    ],
  });
  const pem = cert.toString('pem') + '\n';
  return { cert: pem, chain: pem + ca.cert, key: await keyPem(keys.privateKey), serial: sn };
}
