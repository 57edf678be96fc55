/**
 * @coral/connguard — connection budgets for every listener of a node: per-client and
 * per-network caps, idle, keep-alive, header and body timeouts that a trickle of bytes does not
 * extend, and a node-wide ceiling derived from the descriptor limit, with the longest-waiting
 * connection shed first when it is reached. Pure accounting on an injected clock (`budget.ts`),
 * bound to `net.Server` / `http.Server` by `bind/` (docs/connguard.md).
 *
 * ```ts
 * const { ceiling } = connectionCeiling(descriptorLimit);
 * const budget = new ConnectionBudget({ events: metrics }, { ceiling });
 * const server = http.createServer(handler);
 * guardHttpServer(server, budget.listener('http', { perAddress: 128 }), { logger });
 * server.listen(8090);
 * ```
 */
export {
  ConnectionBudget,
  GuardedConnection,
  ListenerBudget,
  CLOSE_REASONS,
  REFUSAL_REASONS,
  type BudgetEvents,
  type BudgetStats,
  type CloseReason,
  type ConnectionHooks,
  type ListenerCounters,
  type ListenerLimits,
  type ListenerStats,
  type RefusalReason,
  type ResolvedLimits,
} from './budget.js';
export { clientKeys, type ClientKeys, type FamilyBits } from './address.js';
export { connectionCeiling, type Ceiling, type CeilingOptions } from './ceiling.js';
export * from './constants.js';
export {
  ConnGuardError,
  CONNGUARD_ERR_DUPLICATE_LISTENER,
  CONNGUARD_ERR_OPTIONS,
  CONNGUARD_ERROR_CODES,
} from './errors.js';
export {
  ACCEPT_ERROR_LOG_INTERVAL_MS,
  guardServer,
  type GuardComponents,
  type GuardedServer,
  type GuardLogger,
} from './bind/net-server.js';
export { guardHttpServer } from './bind/http-server.js';
