/**
 * The certificate of the proxy's TLS listener: the PEM files of the configuration (`tls.cert`,
 * `tls.key`), or, when none are configured, the local development CA's wildcard certificate
 * (local-ca.ts). `load()` reads them at start, `reload()` again on SIGHUP (files replaced by an
 * ACME client), and the local CA's leaf is reissued on the injected clock before it expires;
 * each new certificate is handed to `onChange`, which swaps it into the running listener.
 */
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import { createSecureContext } from 'node:tls';
import { systemClock, type Clock, type TimerHandle } from '@coral/runtime';
import type { Logger } from 'pino';
import { TlsError } from '../errors.js';
import { LocalCa, dnsNames, type LocalCaMaterial } from './local-ca.js';

/** Longest single wait of the renewal timer (it re-checks, so long waits stay within timer range). */
export const RENEW_CHECK_MAX_MS = 3_600_000;
/** After a failed renewal, try again this much later. */
export const RENEW_RETRY_MS = 60_000;

export interface TlsMaterial {
  /** Certificate chain (leaf first) and key, PEM. */
  certPem: string;
  keyPem: string;
  certPath: string;
  keyPath: string;
  source: 'files' | 'local-ca';
  /** The leaf's validity, clock ms. */
  notBefore: number;
  notAfter: number;
  /** The leaf's DNS names. */
  names: string[];
  /** With the local CA: its certificate and SPKI hash, for clients to trust. */
  localCa?: Pick<LocalCaMaterial, 'caPath' | 'caPem' | 'caSpkiSha256'>;
}

export interface NodeCertificatesOptions {
  zone: string;
  dataDir: string;
  cert?: string | undefined;
  key?: string | undefined;
  localCa: boolean;
}

export interface NodeCertificatesComponents {
  clock?: Clock;
  logger?: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** Called with each certificate that replaces the current one (reload or renewal). */
  onChange?: (m: TlsMaterial) => void | Promise<void>;
  /** The local CA (default: one in `<dataDir>/tls`). */
  localCa?: LocalCa;
}

export class NodeCertificates {
  readonly #clock: Clock;
  readonly #logger: NodeCertificatesComponents['logger'];
  readonly #onChange: NodeCertificatesComponents['onChange'];
  readonly #options: NodeCertificatesOptions;
  readonly #ca: LocalCa | undefined;
  #current: TlsMaterial | undefined;
  #timer: TimerHandle | undefined;
  #stopped = false;

  constructor(components: NodeCertificatesComponents, options: NodeCertificatesOptions) {
    this.#clock = components.clock ?? systemClock;
    this.#logger = components.logger;
    this.#onChange = components.onChange;
    this.#options = options;
    this.#ca =
      options.cert === undefined && options.localCa
        ? (components.localCa ??
          new LocalCa(
            { clock: this.#clock },
            { dir: resolvePath(options.dataDir, 'tls'), zone: options.zone },
          ))
        : undefined;
  }

  get current(): TlsMaterial | undefined {
    return this.#current;
  }

  /** The certificate to start with; undefined when none is configured and the local CA is off. */
  async load(): Promise<TlsMaterial | undefined> {
    this.#current = await this.#read();
    if (this.#current) this.#checkNames(this.#current);
    this.#schedule();
    return this.#current;
  }

  /**
   * Read the certificate again (SIGHUP). A file that cannot be used is an error and the current
   * certificate stays; a good one is handed to `onChange`.
   */
  async reload(): Promise<TlsMaterial | undefined> {
    const next = await this.#read();
    if (!next) return undefined;
    this.#checkNames(next);
    await this.#replace(next);
    return next;
  }

  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
  }

  async #read(): Promise<TlsMaterial | undefined> {
    const o = this.#options;
    if (o.cert !== undefined && o.key !== undefined) return readPair(o.cert, o.key);
    if (!this.#ca) return undefined;
    const m = await this.#ca.ensure();
    if (m.createdCa || m.issuedLeaf) {
      this.#logger?.info(
        { ca: m.caPath, cert: m.certPath, createdCa: m.createdCa, notAfter: iso(m.notAfter) },
        m.createdCa ? 'created a local development CA' : 'issued a local wildcard certificate',
      );
    }
    return {
      certPem: m.certPem,
      keyPem: m.keyPem,
      certPath: m.certPath,
      keyPath: m.keyPath,
      source: 'local-ca',
      notBefore: m.notBefore,
      notAfter: m.notAfter,
      names: [`*.${o.zone}`, o.zone],
      localCa: { caPath: m.caPath, caPem: m.caPem, caSpkiSha256: m.caSpkiSha256 },
    };
  }

