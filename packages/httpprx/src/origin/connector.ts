/**
 * The seam between the proxy and the origin connector: SmartConnect (src/connect) with the
 * address policy (loopback/private/link-local origins refused unless allowed), the hosts map and
 * the negative cache of connect failures, handed to undici as its `connect`.
 */
import tls from 'node:tls';
import type { Clock } from '@coral/testkit';
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
   * Extra CAs (PEM) trusted for https origins, on top of Node's root store (private CAs, test
   * CAs). Absent: the root store alone (plus `NODE_EXTRA_CA_CERTS`).
   */
  originCa?: readonly string[];
}

/**
 * TLS options for https origins: certificates are always verified (`rejectUnauthorized`), against
 * Node's root store plus `originCa`. SNI (the origin's name) and ALPN `http/1.1` are set per
 * connection by SmartConnect's `undiciConnect`.
 */
export function originTlsOptions(originCa: readonly string[] | undefined): tls.ConnectionOptions {
  if (originCa === undefined || originCa.length === 0) return { rejectUnauthorized: true };
  // An explicit `ca` replaces the default store, so the roots are listed with the extra CAs.
  return { rejectUnauthorized: true, ca: [...tls.rootCertificates, ...originCa] };
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
    connect: connector.undiciConnect({ tls: originTlsOptions(options.originCa) }),
    connector,
    close() {},
  };
}
