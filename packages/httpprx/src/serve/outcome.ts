/**
 * Serving the outcome of a fetch to one of its clients: an error page, a stored entry (after a
 * 304 or a stale-if-error fallback), or the response in flight — its head at once, its body from
 * the transfer at the client's own pace (a Range from the bytes as they arrive when the length is
 * known). 1xx interim responses are passed on while the client waits for the final one.
 */
import { noteOf } from '@coral/accesslog';
import { CACHE_NAME, SHA256_HEADER } from '../constants.js';
import { currentAge, responseRules } from '../cache/policy.js';
import type { HeaderRecord } from '../cache/policy.js';
import type { ProxyCore, RequestCtx } from '../kit/core.js';
import { cacheStatus, flatten, toRecord } from '../kit/headers.js';
import { pipeToResponse, sendError } from '../kit/respond.js';
import { chooseCoding, codedOf } from '../kit/encoding.js';
import type { Coded } from '../kit/encoding.js';
import { PassThrough } from 'node:stream';
import type { ServerResponse } from 'node:http';
import { codedBody, codedHeaders } from './coding.js';
import { streamTransfer } from '../transfer/reader.js';
import type { Outcome, Transfer, TransferHead } from '../transfer/transfer.js';
import { clientHeaders } from './client-headers.js';
import { notModified, notModifiedHeaders, rangeFor } from './conditional.js';
import { serveEntry } from './entry.js';

/**
 * Pass a 1xx on to a client still waiting (RFC 9110 §15.2: never to HTTP/1.0 clients). Node sends
 * 103 Early Hints (with its Link fields) and 102; other 1xx codes have no API and are dropped.
 */
export function forwardInfo(
  ctx: RequestCtx,
  status: number,
  headers: Record<string, string | string[]>,
): void {
  const { req, res } = ctx;
  if (
    res.headersSent ||
    req.httpVersionMajor < 1 ||
    (req.httpVersionMajor === 1 && req.httpVersionMinor < 1)
  ) {
    return;
  }
  try {
    if (status === 103) {
      const h: Record<string, string | string[]> = {};
      const record = toRecord(headers);
      for (const k in record) h[k] = record[k]!;
      const link = headers['link'];
      if (link !== undefined) h['link'] = link;
      res.writeEarlyHints(h);
    } else if (status === 102) {
      res.writeProcessing();
    }
  } catch {
    /* a Link value Node refuses: the hint is only a hint */
  }
}

/** Cache-Status parameters of a response from a transfer. */
function streamParams(t: Transfer, head: TransferHead, collapsed: boolean): string[] {
  const params = [`fwd=${head.fwd}`, `fwd-status=${head.fwdStatus}`];
  if (t.committed) params.push('stored');
  if (collapsed) params.push('collapsed');
  const details: string[] = [];
  if (head.peer) details.push(`peer-${head.peer.slice(0, 12)}`);
  if (head.peer && head.peerVerified === false) details.push('unverified');
  if (head.notMembers) details.push(`not-member-holders-${head.notMembers}`);
  // RFC 9211 detail: one token, or a string when there is more than one fact.
  if (details.length === 1) params.push(`detail=${details[0]}`);
  else if (details.length > 1) params.push(`detail="${details.join(' ')}"`);
  return params;
}

/** Serve the in-flight response `head` of `t` (the caller counted itself as a reader). */
function serveStream(
  core: ProxyCore,
  ctx: RequestCtx,
  t: Transfer,
  head: TransferHead,
  collapsed: boolean,
): void {
  const { res } = ctx;
  const now = core.clock.now();
  const headers: HeaderRecord = clientHeaders(ctx, head.headers, core.via);
  headers['age'] = String(currentAge(head.facts, now));
  headers['cache-status'] = cacheStatus(CACHE_NAME, streamParams(t, head, collapsed));
  if (ctx.peer && t.committed) headers[SHA256_HEADER] = t.committed.sha256;
  const kind = head.fwd === 'peer' ? 'peer' : 'miss';
  const note = noteOf(res);
  if (note) note.upstreamMs = head.facts.responseTime - head.facts.requestTime;
  const coded = ctx.peer ? undefined : codedOf(head.headers);
  if (coded && head.length !== undefined) {
    return serveCodedStream(core, ctx, t, coded, headers, kind, head.length);
  }
  let status = head.status;
  let start = 0;
  let end: number | undefined;
  const whole = head.status === 200 && !head.noBody;
  if (whole && notModified(ctx.reqHeaders, head.headers, now)) {
    t.removeReader();
    res.writeHead(304, flatten(notModifiedHeaders(headers)));
    res.end();
    core.metrics?.request(kind, ctx.method, 304, ctx.res);
    return;
  }
  if (whole && head.length !== undefined) {
    headers['accept-ranges'] = 'bytes';
    const range = rangeFor(ctx.reqHeaders, head.headers, head.length, now);
    if (range.kind === 'unsatisfiable') {
      t.removeReader();
      res.writeHead(
        416,
        flatten({
          'content-range': `bytes */${head.length}`,
          via: headers['via']!,
          'cache-status': headers['cache-status'],
          'content-length': '0',
        }),
      );
      res.end();
      core.metrics?.request(kind, ctx.method, 416, ctx.res);
      return;
    }
    if (range.kind === 'partial') {
      ({ start, end } = range);
      status = 206;
      headers['content-range'] = `bytes ${start}-${end}/${head.length}`;
    }
  }
  if (head.length !== undefined && !(head.noBody && ctx.method !== 'HEAD')) {
    headers['content-length'] = String(end === undefined ? head.length - start : end - start + 1);
  }
  if (head.status === 204 || head.status === 304) delete headers['content-length'];
  const flat = flatten(headers);
  if (ctx.mode === 'site' && head.setCookie)
    for (const c of head.setCookie) flat.push('set-cookie', c);
  res.writeHead(status, flat);
  core.metrics?.request(kind, ctx.method, status, ctx.res);
  if (ctx.method === 'HEAD' || head.noBody) {
    t.removeReader();
    res.end();
    return;
  }
  void streamTransfer(t, res, start, end, (n) => core.bandwidth.served.take(ctx.domain, n));
}

