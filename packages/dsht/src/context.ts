/**
 * What the jobs of one DSHT node share: the walks (find-node, get, put), the locality hints and the
 * periodic maintenance each take this instead of the whole `Dsht`. `Dsht` builds it once; the
 * members that only exist while the node runs (`id`, `rpc`, the tables) throw `NotRunningError`
 * before `start()`, exactly as the public getters do.
 */
import type { Clock, Random } from '@coral/runtime';
import type { Contact } from './contact.js';
import type { Id } from './id/id.js';
import type { RoutingTable } from './routing-table/routing-table.js';
import type { DshtMetrics, Logger, Rpc, RpcReply } from './rpc/rpc.js';
import type { ValueStore } from './store/value-store.js';
import type { DshtOptions } from './types.js';
import type { Request } from './wire/messages.js';

export interface NodeContext {
  readonly clock: Clock;
  readonly random: Random;
  readonly options: DshtOptions;
  readonly logger: Logger;
  readonly metrics: DshtMetrics | undefined;
  readonly store: ValueStore;
  /** Cluster levels this node runs. */
  readonly levels: number;
  readonly id: Id;
  /** This node's contact, with its current cluster adverts. */
  readonly contact: Contact;
  /** This node's contact as made at start (id, address, service ports), without adverts. */
  readonly plainContact: Contact;
  readonly rpc: Rpc;
  readonly running: boolean;
  /**
   * The routing table of `level`, a level this node runs (tables are replaced when a level is
   * reset: never keep one across an await).
   */
  table(level: number): RoutingTable;
  /** Every table, level 0 first. */
  tables(): readonly RoutingTable[];
  /** An RPC to a contact; a failure (not an abort) counts against it. */
  query(to: Contact, body: Request, signal?: AbortSignal): Promise<RpcReply>;
}
