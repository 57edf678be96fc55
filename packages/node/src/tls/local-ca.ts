/**
 * A local development CA, as Caddy's local HTTPS does: with no certificate configured, a node
 * creates a CA of its own in `<dataDir>/tls` on first start and issues from it a wildcard
 * certificate for `*.<zone>` and the apex `<zone>`, which is all the one-label Coralized names
 * (docs/names.md) need. The CA is kept for years and reused on every restart, so a client that
 * trusts it once (`curl --cacert <dataDir>/tls/local-ca.pem`, a browser's trust store) keeps
 * trusting the node; the leaf is short-lived and reissued before it expires.
 *
 * Certificates are made with `@peculiar/x509` over WebCrypto, ECDSA P-256 keys and
 * SHA-256 signatures. Time comes from the injected clock, so issuance, reuse and renewal are
 * tested without waiting.
 *
 * ```ts
 * const ca = new LocalCa({ clock }, { dir: join(dataDir, 'tls'), zone: 'nyud.net' });
 * const m = await ca.ensure();        // creates or reuses; m.certPem/m.keyPem for the listener
 * ca.renewAt(m);                      // clock time at which to call ensure() again
 * ```
 */
import 'reflect-metadata'; // @peculiar/x509 (through tsyringe) needs a Reflect polyfill first
import * as x509 from '@peculiar/x509';
import { randomBytes, webcrypto } from 'node:crypto';
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createSecureContext } from 'node:tls';
import { systemClock, type Clock } from '@coral/testkit';
import { TlsError } from '../errors.js';

const DAY_MS = 86_400_000;
/** Lifetime of the local CA (Caddy's local root: 10 years). */
export const LOCAL_CA_LIFETIME_MS = 3650 * DAY_MS;
/** Lifetime of the wildcard certificate it issues. */
export const LOCAL_LEAF_LIFETIME_MS = 30 * DAY_MS;
/** Reissue the leaf when less than this much of its life remains (a third, as certmagic does). */
export const LOCAL_LEAF_RENEW_BEFORE_MS = 10 * DAY_MS;
/** Certificates start this long before "now", so a client whose clock is a little behind accepts them. */
export const CLOCK_SKEW_MS = 5 * 60_000;

/** File names under the CA's directory. */
export const LOCAL_CA_FILES = {
  caCert: 'local-ca.pem',
  caKey: 'local-ca-key.pem',
  cert: 'local-cert.pem',
  key: 'local-key.pem',
} as const;

const KEY_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING_ALGORITHM = { name: 'ECDSA', hash: 'SHA-256' } as const;
const crypto = webcrypto;
type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

export interface LocalCaOptions {
  /** Directory of the CA and its certificate (created, mode 0700). */
  dir: string;
  /** The zone: the leaf covers `*.<zone>` and `<zone>`. */
  zone: string;
  caLifetimeMs?: number;
  leafLifetimeMs?: number;
  renewBeforeMs?: number;
}

/** What a TLS listener is given: a certificate chain and its key, in PEM, with their files. */
export interface LocalCaMaterial {
  certPem: string;
  keyPem: string;
  certPath: string;
  keyPath: string;
  /** The CA certificate clients trust. */
  caPath: string;
  caPem: string;
  /** Base64 SHA-256 of the CA's SubjectPublicKeyInfo (Chromium's --ignore-certificate-errors-spki-list). */
  caSpkiSha256: string;
  /** Validity of the leaf, clock ms. */
  notBefore: number;
  notAfter: number;
  /** What this call did: created the CA, issued a new leaf (or reused both). */
  createdCa: boolean;
  issuedLeaf: boolean;
}

export class LocalCa {
  readonly #clock: Clock;
  readonly #dir: string;
  readonly #zone: string;
  readonly #caLifetimeMs: number;
  readonly #leafLifetimeMs: number;
  readonly #renewBeforeMs: number;

  constructor(components: { clock?: Clock }, options: LocalCaOptions) {
    this.#clock = components.clock ?? systemClock;
    this.#dir = options.dir;
    this.#zone = options.zone.toLowerCase().replace(/\.$/, '');
    this.#caLifetimeMs = options.caLifetimeMs ?? LOCAL_CA_LIFETIME_MS;
    this.#leafLifetimeMs = options.leafLifetimeMs ?? LOCAL_LEAF_LIFETIME_MS;
    this.#renewBeforeMs = options.renewBeforeMs ?? LOCAL_LEAF_RENEW_BEFORE_MS;
    if (this.#renewBeforeMs >= this.#leafLifetimeMs) {
      throw new TlsError('renewBeforeMs must be shorter than leafLifetimeMs');
    }
  }

