/**
 * @coral/node/fleet — run a local fleet of Coral node processes on loopback addresses, and the
 * sample origin, for demos, end-to-end tests and benchmarks.
 *
 * ```ts
 * const origin = new SampleOrigin({ host: '127.0.0.1' });
 * await origin.listen();
 * const fleet = await new Fleet({ nodes: 6, dataRoot: '/tmp/coral-fleet', env: {
 *   CORAL_ALLOW_PRIVATE_ORIGINS: 'true', CORAL_HOSTS: 'www.origin.test=127.0.0.1' } }).start();
 * // ... fleet.nodes[0].ip, .proxyPort, .dnsPort, .admin
 * await fleet.stop();
 * ```
 */
export { Fleet, stopProcess, CLI_PATH, type FleetNode, type FleetOptions } from './launcher.js';
export { SampleOrigin, objectBody, type SampleOriginOptions } from './origin.js';
export { resolveThrough, fetchVia, type FetchResult } from './client.js';
