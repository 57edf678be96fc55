/**
 * The answer to a request for a site that opted out (../site-control/opt-outs.ts): a 307 to the origin's own URL
 * (same scheme, host, port, path and query), never stored by anyone (`Cache-Control: private,
 * no-store`) and never rewritten to a Coralized name.
 */
import { CACHE_NAME } from '../constants.js';
import type { ProxyCore, RequestCtx } from '../kit/core.js';
import { cacheStatus } from '../kit/headers.js';

export function sendHome(core: ProxyCore, ctx: RequestCtx): void {
  const { res } = ctx;
  const href = ctx.url.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  const body = Buffer.from(
    `<!doctype html>\n<html><head><title>307 Temporary Redirect</title></head>` +
      `<body><p>This site asked to be reached directly: <a href="${href}">${href}</a></p></body></html>\n`,
  );
  res.writeHead(307, {
    location: ctx.url,
    'cache-control': 'private, no-store',
    'content-type': 'text/html; charset=utf-8',
    'content-length': String(body.length),
    via: core.via,
    'cache-status': cacheStatus(CACHE_NAME, ['fwd=bypass', 'detail=redirect-home']),
  });
  res.end(ctx.method === 'HEAD' ? undefined : body);
  core.metrics?.request('redirect', ctx.method, 307, res);
  core.metrics?.optOut?.('redirected');
}
