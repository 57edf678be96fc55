/**
 * A local development CA, as Caddy's local HTTPS does: with no certificate configured, a node
 * creates a CA of its own in `<dataDir>/tls` on first start and issues from it a wildcard
 * certificate for `*.<zone>` and the apex `<zone>`, which is all the one-label Coralized names
 * (docs/names.md) need. The CA is kept for years and reused on every restart, so a client that
 * trusts it once (`curl --cacert <dataDir>/tls/local-ca.pem`, a browser's trust store) keeps
 * trusting the node; the leaf is short-lived and reissued before it expires.
 *
 * Certificates are made by @coral/runtime's CA helpers (`@peculiar/x509` over WebCrypto, ECDSA
 * P-256 keys, SHA-256 signatures) and read back with node:crypto's X509Certificate. Time comes from the injected clock, so issuance, reuse and renewal are
 * tested without waiting.
 *
 * ```ts
 * const ca = new LocalCa({ clock }, { dir: join(dataDir, 'tls'), zone: 'nyud.net' });
 * const m = await ca.ensure();        // creates or reuses; m.certPem/m.keyPem for the listener
 * ca.renewAt(m);                      // clock time at which to call ensure() again
 * ```
 */
import { X509Certificate, randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createSecureContext } from 'node:tls';
import {
  issueCert,
  loadCa,
  makeCa,
  systemClock,
  type CertificateAuthority,
  type Clock,
} from '@coral/runtime';
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
  /** The leaf followed by the CA certificate. */
  cert: 'local-cert.pem',
  key: 'local-key.pem',
} as const;

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
    const caCert = new X509Certificate(ca.cert);
    if (Date.parse(caCert.validTo) <= now) {
      throw new TlsError(
        `the local CA ${this.path('caCert')} expired on ${caCert.validTo}: ` +
          `remove ${this.#dir} to create a new one (clients must trust the new one)`,
      );
    }
    let leaf = createdCa ? undefined : await this.#readLeaf(caCert, now);
    const issuedLeaf = leaf === undefined;
    leaf ??= await this.#issueLeaf(ca, now);
    return {
      certPem: leaf.certPem,
      keyPem: leaf.keyPem,
      certPath: this.path('cert'),
      keyPath: this.path('key'),
      caPath: this.path('caCert'),
      caPem: ca.cert,
      caSpkiSha256: ca.spkiSha256,
      notBefore: Date.parse(leaf.cert.validFrom),
      notAfter: Date.parse(leaf.cert.validTo),
      createdCa,
      issuedLeaf,
    };
  }

  async #readCa(): Promise<CertificateAuthority | undefined> {
    const cert = await readOptional(this.path('caCert'));
    const key = await readOptional(this.path('caKey'));
    if (cert === undefined && key === undefined) return undefined;
    if (cert === undefined || key === undefined) {
      throw new TlsError(
        `the local CA in ${this.#dir} is incomplete (${LOCAL_CA_FILES.caCert} and ` +
          `${LOCAL_CA_FILES.caKey} go together): remove the directory to create a new CA`,
      );
    }
    try {
      createSecureContext({ cert, key }); // a key that is not this certificate's fails here
      return loadCa({ cert, key });
    } catch (err) {
      throw new TlsError(`cannot read the local CA in ${this.#dir}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  async #createCa(now: number): Promise<CertificateAuthority> {
    const made = await makeCa({
      name: `Coral local CA for ${this.#zone} ${randomBytes(4).toString('hex')}`,
      notBefore: new Date(now - CLOCK_SKEW_MS),
      notAfter: new Date(now + this.#caLifetimeMs),
    });
    const ca = { ...made, cert: withNewline(made.cert), key: withNewline(made.key) };
    await writePrivate(this.path('caKey'), ca.key);
    await writePublic(this.path('caCert'), ca.cert);
    return ca;
  }

  /** The leaf on disk when it is good for this zone, this CA and now; else undefined. */
  async #readLeaf(
    ca: X509Certificate,
    now: number,
  ): Promise<{ cert: X509Certificate; certPem: string; keyPem: string } | undefined> {
    const certPem = await readOptional(this.path('cert'));
    const keyPem = await readOptional(this.path('key'));
    if (certPem === undefined || keyPem === undefined) return undefined;
    try {
      const cert = new X509Certificate(certPem);
      createSecureContext({ cert: certPem, key: keyPem }); // throws when the key does not match
      const names = dnsNames(cert);
      const fresh =
        Date.parse(cert.validFrom) <= now &&
        now < Date.parse(cert.validTo) - this.#renewBeforeMs &&
        names.includes(`*.${this.#zone}`) &&
        names.includes(this.#zone) &&
        cert.checkIssued(ca) &&
        cert.verify(ca.publicKey);
      return fresh ? { cert, certPem, keyPem } : undefined;
    } catch {
      return undefined; // unreadable: issue a new one
    }
  }

  async #issueLeaf(
    ca: CertificateAuthority,
    now: number,
  ): Promise<{ cert: X509Certificate; certPem: string; keyPem: string }> {
    const issued = await issueCert(ca, {
      dnsNames: [`*.${this.#zone}`, this.#zone],
      notBefore: new Date(now - CLOCK_SKEW_MS),
      notAfter: new Date(now + this.#leafLifetimeMs),
    });
    // Leaf then CA: a client that pins the CA by its SPKI hash (Chromium's
    // --ignore-certificate-errors-spki-list) only sees it when the server sends it.
    const certPem = withNewline(issued.chain);
    const keyPem = withNewline(issued.key);
    // Key first: a crash between the two writes leaves a pair that does not match, which the next
    // start detects (createSecureContext) and reissues.
    await writePrivate(this.path('key'), keyPem);
    await writePublic(this.path('cert'), certPem);
    return { cert: new X509Certificate(certPem), certPem, keyPem };
  }
}

/** The DNS names of a certificate's subjectAltName (lowercase). */
export function dnsNames(cert: X509Certificate): string[] {
  return (cert.subjectAltName ?? '')
    .split(/,\s*/)
    .filter((n) => n.startsWith('DNS:'))
    .map((n) => n.slice(4).toLowerCase());
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
