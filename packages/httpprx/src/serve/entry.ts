/**
 * Serving a stored response: Age, Via and Cache-Status added; a client's conditional answered
 * 304, a single Range 206/416; the body from the hot cache, from its file read whole (small
 * objects, which then become hot) or streamed from its file.
 */
import { noteOf } from '@coral/accesslog';
import { CACHE_NAME, SHA256_HEADER } from '../constants.js';
import { currentAge, responseRules } from '../cache/policy.js';
import type { HeaderRecord } from '../cache/policy.js';
import type { ProxyCore, RequestCtx } from '../kit/core.js';
import { cacheStatus, flatten } from '../kit/headers.js';
import { pipeToResponse } from '../kit/respond.js';
import { chooseCoding, codedOf } from '../kit/encoding.js';
import type { Coded } from '../kit/encoding.js';
import { Readable } from 'node:stream';
import { codedBody, codedHeaders } from './coding.js';
import { pipeShared } from '../fairness/pipe.js';
import { MemoryStore } from '../store/memory-store.js';
import type { StoredMeta } from '../store/types.js';
import { clientHeaders } from './client-headers.js';
import { notModified, notModifiedHeaders, rangeFor } from './conditional.js';
import type { HotEntry } from '../hot/hot-cache.js';

/** Same stored body (the hot copy of a record read again from the store)? */
function sameBody(a: StoredMeta, b: StoredMeta): boolean {
  return a.key === b.key && a.sha256 === b.sha256 && a.storedAt === b.storedAt;
}

/** Keep a small body in memory with its header block (and the fast path's eligibility). */
export function makeHot(core: ProxyCore, meta: StoredMeta, body: Buffer): HotEntry | undefined {
  if (meta.size > core.limits.hotObjectMaxBytes) return undefined;
  const r = responseRules(meta.status, meta.headers, core.policy, meta.facts.responseTime);
  const headers = clientHeaders(undefined, meta.headers, core.via);
  headers['content-length'] = String(meta.size);
  if (meta.status === 200) headers['accept-ranges'] = 'bytes';
  const fast =
    meta.vary.length === 0 &&
    meta.headers['location'] === undefined &&
    meta.headers['content-location'] === undefined &&
    // A coded body's fields depend on the client's Accept-Encoding: never the fast path.
    codedOf(meta.headers) === undefined &&
    !r.noCache;
  return core.hot.put(meta, body, { lifetime: r.lifetime, fast, headers: flatten(headers) });
}

/** Is this request one the fast path could answer (../serve/fast-path.ts)? */
export function plainRequest(ctx: RequestCtx): boolean {
  const h = ctx.req.headers;
  return (
    h.range === undefined &&
    h['if-none-match'] === undefined &&
    h['if-modified-since'] === undefined &&
    h['cache-control'] === undefined &&
    h.pragma === undefined &&
    h.authorization === undefined &&
    h.via === undefined &&
    !ctx.peer
  );
}

/**
 * Serve `meta` to `ctx`. `params` are the Cache-Status parameters, `kind` the metrics kind.
 * Resolves false when the body could not be read (the caller drops the entry and fetches).
 */
export async function serveEntry(
  core: ProxyCore,
  ctx: RequestCtx,
  meta: StoredMeta,
  params: string[],
  kind = 'hit',
): Promise<boolean> {
  const { res, reqHeaders } = ctx;
  const now = core.clock.now();
  core.store.touch(meta.key);
  const age = currentAge(meta.facts, now);
  const headers: HeaderRecord = clientHeaders(ctx, meta.headers, core.via);
  headers['age'] = String(age);
  if (ctx.peer) headers[SHA256_HEADER] = meta.sha256;
  const cs = cacheStatus(CACHE_NAME, params);
  headers['cache-status'] = cs;
  // Members get a coded body as stored (its record's size and hash are the coded bytes').
  const coded = ctx.peer ? undefined : codedOf(meta.headers);
  if (coded) return serveCoded(core, ctx, meta, coded, headers, kind);
  if (meta.status === 200 && notModified(reqHeaders, meta.headers, now)) {
    res.writeHead(304, flatten(notModifiedHeaders(headers)));
    res.end();
    core.metrics?.request(kind, ctx.method, 304, ctx.res);
    return true;
  }
  let start = 0;
  let end = meta.size - 1;
  let status = meta.status;
  if (meta.status === 200) {
    const range = rangeFor(reqHeaders, meta.headers, meta.size, now);
    if (range.kind === 'unsatisfiable') {
      res.writeHead(
        416,
        flatten({
          'content-range': `bytes */${meta.size}`,
          via: headers['via']!,
          'cache-status': cs,
          'content-length': '0',
        }),
      );
      res.end();
      core.metrics?.request(kind, ctx.method, 416, ctx.res);
      return true;
    }
    if (range.kind === 'partial') {
      ({ start, end } = range);
      status = 206;
      headers['content-range'] = `bytes ${start}-${end}/${meta.size}`;
    }
    headers['accept-ranges'] = 'bytes';
  }
  headers['content-length'] = String(end - start + 1);
  const whole = start === 0 && end === meta.size - 1;
  let hot = core.hot.get(meta.key);
  if (hot && !sameBody(hot.meta, meta)) hot = undefined;
  // Not a hot object: the body is read from the store (the access log says which medium).
  const note = hot ? undefined : noteOf(ctx.res);
  if (note) note.served = { from: core.store instanceof MemoryStore ? 'memory' : 'disk' };
  if (!hot && meta.size <= core.limits.hotObjectMaxBytes) {
    let body: Buffer;
    try {
      body = await core.store.readBody(meta);
    } catch {
      return false;
    }
    if (body.length !== meta.size) return false;
    hot = makeHot(core, meta, body);
    if (!hot) {
      await served(core, ctx, ctx.method === 'HEAD' ? 0 : end - start + 1);
      res.writeHead(status, flatten(headers));
      res.end(ctx.method === 'HEAD' ? undefined : body.subarray(start, end + 1));
      core.metrics?.request(kind, ctx.method, status, ctx.res);
      return true;
    }
  }
  if (hot) {
    await served(core, ctx, ctx.method === 'HEAD' ? 0 : end - start + 1);
    core.metrics?.request(kind, ctx.method, status, ctx.res);
    if (ctx.req.headers.host !== undefined && plainRequest(ctx) && kind === 'hit') {
      core.hot.addRoute(hot, ctx.req.headers.host, ctx.req.url ?? '', ctx.mode === 'coral');
    }
    res.writeHead(status, flatten(headers));
    res.end(
      ctx.method === 'HEAD' ? undefined : whole ? hot.body : hot.body.subarray(start, end + 1),
    );
    return true;
  }
  if (ctx.method !== 'HEAD' && meta.size > 0 && !(await core.store.verify(meta))) return false;
  core.metrics?.request(kind, ctx.method, status, ctx.res);
  res.writeHead(status, flatten(headers));
  if (ctx.method === 'HEAD' || meta.size === 0) {
    res.end();
    return true;
  }
  const share = core.bandwidth.served;
  const stream = core.store.readStream(meta, start, end);
  if (share.bytesPerSec === 0) {
    void share.take(ctx.domain, end - start + 1); // counted only: at no rate it never waits
    pipeToResponse(stream, res);
  } else {
    pipeShared(stream, res, (n) => share.take(ctx.domain, n));
  }
  return true;
}

