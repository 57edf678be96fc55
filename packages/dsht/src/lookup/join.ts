/**
 * Joining: a self-lookup in every level, then a refresh lookup in each bucket that is not full,
 * from the farthest down to the bucket of the k-th closest node the self-lookup found. The deeper
 * buckets (nearer than that node) hold nodes closer to this one than the k-th closest, which the
 * self-lookup — ending only when the k closest had all answered — has already met: a refresh
 * would find no one new there (Kademlia refreshes every bucket below the nearest neighbour's).
 */
import type { NodeContext } from '../context.js';
import { NotRunningError } from '../errors.js';
import { randomIdInBucket, type Id } from '../id/id.js';
import { findNode, type FindNodeOptions } from './find-node.js';

export async function join(ctx: NodeContext, opts: { signal?: AbortSignal } = {}): Promise<void> {
  const id = ctx.id;
  for (let level = 0; level < ctx.levels; level++) {
    const table = ctx.table(level);
    if (table.size === 0) continue;
    const found = await walk(ctx, id, {
      level,
      signal: opts.signal,
      termination: table.k,
      count: table.k,
    });
    if (!(ctx.options.joinRefresh ?? true)) continue;
    const nearest = table.closest(id, 1)[0];
    if (!nearest) continue;
    const kth = found[table.k - 1];
    const deepest = Math.min(
      table.bucketIndex(nearest.id),
      kth ? table.bucketIndex(kth.id) + 1 : Infinity,
    );
    for (let b = 0; b < deepest; b++) {
      if ((table.shape()[b] ?? 0) >= table.k) continue;
      table.touchBucket(b);
      await walk(ctx, randomIdInBucket(id, b, ctx.random), { level, signal: opts.signal });
    }
  }
}

/** A FIND_NODE of the join; a node stopped meanwhile ends the join with NotRunningError. */
function walk(ctx: NodeContext, target: Id, opts: FindNodeOptions) {
  if (!ctx.running) throw new NotRunningError();
  return findNode(ctx, target, opts);
}
