/**
 * Asking the origin: a plain or conditional request (revalidation of a stored response), 1xx
 * interim responses passed on to the waiting clients, a stale copy served on failure only with
 * permission (RFC 9111 §4.2.4), a 304 freshening the stored response (§4.3.4), a full response
 * replacing it — or dropping it when it may not be stored (§4.3.3). What changes in the store is
 * done by ../commit/commit.ts (`commitTransfer`, `commitFreshened`, `dropReplaced`).
 */
import { staleOnError } from '../cache/decide.js';
import type { Fwd } from '../cache/decide.js';
import { ageFacts, mergeNotModified, responseRules } from '../cache/policy.js';
import { commitFreshened, dropReplaced } from '../commit/commit.js';
import { ProxyError } from '../errors.js';
import { sameUrlUpgrade } from '../mapping/links.js';
import type { UpstreamResponse } from '../origin/upstream.js';
import type { ProxyCore, RequestCtx } from '../kit/core.js';
import { NOT_STORED, toRecord } from '../kit/headers.js';
import type { StoredMeta } from '../store/types.js';
import { parseCoralControl } from '../site-control/coral-control.js';
import { siteOf } from '../site-control/opt-outs.js';
import type { FetchJob } from './job.js';
import { discard, dropUnkept, streamResponse } from './response.js';

const SERVER_ERRORS = new Set([500, 502, 503, 504]);

/** Certificate verification failures as Node's TLS reports them (OpenSSL X509_V_ERR_* names). */
const CERT_ERRORS = new Set([
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'ERR_TLS_CERT_ALTNAME_FORMAT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
  'CERT_CHAIN_TOO_LONG',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'INVALID_CA',
  'INVALID_PURPOSE',
  'PATH_LENGTH_EXCEEDED',
  'HOSTNAME_MISMATCH',
  'ERR_TLS_CERT_SIGNATURE_ALGORITHM_UNSUPPORTED',
]);

/** Map a connector/undici failure to the proxy's error codes. */
export function originError(e: unknown): ProxyError {
  if (e instanceof ProxyError) return e;
  const code = (e as { code?: unknown }).code;
  const msg = e instanceof Error ? e.message : String(e);
  if (code === 'CORAL_ORIGIN_FORBIDDEN')
    return new ProxyError('CORAL_ORIGIN_FORBIDDEN', msg, { cause: e });
  if (code === 'CORAL_ORIGIN_NEGATIVE_CACHED')
    return new ProxyError('CORAL_ORIGIN_NEGATIVE_CACHED', msg, { cause: e });
  if (typeof code === 'string' && CERT_ERRORS.has(code)) {
    return new ProxyError(
      'CORAL_ORIGIN_CERT_INVALID',
      `origin certificate not accepted (${code}): ${msg}`,
      { cause: e },
    );
  }
  if (typeof code === 'string' && (code.startsWith('ERR_SSL_') || code === 'EPROTO')) {
    return new ProxyError(
      'CORAL_ORIGIN_TLS_FAILED',
      `TLS with the origin failed (${code}): ${msg}`,
      {
        cause: e,
      },
    );
  }
  if (
    code === 'ETIMEDOUT' ||
    code === 'UND_ERR_CONNECT_TIMEOUT' ||
    code === 'UND_ERR_HEADERS_TIMEOUT'
  ) {
    return new ProxyError('CORAL_ORIGIN_TIMEOUT', `origin timed out: ${msg}`, { cause: e });
  }
  return new ProxyError(
    'CORAL_ORIGIN_UNREACHABLE',
    `origin unreachable (${typeof code === 'string' || typeof code === 'number' ? code : 'error'}): ${msg}`,
    { cause: e },
  );
}

/** Strong validators of a 304 that do not name the stored response (§4.3.4): do not freshen. */
function otherRepresentation(stale: StoredMeta, fresh: Record<string, string>): boolean {
  const etag = fresh['etag'];
  if (etag === undefined || etag.startsWith('W/')) return false;
  return stale.headers['etag'] !== undefined && stale.headers['etag'] !== etag;
}

/** Is a same-URL http → https redirect followed for this request (TLS off, Coralized name)? */
function followsUpgrade(core: ProxyCore, ctx: RequestCtx): boolean {
  return ctx.mode === 'coral' && core.links.followHttpsUpgrade && core.links.tlsPort === undefined;
}

/**
 * Act on the origin's `Coral-Control` (../site-control/): only a response fetched here from the
 * origin itself, for a Coralized name, and only for the sites it was fetched for (the request's,
 * and the https one it was upgraded to).
 */
function noteControl(
  core: ProxyCore,
  ctx: RequestCtx,
  res: UpstreamResponse,
  fetched: string,
): void {
  if (ctx.mode !== 'coral') return;
  const c = parseCoralControl(res.headers['coral-control']);
  if (c.kind === 'none') return;
  if (c.kind === 'invalid') {
    core.log.warn({ url: fetched, reason: c.reason }, 'ignoring a malformed Coral-Control');
    return;
  }
  for (const site of new Set([siteOf(ctx.url), siteOf(fetched)]))
    core.optOuts.record(site, c.seconds);
}

