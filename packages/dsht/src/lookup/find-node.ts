/**
 * The walks every operation starts from: iterative FIND_NODE (closest-first Kademlia, used by join,
 * bucket refresh and the cluster module) and the setup of a get or put walk in one level (Coral's
 * halving walk, continuing from where the previous, more local level stopped).
 */
import { ALPHA, WALK_CONTACTS } from '../constants.js';
import type { Contact } from '../contact.js';
import type { NodeContext } from '../context.js';
import type { Id } from '../id/id.js';
import { lookup, type LookupOptions, type Visit } from './lookup.js';

export interface FindNodeOptions {
  level?: number;
  signal?: AbortSignal;
  /** The closest this-many live candidates must have answered. Default alpha. */
  termination?: number;
  /** Where to start instead of the table's closest contacts. */
  seeds?: Contact[];
  /**
   * Contacts asked of each peer. Default the walks' count (`walkContacts`, 8): enough for a lookup
   * to converge (BEP 5 answers 8), and each answer is a fraction of k's bytes and work. A survey of
   * the fleet (member discovery, cluster exploration) asks k.
   */
  count?: number;
}

/** Iterative FIND_NODE in one level; resolves with the contacts that answered, closest first. */
export async function findNode(
  ctx: NodeContext,
  target: Id,
  opts: FindNodeOptions = {},
): Promise<Contact[]> {
  const level = opts.level ?? 0;
  const table = ctx.table(level);
  const count = opts.count ?? ctx.options.walkContacts ?? WALK_CONTACTS;
  let visited: Visit<null>[] = [];
  for await (const e of lookup<null>({
    target,
    level,
    selfId: ctx.id,
    seeds: opts.seeds ?? table.closest(target, table.k),
    alpha: ctx.options.alpha ?? ALPHA,
    termination: opts.termination,
    halving: false,
    signal: opts.signal,
    query: async (c, signal) => {
      const r = await ctx.query(c, { type: 'FIND_NODE', level, target, count }, signal);
      return { contacts: r.body.type === 'NODES' ? r.body.contacts : [], result: null };
    },
  })) {
    if (e.type === 'FINISHED') visited = e.visited;
  }
  return visited.map((v) => v.contact);
}

/**
 * What a get or put walk toward `key` in one level starts from: that level's closest known
 * contacts, and the closest node the previous (more local) level reached, asked first.
 */
export function levelWalk(
  ctx: NodeContext,
  key: Uint8Array,
  level: number,
  startFrom: Contact | undefined,
  signal?: AbortSignal,
): Omit<LookupOptions<unknown>, 'query'> {
  const table = ctx.table(level);
  return {
    target: key,
    level,
    selfId: ctx.id,
    seeds: table.closest(key, table.k),
    startFrom,
    alpha: ctx.options.alpha ?? ALPHA,
    halving: ctx.options.halving ?? true,
    signal,
  };
}
