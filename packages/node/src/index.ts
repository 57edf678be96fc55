/**
 * @coral/node — the Coral process: configuration, composition of the DSHT, the DNS redirector and
 * the caching proxy, admin API, metrics, logs and the `coral-node` CLI. Most users run the binary
 * (`coral-node start`, see docs/configuration.md); embedding a node looks like this:
 *
 * ```ts
 * import { CoralNode, loadConfig, realServices } from '@coral/node';
 * const config = loadConfig({ env: process.env });      // throws ConfigError listing every problem
 * const node = await CoralNode.start(config, { services: realServices });
 * process.stdout.write(node.banner());                   // where it listens + an example fetch
 * const res = await node.admin.handle({ method: 'GET', url: '/v1/node', headers: {}, remoteAddress: '127.0.0.1' });
 * await node.stop();                                     // DNS, proxy (in-flight finish), DSHT, admin
 * ```
 *
 * The fleet launcher and sample origin used by tests and benchmarks are in `@coral/node/fleet`.
 */
export * from './config/index.js';
export * from './errors.js';
export { VERSION } from './version.js';
export { NODE_RUNTIME_ENV } from './runtime-env.js';
export {
  HeapTrimmer,
  loadMallocTrim,
  startHeapTrim,
  type HeapTrimmerOptions,
  type MallocTrim,
} from './runtime/heap-trim.js';
export { CoralNode, rendezvousRank, type CoralNodeComponents } from './compose/node.js';
export type { ServiceFactory, DshtPort, ProxyPort, DnsPort, ServiceArgs } from './compose/ports.js';
export { runNode } from './compose/run.js';
export { realServices } from './compose/services.js';
export {
  DshtDirectory,
  toNodeInfo,
  type DshtDirectoryComponents,
  type DshtDirectoryOptions,
  type DshtMembers,
} from './adapters/node-directory.js';
export {
  DshtContentIndex,
  DEFAULT_CLAIM_RANK_CAP,
  DEFAULT_CLAIM_STEP_MS,
  DEFAULT_CLAIM_SETTLE_MAX_MS,
  DEFAULT_CLAIM_TTL_SECONDS,
  DEFAULT_WITHDRAW_TTL_SECONDS,
  type DshtContentIndexComponents,
  type DshtContentIndexOptions,
  type DshtValueStore,
} from './adapters/content-index.js';
export {
  encodeHolder,
  decodeHolder,
  MAX_HOLDER_RECORD_BYTES,
  type HolderRecord,
} from './adapters/holder-codec.js';
export {
  AdminApi,
  type AdminRequest,
  type AdminResponse,
  type AdminApiOptions,
} from './admin/server.js';
export type { AdminBackend, LocalValueView, NodeInfoView, ReadinessView } from './admin/backend.js';
export { isLoopback, checkAccess } from './admin/access.js';
export { parseKey, viewValue } from './admin/keys.js';
export { AdminClient, DEFAULT_ADMIN_URL, type AdminClientOptions } from './cli/client.js';
export {
  run,
  EXIT_OK,
  EXIT_FAILURE,
  EXIT_CONFIG,
  type CliIo,
  type CliDeps,
} from './cli/program.js';
export {
  CoralMetrics,
  type ProxyMetricsSink,
  type DnsMetricsSink,
  type DshtMetricsSink,
  type IndexMetricsSink,
  type StorageMetricsSink,
} from './metrics/metrics.js';
export { createLogger, componentLogger, type Logger } from './logging/logger.js';