  async #replace(next: TlsMaterial): Promise<void> {
    this.#current = next;
    await this.#onChange?.(next);
  }

  /** A configured certificate that does not cover the zone is served anyway, with a warning. */
  #checkNames(m: TlsMaterial): void {
    const zone = this.#options.zone;
    const missing = [`*.${zone}`, zone].filter((n) => !m.names.includes(n));
    if (missing.length > 0) {
      this.#logger?.warn(
        { cert: m.certPath, names: m.names, missing },
        `the TLS certificate does not cover ${missing.join(' and ')}: clients will refuse those names`,
      );
    }
    if (m.notAfter <= this.#clock.now()) {
      this.#logger?.warn(
        { cert: m.certPath, notAfter: iso(m.notAfter) },
        'the TLS certificate has expired',
      );
    }
  }

  /** With the local CA: wake up when the leaf is due and reissue it. */
  #schedule(): void {
    this.#timer?.cancel();
    if (this.#stopped || !this.#ca || !this.#current) return;
    const due = this.#ca.renewAt(this.#current);
    const wait = Math.min(Math.max(0, due - this.#clock.now()), RENEW_CHECK_MAX_MS);
    this.#timer = this.#clock.setTimeout(() => void this.#renewIfDue(), wait);
  }

  async #renewIfDue(): Promise<void> {
    if (this.#stopped || !this.#ca || !this.#current) return;
    if (this.#clock.now() < this.#ca.renewAt(this.#current)) {
      this.#schedule();
      return;
    }
    try {
      const next = await this.#read();
      if (next && !this.#stopped) await this.#replace(next);
      this.#schedule();
    } catch (err) {
      this.#logger?.error({ err }, 'renewing the local wildcard certificate failed; retrying');
      if (!this.#stopped) {
        this.#timer = this.#clock.setTimeout(() => void this.#renewIfDue(), RENEW_RETRY_MS);
      }
    }
  }
}

/** Read a configured certificate chain and key; throws {@link TlsError} naming the bad file. */
export async function readPair(certPath: string, keyPath: string): Promise<TlsMaterial> {
  const read = async (path: string, what: string) => {
    try {
      return await readFile(path, 'utf8');
    } catch (err) {
      throw new TlsError(`cannot read ${what} ${path}: ${(err as Error).message}`, { cause: err });
    }
  };
  const [certPem, keyPem] = await Promise.all([
    read(certPath, 'tls.cert'),
    read(keyPath, 'tls.key'),
  ]);
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(certPem);
  } catch (err) {
    throw new TlsError(`tls.cert ${certPath} holds no PEM certificate: ${(err as Error).message}`, {
      cause: err,
    });
  }
  try {
    createSecureContext({ cert: certPem, key: keyPem });
  } catch (err) {
    throw new TlsError(
      `tls.key ${keyPath} cannot be used with tls.cert ${certPath}: ${(err as Error).message}`,
      { cause: err },
    );
  }
  return {
    certPem,
    keyPem,
    certPath,
    keyPath,
    source: 'files',
    notBefore: Date.parse(leaf.validFrom),
    notAfter: Date.parse(leaf.validTo),
    names: dnsNames(leaf),
  };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
