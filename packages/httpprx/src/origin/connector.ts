/**
 * The seam between the proxy and the origin connector: SmartConnect (src/connect) with the
 * address policy (loopback/private/link-local origins refused unless allowed), the hosts map and
 * the negative cache of connect failures, handed to undici as its `connect`.
 */
import { readFileSync } from 'node:fs';
import tls from 'node:tls';
import type { Clock } from '@coral/runtime';
import { SmartConnector } from '../connect/index.js';
import type { Dial, Resolver, UndiciConnector } from '../connect/index.js';

export type UndiciConnect = UndiciConnector;

export interface OriginConnectorOptions {
  allowPrivateOrigins: boolean;
  /** `host:port` origins allowed on private addresses anyway (the configured site origins). */
  privateAllowed?: readonly string[];
  hosts?: Record<string, string[]>;
  /** Bound on resolving and connecting (ms, injected clock). */
  timeoutMs: number;
  /** Connect failures are remembered this long (ms); 0 = off. */
  negativeTtlMs: number;
  /**
   * Extra CAs (PEM) trusted for https origins, on top of Node's root store and the system's CA
   * bundle (private CAs, test CAs).
   */
  originCa?: readonly string[];
  /**
   * The system's CA bundle (PEM) trusted as well: default {@link systemCaBundle}'s; `null` for
   * none (Node's root store and `originCa` only).
   */
  systemCa?: string | null;
}

/**
 * Where the system's CA bundle lives: `SSL_CERT_FILE` when set (as OpenSSL and Go honour it), else
 * the first of the distributions' usual paths (the list Go's crypto/x509 searches on Linux).
 */
export const SYSTEM_CA_FILES: readonly string[] = [
  '/etc/ssl/certs/ca-certificates.crt', // Debian, Ubuntu, Alpine, Arch
  '/etc/pki/tls/certs/ca-bundle.crt', // Fedora, RHEL 6
  '/etc/ssl/ca-bundle.pem', // openSUSE
  '/etc/pki/tls/cacert.pem', // OpenELEC
  '/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem', // CentOS, RHEL 7
  '/etc/ssl/cert.pem', // Alpine, macOS
];

/** The system's CA bundle as PEM text, or undefined when the machine has none (a slim image). */
export function systemCaBundle(
  env: Readonly<Record<string, string | undefined>> = process.env,
  read: (path: string) => string = (path) => readFileSync(path, 'utf8'),
): string | undefined {
  const paths = env['SSL_CERT_FILE'] ? [env['SSL_CERT_FILE']] : SYSTEM_CA_FILES;
  for (const path of paths) {
    try {
      const pem = read(path);
      if (pem.includes('-----BEGIN CERTIFICATE-----')) return pem;
    } catch {
      // absent or unreadable: try the next place
    }
  }
  return undefined;
}

/**
 * TLS options for https origins: certificates are always verified (`rejectUnauthorized`), against
 * Node's root store, the system's CA bundle (so a CA the operator installed the distribution's way
 * counts, as for curl) and `originCa`. One secure context is built here for every connection
 * (a `ca` list per connection would parse hundreds of certificates each time). SNI (the origin's
 * name) and ALPN `http/1.1` are set per connection by SmartConnect's `undiciConnect`.
 * `systemCa`: the bundle as {@link systemCaBundle} read it (null or undefined: none).
 */
export function originTlsOptions(
  originCa: readonly string[] | undefined,
  systemCa: string | null | undefined,
): tls.ConnectionOptions {
  const extra = [...(systemCa ? [systemCa] : []), ...(originCa ?? [])];
  if (extra.length === 0) return { rejectUnauthorized: true };
  // An explicit `ca` replaces the default store, so the roots are listed with the extra CAs.
  const secureContext = tls.createSecureContext({ ca: [...tls.rootCertificates, ...extra] });
  return { rejectUnauthorized: true, secureContext };
}

export function createOriginConnector(
  components: { clock: Clock; resolver?: Resolver; dial?: Dial },
  options: OriginConnectorOptions,
): { connect: UndiciConnect; connector: SmartConnector; close(): void } {
  const connector = new SmartConnector(
    {
      clock: components.clock,
      ...(components.resolver ? { resolver: components.resolver } : {}),
      ...(components.dial ? { dial: components.dial } : {}),
    },
    {
      allowPrivate: options.allowPrivateOrigins,
      ...(options.privateAllowed ? { privateAllowed: options.privateAllowed } : {}),
      timeoutMs: options.timeoutMs,
      negativeTtlMs: options.negativeTtlMs,
      ...(options.hosts ? { hosts: options.hosts } : {}),
    },
  );
  return {
    connect: connector.undiciConnect({
      tls: originTlsOptions(
        options.originCa,
        options.systemCa === undefined ? systemCaBundle() : options.systemCa,
      ),
    }),
    connector,
    close() {},
  };
}