  path(file: keyof typeof LOCAL_CA_FILES): string {
    return join(this.#dir, LOCAL_CA_FILES[file]);
  }

  /** Clock time at which the leaf of `m` should be reissued. */
  renewAt(m: Pick<LocalCaMaterial, 'notAfter'>): number {
    return m.notAfter - this.#renewBeforeMs;
  }

  /**
   * The CA and a current wildcard certificate: read from the directory when they are there and
   * good, created otherwise. A leaf is reissued when it is missing, unreadable, for another zone,
   * not from this CA, not yet valid, or due for renewal. A CA that is missing is created (and
   * with it a new leaf); a CA that is unreadable or expired is an error, never silently replaced,
   * since clients trust it by its file.
   */
  async ensure(): Promise<LocalCaMaterial> {
    await mkdir(this.#dir, { recursive: true, mode: 0o700 });
    const now = this.#clock.now();
    let createdCa = false;
    let ca = await this.#readCa();
    if (!ca) {
      ca = await this.#createCa(now);
      createdCa = true;
    }
    if (ca.cert.notAfter.getTime() <= now) {
      throw new TlsError(
        `the local CA ${this.path('caCert')} expired on ${ca.cert.notAfter.toISOString()}: ` +
          `remove ${this.#dir} to create a new one (clients must trust the new one)`,
      );
    }
    let leaf = createdCa ? undefined : await this.#readLeaf(ca, now);
    const issuedLeaf = leaf === undefined;
    leaf ??= await this.#issueLeaf(ca, now);
    const caPem = withNewline(ca.cert.toString('pem'));
    return {
      certPem: leaf.certPem,
      keyPem: leaf.keyPem,
      certPath: this.path('cert'),
      keyPath: this.path('key'),
      caPath: this.path('caCert'),
      caPem,
      caSpkiSha256: await spkiSha256(ca.cert),
      notBefore: leaf.cert.notBefore.getTime(),
      notAfter: leaf.cert.notAfter.getTime(),
      createdCa,
      issuedLeaf,
    };
  }

  async #readCa(): Promise<{ cert: x509.X509Certificate; key: CryptoKey } | undefined> {
    const certPem = await readOptional(this.path('caCert'));
    const keyPem = await readOptional(this.path('caKey'));
    if (certPem === undefined && keyPem === undefined) return undefined;
    if (certPem === undefined || keyPem === undefined) {
      throw new TlsError(
        `the local CA in ${this.#dir} is incomplete (${LOCAL_CA_FILES.caCert} and ` +
          `${LOCAL_CA_FILES.caKey} go together): remove the directory to create a new CA`,
      );
    }
    try {
      const cert = new x509.X509Certificate(certPem);
      const key = await crypto.subtle.importKey(
        'pkcs8',
        x509.PemConverter.decodeFirst(keyPem),
        KEY_ALGORITHM,
        false,
        ['sign'],
      );
      return { cert, key };
    } catch (err) {
      throw new TlsError(`cannot read the local CA in ${this.#dir}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  async #createCa(now: number): Promise<{ cert: x509.X509Certificate; key: CryptoKey }> {
    const keys = await generateKeys();
    const name = `CN=Coral local CA for ${this.#zone} ${randomBytes(4).toString('hex')}, O=Coral local development CA`;
    const cert = await x509.X509CertificateGenerator.createSelfSigned(
      {
        serialNumber: serial(),
        name,
        notBefore: new Date(now - CLOCK_SKEW_MS),
        notAfter: new Date(now + this.#caLifetimeMs),
        keys,
        signingAlgorithm: SIGNING_ALGORITHM,
        extensions: [
          new x509.BasicConstraintsExtension(true, 0, true),
          new x509.KeyUsagesExtension(
            x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
            true,
          ),
          await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, crypto),
        ],
      },
      crypto,
    );
    await writePrivate(this.path('caKey'), await pkcs8Pem(keys.privateKey));
    await writePublic(this.path('caCert'), cert.toString('pem'));
    return { cert, key: keys.privateKey };
  }

  /** The leaf on disk when it is good for this zone, this CA and now; else undefined. */
  async #readLeaf(
    ca: { cert: x509.X509Certificate },
    now: number,
  ): Promise<{ cert: x509.X509Certificate; certPem: string; keyPem: string } | undefined> {
    const certPem = await readOptional(this.path('cert'));
    const keyPem = await readOptional(this.path('key'));
    if (certPem === undefined || keyPem === undefined) return undefined;
    try {
      const cert = new x509.X509Certificate(certPem);
      createSecureContext({ cert: certPem, key: keyPem }); // throws when the key does not match
      const names = dnsNames(cert);
      const fresh =
        cert.notBefore.getTime() <= now &&
        now < cert.notAfter.getTime() - this.#renewBeforeMs &&
        names.includes(`*.${this.#zone}`) &&
        names.includes(this.#zone) &&
        cert.issuer === ca.cert.subject &&
        (await cert.verify({ publicKey: ca.cert.publicKey, signatureOnly: true }, crypto));
      return fresh ? { cert, certPem, keyPem } : undefined;
    } catch {
      return undefined; // unreadable: issue a new one
    }
  }

  async #issueLeaf(
    ca: { cert: x509.X509Certificate; key: CryptoKey },
    now: number,
  ): Promise<{ cert: x509.X509Certificate; certPem: string; keyPem: string }> {
    const keys = await generateKeys();
    const cert = await x509.X509CertificateGenerator.create(
      {
        serialNumber: serial(),
        subject: `CN=*.${this.#zone}`,
        issuer: ca.cert.subject,
        notBefore: new Date(now - CLOCK_SKEW_MS),
        notAfter: new Date(now + this.#leafLifetimeMs),
        publicKey: keys.publicKey,
        signingKey: ca.key,
        signingAlgorithm: SIGNING_ALGORITHM,
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
          new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth], false),
          new x509.SubjectAlternativeNameExtension(
            [
              { type: 'dns', value: `*.${this.#zone}` },
              { type: 'dns', value: this.#zone },
            ],
            false,
          ),
          await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, crypto),
          await x509.AuthorityKeyIdentifierExtension.create(ca.cert, false, crypto),
        ],
      },
      crypto,
    );
    const certPem = withNewline(cert.toString('pem'));
    const keyPem = withNewline(await pkcs8Pem(keys.privateKey));
    // Key first: a crash between the two writes leaves a pair that does not match, which the next
    // start detects (createSecureContext) and reissues.
    await writePrivate(this.path('key'), keyPem);
    await writePublic(this.path('cert'), certPem);
    return { cert, certPem, keyPem };
  }
}

/** The DNS names of a certificate's subjectAltName (lowercase). */
export function dnsNames(cert: x509.X509Certificate): string[] {
  const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
  return (san?.names.items ?? []).filter((n) => n.type === 'dns').map((n) => n.value.toLowerCase());
}

/** Base64 SHA-256 of a certificate's SubjectPublicKeyInfo. */
export async function spkiSha256(cert: x509.X509Certificate): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', cert.publicKey.rawData);
  return Buffer.from(digest).toString('base64');
}

function generateKeys(): Promise<CryptoKeyPair> {
  return crypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
}

async function pkcs8Pem(key: CryptoKey): Promise<string> {
  return x509.PemConverter.encode(await crypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY');
}

/** A positive 128-bit serial number (RFC 5280 §4.1.2.2: at most 20 octets, positive). */
function serial(): string {
  const b = randomBytes(16);
  b[0] = b[0]! & 0x7f || 0x01;
  return b.toString('hex');
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') return undefined;
    throw new TlsError(`cannot read ${path}: ${(err as Error).message}`, { cause: err });
  }
}

/** Write to a temporary name and rename, so a reader never sees half a file. */
async function writeAtomic(path: string, text: string, mode: number): Promise<void> {
  const tmp = `${path}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(tmp, withNewline(text), { mode });
  await chmod(tmp, mode);
  await rename(tmp, path);
}

function withNewline(text: string): string {
  return text.endsWith('\n') ? text : `${text}\n`;
}

const writePrivate = (path: string, text: string) => writeAtomic(path, text, 0o600);
const writePublic = (path: string, text: string) => writeAtomic(path, text, 0o644);