/**
 * Serve a stored gzip representation (../kit/encoding.ts) in the coding the client is chosen. A
 * Range is answered from the identity form (RFC 9110 §14.1: a range is of the selected
 * representation, and the identity form is the one whose strong ETag and length the origin gave,
 * so If-Range and Content-Range mean what the client expects); the coded forms carry a weak ETag.
 */
async function serveCoded(
  core: ProxyCore,
  ctx: RequestCtx,
  meta: StoredMeta,
  coded: Coded,
  base: HeaderRecord,
  kind: string,
): Promise<boolean> {
  const { res, reqHeaders } = ctx;
  const now = core.clock.now();
  const range = rangeFor(reqHeaders, meta.headers, coded.length, now);
  const coding = range.kind === 'full' ? chooseCoding(reqHeaders['accept-encoding']) : 'identity';
  const headers = codedHeaders(base, coding);
  headers['accept-ranges'] = 'bytes';
  if (notModified(reqHeaders, headers, now)) {
    res.writeHead(304, flatten(notModifiedHeaders(headers)));
    res.end();
    core.metrics?.request(kind, ctx.method, 304, ctx.res);
    return true;
  }
  if (range.kind === 'unsatisfiable') {
    res.writeHead(
      416,
      flatten({
        'content-range': `bytes */${coded.length}`,
        via: headers['via']!,
        vary: headers['vary']!,
        'cache-status': headers['cache-status']!,
        'content-length': '0',
      }),
    );
    res.end();
    core.metrics?.request(kind, ctx.method, 416, ctx.res);
    return true;
  }
  let status = 200;
  let length: number | undefined;
  if (range.kind === 'partial') {
    status = 206;
    headers['content-range'] = `bytes ${range.start}-${range.end}/${coded.length}`;
    length = range.end - range.start + 1;
  } else if (coding === 'gzip') {
    length = meta.size;
  } else if (coding === 'identity') {
    length = coded.length;
  } // br, zstd: re-encoded as it goes, sent chunked
  if (length !== undefined) headers['content-length'] = String(length);
  else delete headers['content-length'];
  const hot = core.hot.get(meta.key);
  let bytes = hot && sameBody(hot.meta, meta) ? hot.body : undefined;
  if (!bytes && meta.size <= core.limits.hotObjectMaxBytes) {
    try {
      bytes = await core.store.readBody(meta);
    } catch {
      return false;
    }
    if (bytes.length !== meta.size) return false;
    makeHot(core, meta, bytes);
  }
  if (!bytes && ctx.method !== 'HEAD' && !(await core.store.verify(meta))) return false;
  core.metrics?.request(kind, ctx.method, status, ctx.res);
  res.writeHead(status, flatten(headers));
  if (ctx.method === 'HEAD') {
    res.end();
    return true;
  }
  const source = bytes ? Readable.from([bytes]) : core.store.readStream(meta, 0, meta.size - 1);
  const stream = codedBody(source, coded, coding, range.kind === 'partial' ? range : undefined);
  const share = core.bandwidth.served;
  if (share.bytesPerSec === 0) {
    void share.take(ctx.domain, length ?? meta.size); // counted only: at no rate it never waits
    pipeToResponse(stream, res);
  } else {
    pipeShared(stream, res, (n) => share.take(ctx.domain, n));
  }
  return true;
}

/** Wait for the served-bytes share to grant a body sent in one write (counted either way). */
async function served(core: ProxyCore, ctx: RequestCtx, bytes: number): Promise<void> {
  if (bytes > 0) await core.bandwidth.served.take(ctx.domain, bytes);
}
