/**
 * The cache lookup of a routed GET or HEAD: the stored variants of its URL (from the hot cache
 * when they are all there, else from the store), `decide` (../cache/decide.ts), and the action:
 * serve, serve and refresh in the background, join a fetch in flight, fetch, or refuse.
 */
import { decide } from '../cache/decide.js';
import type { Fetcher } from '../fetch/fetcher.js';
import { serveEntry } from '../serve/entry.js';
import type { StoredMeta } from '../store/types.js';
import type { ProxyCore, RequestCtx } from '../kit/core.js';

/** Stored variants of the request's URL; no I/O when every one of them is hot. */
async function storedVariants(core: ProxyCore, ctx: RequestCtx): Promise<StoredMeta[]> {
  if (!core.store.has(ctx.primary)) return [];
  const keys = core.store.variantKeys(ctx.primary);
  const hot: StoredMeta[] = [];
  for (const k of keys) {
    const e = core.hot.get(k);
    if (!e) return core.store.variants(ctx.primary);
    hot.push(e.meta);
  }
  return hot;
}

export async function lookup(core: ProxyCore, fetcher: Fetcher, ctx: RequestCtx): Promise<void> {
  const variants = await storedVariants(core, ctx);
  const d = decide(ctx.cache, variants, core.clock.now(), core.policy);
  if (d.kind === 'hit') {
    const params = ['hit', `ttl=${d.ttl}`];
    if (d.refresh) {
      params.push('detail=stale-while-revalidate');
      // One background refresh (a GET: a HEAD's answer could not replace the body); a second
      // stale hit meanwhile does not start another.
      if (ctx.method === 'GET' && !fetcher.inflight(ctx.primary)) {
        fetcher.start(ctx, { fwd: 'stale', stale: d.meta, peers: false, register: true });
      }
    }
    if (await serveEntry(core, ctx, d.meta, params)) return;
    // Its body is gone (removed under us, or a damaged file): drop it and fetch.
    await core.store.delete(d.meta.key);
    return fetcher.fetchAndServe(ctx, { fwd: 'uri-miss', peers: false, register: false });
  }
  const inflight = fetcher.inflight(ctx.primary);
  if (d.kind === 'refuse') {
    if (d.join && inflight) return fetcher.join(ctx, inflight, 'refuse');
    return fetcher.refuse(ctx, d.reason);
  }
  const plan = { fwd: d.fwd, stale: d.stale, peers: d.peers, register: d.register };
  if (d.join && inflight) return fetcher.join(ctx, inflight, plan);
  return fetcher.fetchAndServe(ctx, plan);
}
