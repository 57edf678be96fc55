/**
 * Site (accelerator) mode's other methods: forwarded to the site's origin uncached, the request
 * body streamed; a 2xx/3xx answer invalidates every stored variant of the target URI and of a
 * same-host Location / Content-Location (RFC 9111 §4.4). Set-Cookie passes to the client.
 */
import { CACHE_NAME } from '../constants.js';
import { originError } from '../fetch/origin.js';
import { forwardHeaders } from '../fetch/request-headers.js';
import { urlKey } from '../mapping/coral-name.js';
import { cookiesForClient } from '../mapping/links.js';
import { answerBadBody, awaitsBody } from '../request/client-error.js';
import { splitHostHeader } from '../mapping/host.js';
import type { UpstreamResponse } from '../origin/upstream.js';
import type { ProxyCore, RequestCtx } from '../kit/core.js';
import { cacheStatus, flatten, toRecord } from '../kit/headers.js';
import { pipeToResponse, sendError } from '../kit/respond.js';

/** Drop every stored variant of a URL (hex urlKey); resolves to how many were dropped. */
export async function invalidate(core: ProxyCore, primary: string): Promise<number> {
  let n = 0;
  for (const m of await core.store.variants(primary)) {
    core.hot.delete(m.key);
    if (await core.store.delete(m.key)) n++;
  }
  return n;
}

export async function forwardUnsafe(core: ProxyCore, ctx: RequestCtx): Promise<void> {
  const headers = forwardHeaders(core, ctx);
  const cl = ctx.reqHeaders['content-length'];
  if (cl !== undefined) headers['content-length'] = cl;
  const streamed = ctx.method !== 'OPTIONS' && ctx.method !== 'DELETE';
  const bad = streamed ? awaitsBody(ctx.req) : undefined;
  if (bad) return answerBadBody(ctx.res, bad, core.via);
  let res: UpstreamResponse;
  try {
    res = await core.origin.request({
      url: ctx.url,
      method: ctx.method,
      headers,
      ...(streamed ? { body: ctx.req } : {}),
    });
  } catch (e) {
    // Already answered: the request's own body failed to parse (../request/client-error.ts).
    if (ctx.res.writableEnded) return;
    return sendError(ctx.res, ctx.method, originError(e), core.via, core.metrics);
  }
  if (ctx.res.writableEnded) {
    res.body.on('error', () => {});
    res.body.destroy();
    return;
  }
  if (res.status >= 200 && res.status < 400) {
    await invalidate(core, ctx.primary);
    for (const h of ['location', 'content-location']) {
      const v = res.headers[h];
      if (typeof v !== 'string') continue;
      try {
        const target = new URL(v, ctx.url);
        if (target.host === new URL(ctx.url).host) {
          await invalidate(core, Buffer.from(urlKey(target.href)).toString('hex'));
        }
      } catch {
        /* not a URL */
      }
    }
  }
  const out = flatten(toRecord(res.headers, new Set(['set-cookie', 'coral-control'])));
  const name = splitHostHeader(ctx.host).name;
  for (const c of cookiesForClient(res.headers['set-cookie'], name, core.zones) ?? []) {
    out.push('set-cookie', c);
  }
  out.push(
    'via',
    core.via,
    'cache-status',
    cacheStatus(CACHE_NAME, ['fwd=method', `fwd-status=${res.status}`]),
  );
  ctx.res.writeHead(res.status, out);
  core.metrics?.request('bypass', ctx.method, res.status, ctx.res);
  pipeToResponse(res.body, ctx.res);
}