/**
 * A member's coded copy in flight (../kit/encoding.ts), to a client: as it comes for a gzip
 * client, decoded or re-encoded for the others. A Range is not answered from it (a server may
 * ignore Range, RFC 9110 §14.2): the whole is sent, and later ranges come from the stored copy.
 */
function serveCodedStream(
  core: ProxyCore,
  ctx: RequestCtx,
  t: Transfer,
  coded: Coded,
  base: HeaderRecord,
  kind: string,
  length: number,
): void {
  const { res } = ctx;
  const coding = chooseCoding(ctx.reqHeaders['accept-encoding']);
  const headers = codedHeaders(base, coding);
  if (notModified(ctx.reqHeaders, headers, core.clock.now())) {
    t.removeReader();
    res.writeHead(304, flatten(notModifiedHeaders(headers)));
    res.end();
    core.metrics?.request(kind, ctx.method, 304, ctx.res);
    return;
  }
  // Decoded or re-encoded as it comes: sent chunked (the declared identity length is checked
  // only at the commit, ../commit/commit.ts).
  if (coding === 'gzip') headers['content-length'] = String(length);
  else delete headers['content-length'];
  res.writeHead(200, flatten(headers));
  core.metrics?.request(kind, ctx.method, 200, ctx.res);
  if (ctx.method === 'HEAD') {
    t.removeReader();
    res.end();
    return;
  }
  const take = (n: number) => core.bandwidth.served.take(ctx.domain, n);
  if (coding === 'gzip') {
    void streamTransfer(t, res, 0, undefined, take);
    return;
  }
  // The transfer's reader writes into `p` as it would into a response (write, drain, close).
  const p = new PassThrough();
  pipeToResponse(codedBody(p, coded, coding), res);
  void streamTransfer(t, p as unknown as ServerResponse, 0, undefined, take);
}

/**
 * Serve outcome `o` of transfer `t` to `ctx`. The caller has counted `ctx` as a reader of `t`;
 * `refetch` is called when a stored entry turns out unreadable.
 */
export async function serveOutcome(
  core: ProxyCore,
  ctx: RequestCtx,
  t: Transfer,
  o: Outcome,
  collapsed: boolean,
  refetch: () => Promise<void>,
): Promise<void> {
  if (o.kind === 'stream') return serveStream(core, ctx, t, o.head, collapsed);
  t.removeReader();
  if (o.kind === 'error') return sendError(ctx.res, ctx.method, o.error, core.via, core.metrics);
  const params: string[] = [`fwd=${o.fwd}`];
  if (o.fwdStatus !== undefined) params.push(`fwd-status=${o.fwdStatus}`);
  if (o.detail) {
    const m = o.meta;
    const lifetime = responseRules(m.status, m.headers, core.policy, m.facts.responseTime).lifetime;
    params.push(`ttl=${lifetime - currentAge(m.facts, core.clock.now())}`);
  }
  if (collapsed) params.push('collapsed');
  if (o.detail) params.push(`detail=${o.detail}`);
  const kind =
    o.detail === 'stale-if-error' || o.detail === 'stale-on-error'
      ? 'stale'
      : o.fwd === 'stale'
        ? 'revalidated'
        : o.fwd;
  if (!(await serveEntry(core, ctx, o.meta, params, kind))) {
    await core.store.delete(o.meta.key);
    return refetch();
  }
}
