/**
 * The seam between the proxy and the origin connector. Until SmartConnect lands this wraps
 * undici's default connector, honouring the hosts map; `createOriginConnector` is the only place
 * that knows which connector is in use.
 */
import { buildConnector } from 'undici';
import type { Clock } from '@coral/testkit';

export type UndiciConnect = buildConnector.connector;

export interface OriginConnectorOptions {
  allowPrivateOrigins: boolean;
  hosts?: Record<string, string[]>;
  timeoutMs: number;
}

export function createOriginConnector(
  _components: { clock: Clock; resolver?: unknown },
  options: OriginConnectorOptions,
): { connect: UndiciConnect; close(): void } {
  const base = buildConnector({ timeout: options.timeoutMs });
  const connect: UndiciConnect = (opts, cb) => {
    const mapped = options.hosts?.[opts.hostname.toLowerCase()]?.[0];
    base(mapped ? { ...opts, hostname: mapped } : opts, cb);
  };
  return { connect, close() {} };
}
