/**
 * The seam between the proxy and the origin connector: SmartConnect (src/connect) with the
 * address policy (loopback/private/link-local origins refused unless allowed), the hosts map and
 * the negative cache of connect failures, handed to undici as its `connect`.
 */
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
  return { connect: connector.undiciConnect(), connector, close() {} };
}