function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? (v.length === 1 ? v[0] : undefined) : v;
}

/** One ask of the origin (`fetchFromOrigin`). */
export interface OriginAsk extends FetchJob {
  /** What the forward is, for Cache-Status (../cache/decide.ts). */
  fwd: Fwd;
  /** The stored response being revalidated (a conditional request), if any. */
  stale?: StoredMeta | undefined;
}

export async function fetchFromOrigin(core: ProxyCore, ask: OriginAsk): Promise<void> {
  const { ctx, transfer: t, headers: forward } = ask;
  const plan = ask;
  let stale = plan.stale;
  for (let attempt = 0; ; attempt++) {
    const headers = { ...forward };
    if (stale && attempt === 0 && stale.status === 200) {
      if (stale.headers['etag']) headers['if-none-match'] = stale.headers['etag'];
      if (stale.headers['last-modified'])
        headers['if-modified-since'] = stale.headers['last-modified'];
    }
    const requestTime = core.clock.now();
    let res: UpstreamResponse;
    try {
      const ask = (url: string) =>
        core.origin.request({
          url,
          method: ctx.method,
          headers,
          onInfo: (status, h) => t.info(status, h),
        });
      res = await ask(ctx.url);
      let fetched = ctx.url;
      const upgrade = followsUpgrade(core, ctx)
        ? sameUrlUpgrade(ctx.url, res.status, single(res.headers['location']))
        : undefined;
      if (upgrade !== undefined) {
        // TLS off: an https-only site answers its http URL with a redirect to the same URL over
        // https; fetch that here and serve (and store) it under the http name.
        discard(res);
        core.log.debug({ url: ctx.url, to: upgrade }, 'following the origin to https');
        res = await ask(upgrade);
        fetched = upgrade;
      }
      noteControl(core, ctx, res, fetched);
    } catch (e) {
      const err = originError(e);
      core.metrics?.originFetch(0, false);
      const why = stale && staleOnError(ctx.cache, stale, core.clock.now(), core.policy);
      if (stale && why) {
        core.log.info({ url: ctx.url, err: err.message }, 'origin failed: serving a stale copy');
        t.settle({ kind: 'entry', meta: stale, fwd: 'stale', detail: why });
        return;
      }
      if (stale && responseRules(stale.status, stale.headers, core.policy).mustRevalidate) {
        throw new ProxyError(
          'CORAL_REVALIDATION_FAILED',
          `cannot revalidate ${ctx.url}: ${err.message}`,
          {
            cause: err,
          },
        );
      }
      throw err;
    }
    const responseTime = core.clock.now();
    const why =
      stale && SERVER_ERRORS.has(res.status)
        ? staleOnError(ctx.cache, stale, responseTime, core.policy)
        : undefined;
    if (stale && why) {
      // §4.3.3: a 5xx to a revalidation may be treated as a failure to respond.
      discard(res);
      core.metrics?.originFetch(0, false);
      core.log.info({ url: ctx.url, status: res.status }, 'origin failed: serving a stale copy');
      t.settle({ kind: 'entry', meta: stale, fwd: 'stale', fwdStatus: res.status, detail: why });
      return;
    }
    if (res.status === 304 && stale && attempt === 0) {
      res.body.on('error', () => {});
      res.body.resume();
      const fresh = toRecord(res.headers, NOT_STORED);
      delete fresh['content-length'];
      if (otherRepresentation(stale, fresh)) {
        // The 304 validates some other representation: ask again without conditions.
        stale = undefined;
        continue;
      }
      // §3.2: the 304's fields replace the stored ones, except those never stored (§3.1) —
      // hop-by-hop and Connection-listed ones (toRecord), Set-Cookie, and dropUnkept's.
      const merged = mergeNotModified(stale.headers, fresh);
      const rules = responseRules(stale.status, merged, core.policy, responseTime);
      dropUnkept(ctx.mode, merged, rules);
      const facts = ageFacts(toRecord(res.headers), requestTime, responseTime);
      const updated = await commitFreshened(core, ctx, stale, {
        headers: merged,
        facts,
        lifetime: rules.lifetime,
        responseTime,
      });
      core.metrics?.originFetch(0, true);
      t.settle({ kind: 'entry', meta: updated, fwd: 'stale', fwdStatus: 304 });
      return;
    }
    const out = await streamResponse(core, ask, res, {
      requestTime,
      responseTime,
      fwd: plan.fwd,
      source: 'origin',
      notMembers: plan.notMembers,
    });
    // §4.3.3: a full response to a revalidation means the stored one is no longer suitable (a
    // truncated one means nothing: the stored copy stays).
    if (
      plan.stale &&
      ctx.method === 'GET' &&
      res.status < 500 &&
      out.ok &&
      out.committed?.key !== plan.stale.key
    ) {
      await dropReplaced(core, plan.stale);
    }
    return;
  }
}
