/**
 * Turning an upstream response (origin or peer) into a transfer: the head every waiting client
 * gets, whether it may be shared and stored (RFC 9111 §3), the body pumped to the store's temp
 * file with backpressure, checked (size, and for peers SHA-256), then committed — or discarded.
 * A peer's body that stalls or is cut short may be completed from the origin (`resume`,
 * ./resume.ts) into the same transfer, and the whole checked as one.
 */
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { formatHttpDate, parseHttpDate } from '../cache/http-date.js';
import { ageFacts, responseRules, storable } from '../cache/policy.js';
import type { AgeFacts, HeaderRecord, ResponseRules } from '../cache/policy.js';
import { DELTA_SECONDS_MAX } from '../cache/directives.js';
import { varyNames, varyValues } from '../cache/vary.js';
import { commitTransfer } from '../commit/commit.js';
import type { FetchJob } from './job.js';
import type { Fwd } from '../cache/decide.js';
import { ProxyError } from '../errors.js';
import { ORIGIN_BOUND_FIELDS, cookiesForClient } from '../mapping/links.js';
import { splitHostHeader } from '../mapping/host.js';
import type { UpstreamResponse } from '../origin/upstream.js';
import type { ProxyCore, RequestCtx } from '../kit/core.js';
import { NOT_STORED, toRecord } from '../kit/headers.js';
import type { StoredMeta } from '../store/types.js';
import { pump } from '../transfer/pump.js';
import type { PumpFailure, PumpResult } from '../transfer/pump.js';
import type { TransferHead } from '../transfer/transfer.js';

/** Why a copy was not completed from the origin (./resume.ts). */
export type ResumeRefusal =
  | 'no-validator' // the member's copy has no strong validator to ask with
  | 'ignored-range' // the origin answered 200: a whole body, not the rest
  | 'changed' // 412, or a 206 under other validators or coding: another version
  | 'bad-range' // a 206 for other bytes than the rest
  | 'status' // any other answer
  | 'unreachable'; // the request failed

export type Resumption =
  | { ok: true; body: Readable; length: number; abandon: () => void }
  | { ok: false; why: ResumeRefusal; status?: number };

export interface ResponseSource {
  requestTime: number;
  responseTime: number;
  fwd: Fwd | 'peer';
  source: 'origin' | 'peer';
  /** The member audit's own origin fetch: counted by `auditFetch`, not `originFetch`. */
  audit?: boolean;
  /** Peer node id. */
  peer?: string;
  /** A peer copy checked against an authenticated record (keyed mode). */
  peerVerified?: boolean;
  notMembers?: number;
  /** Expected size and SHA-256 (peer copies): the body counts only if it matches. */
  verify?: { size?: number | undefined; sha256?: string[] };
  /** Idle bound between body chunks on the injected clock (peers). */
  idleMs?: number;
  /**
   * Complete a body that stalled or was cut short after `received` bytes (a member's copy, from
   * the origin: ./resume.ts): the rest, to be appended, or why not.
   */
  resume?: (received: number) => Promise<Resumption>;
}

/** Failures a body can be completed after: it stopped, and what came was not too much. */
const RESUMABLE: ReadonlySet<PumpFailure> = new Set(['stalled', 'truncated', 'short']);

export interface StreamResult {
  /** The body arrived whole (and matched, for a verified source). */
  ok: boolean;
  committed: StoredMeta | undefined;
  /** The body's size and SHA-256 (lowercase hex), when it arrived whole. */
  body?: { size: number; sha256: string };
  /** Why the body failed, when it did. */
  failure?: PumpResult & { ok: false };
  mismatch?: boolean;
  /**
   * The body stopped after `at` bytes and `resume` was asked for the rest: `refused` (why not:
   * the transfer failed), or completed from byte `at` (`ok` and `mismatch` then say how the
   * whole came out; `verified`: it matched an announced SHA-256, not only its size).
   */
  resumed?: { at: number; refused?: ResumeRefusal; verified?: boolean };
}

/** A strict Content-Length (RFC 9110 §8.6): digits only, or undefined. */
export function contentLength(h: HeaderRecord): number | undefined {
  const v = h['content-length'];
  return v !== undefined && /^[0-9]{1,15}$/.test(v) ? Number(v) : undefined;
}

/**
 * Remove from an upstream response's fields (in place) those this cache never keeps or passes on
 * (RFC 9111 §3.1): on Coralized names the fields bound to the origin's own endpoints or keys
 * (`ORIGIN_BOUND_FIELDS`, ../mapping/links.ts); the fields a qualified `private` or `no-cache`
 * names (§5.2.2.7, §5.2.2.4). Used for a full response and for the fields a 304 merges into a
 * stored one (§3.2, §4.3.4), so a stored head never holds them.
 */
export function dropUnkept(
  mode: RequestCtx['mode'],
  headers: HeaderRecord,
  rules: Pick<ResponseRules, 'privateFields' | 'noCacheFields'>,
): void {
  if (mode === 'coral') for (const f of ORIGIN_BOUND_FIELDS) delete headers[f];
  for (const f of rules.privateFields) delete headers[f];
  for (const f of rules.noCacheFields) delete headers[f];
}

/**
 * A member's copy is believed fresh for at most `maxTtl` seconds more, whatever it declares:
 * its age is raised (in place) so that this node's own freshness lifetime for it, less its age,
 * is at most `maxTtl`. Clients and peers served from it then see that age too.
 */
export function capPeerFreshness(facts: AgeFacts, lifetime: number, maxTtl: number): void {
  const atLeast = lifetime - maxTtl;
  if (atLeast > facts.ageValue) facts.ageValue = Math.min(atLeast, DELTA_SECONDS_MAX);
}

/** Drop a response body we will not read. */
export function discard(res: UpstreamResponse): void {
  res.body.on('error', () => {});
  res.body.destroy();
}

/** Where an upstream response goes (`streamResponse`): a fetch job's request and transfer. */
export type ResponseInto = Pick<FetchJob, 'ctx' | 'transfer' | 'unregister'>;

/**
 * Settle `into.transfer` with the response's head and pump its body. `into.unregister` is called
 * as soon as it is known that nobody else may join (a response that is not shareable).
 */
export async function streamResponse(
  core: ProxyCore,
  into: ResponseInto,
  res: UpstreamResponse,
  o: ResponseSource,
): Promise<StreamResult> {
  const { ctx, transfer: t, unregister } = into;
  const all = toRecord(res.headers);
  const headers = toRecord(res.headers, NOT_STORED);
  const raw = res.headers['set-cookie'];
  // Coralized names: no cookie ever reaches a client, and fields bound to the origin's own
  // endpoints or keys are not kept; site mode: cookies the site may set (../mapping/links.ts).
  const setCookie =
    ctx.mode === 'site'
      ? cookiesForClient(raw, splitHostHeader(ctx.host).name, core.zones)
      : undefined;
  const declared = contentLength(headers);
  delete headers['content-length'];
  // RFC 9110 §6.6.1: a response without a (valid) Date gets the time it was received.
  if (parseHttpDate(headers['date'], o.responseTime) === undefined) {
    headers['date'] = formatHttpDate(o.responseTime);
  }
  const facts = ageFacts(all, o.requestTime, o.responseTime);
  const noBody = ctx.method === 'HEAD' || res.status === 204 || res.status === 304;
  const max = core.limits.maxObjectBytes;
  if (declared !== undefined && declared > max && !noBody) {
    discard(res);
    throw new ProxyError(
      'CORAL_OBJECT_TOO_LARGE',
      `${ctx.url} is ${declared} bytes; this proxy fetches objects up to ${max} bytes`,
    );
  }
  const rules = responseRules(res.status, headers, core.policy, o.responseTime);
  if (o.source === 'peer') capPeerFreshness(facts, rules.lifetime, core.limits.peerMaxTtlSeconds);
  const decision =
    ctx.method === 'GET'
      ? storable(ctx.reqHeaders, res.status, headers, core.policy, o.responseTime)
      : { store: false };
  const cookieBlocked = ctx.mode === 'site' && raw !== undefined;
  // The request's Origin is forwarded (CORS): an answer naming that one origin is only this
  // client's, unless the origin keys it with `Vary: Origin` (./request-headers.ts).
  const acao = headers['access-control-allow-origin'];
  const corsUnkeyed =
    ctx.reqHeaders['origin'] !== undefined &&
    acao !== undefined &&
    acao.trim() !== '*' &&
    !varyNames(headers).includes('origin');
  const unverifiedPeer = o.source === 'peer' && o.peerVerified !== true;
  const shareable = decision.store && !cookieBlocked && !corsUnkeyed;
  const storing = shareable && !unverifiedPeer;
  dropUnkept(ctx.mode, headers, rules);
  const vary = varyNames(headers);
  const head: TransferHead = {
    status: res.status,
    headers,
    ...(setCookie ? { setCookie } : {}),
    facts,
    fwd: o.fwd,
    fwdStatus: res.status,
    shareable,
    storing,
    vary,
    varyValues: varyValues(vary, ctx.reqHeaders),
    length: declared,
    noBody,
    ...(o.peer ? { peer: o.peer, peerVerified: !unverifiedPeer } : {}),
    ...(o.notMembers ? { notMembers: o.notMembers } : {}),
  };
  if (!shareable) unregister();
  const writer = noBody && !storing ? undefined : core.store.begin();
  if (writer) t.attach(writer, { verify: o.verify !== undefined });
  if (!storing) t.abandon = () => discard(res);
  t.settle({ kind: 'stream', head });
  const countFetch = (bytes: number, ok: boolean) =>
    o.source === 'peer'
      ? core.metrics?.peerFetch(bytes, ok)
      : o.audit
        ? core.metrics?.auditFetch?.(bytes, ok)
        : core.metrics?.originFetch(bytes, ok);
  let size = 0;
  let sha256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'; // empty body
  let resumed: StreamResult['resumed'];
  if (noBody) {
    res.body.on('error', () => {});
    res.body.resume();
  } else {
    const originShare = (n: number) => core.bandwidth.origin.take(ctx.domain, n);
    // Kept by the caller when the body may be completed, so that the rest extends it.
    const hash = o.resume ? createHash('sha256') : undefined;
    let r = await pump(res.body, t, {
      maxBytes: max,
      length: declared,
      ...(hash ? { continues: { size: 0, hash } } : {}),
      ...(o.idleMs !== undefined ? { idle: { clock: core.clock, ms: o.idleMs } } : {}),
      ...(o.source === 'origin' ? { share: originShare } : {}),
    });
    // Completed only for someone: the store, or clients still reading (an unstored transfer
    // whose clients all left was stopped on purpose).
    if (!r.ok && o.resume && hash && RESUMABLE.has(r.reason) && (storing || t.readers > 0)) {
      const at = r.size;
      countFetch(at, false);
      core.log.warn(
        { url: ctx.url, err: r.error.message, received: at, from: o.peer ?? 'origin' },
        'upstream body stopped: asking the origin for the rest',
      );
      const rest = await o.resume(at);
      if (!rest.ok) {
        resumed = { at, refused: rest.why };
      } else {
        resumed = { at };
        if (!storing) t.abandon = rest.abandon;
        r = await pump(rest.body, t, {
          maxBytes: max,
          length: rest.length,
          continues: { size: at, hash },
          share: originShare,
        });
        core.metrics?.originFetch(r.size - at, r.ok);
      }
    }
    if (!r.ok) {
      core.log.warn(
        { url: ctx.url, err: r.error.message, received: r.size, from: o.peer ?? 'origin' },
        'upstream transfer failed',
      );
      const err =
        r.reason === 'too-large'
          ? new ProxyError(
              'CORAL_OBJECT_TOO_LARGE',
              `${ctx.url} exceeded ${max} bytes while streaming`,
            )
          : r.error;
      t.fail(err);
      // A body that was to be completed is counted already (the member's part, the origin's).
      if (!resumed) countFetch(r.size, false);
      return { ok: false, committed: undefined, failure: r, ...(resumed ? { resumed } : {}) };
    }
    ({ size, sha256 } = r);
  }
  const v = o.verify;
  if (
    v &&
    ((v.size !== undefined && v.size !== size) ||
      (v.sha256 ?? []).some((s) => s.toLowerCase() !== sha256))
  ) {
    core.log.warn(
      { peer: o.peer, size, sha256 },
      'peer sent bytes that do not match its announcement',
    );
    t.fail(new Error('peer body does not match its announced size and SHA-256'));
    if (!resumed) countFetch(size, false);
    return {
      ok: false,
      committed: undefined,
      mismatch: true,
      body: { size, sha256 },
      ...(resumed ? { resumed } : {}),
    };
  }
  t.finish();
  if (resumed) resumed.verified = (v?.sha256 ?? []).length > 0;
  else countFetch(size, true);
  let committed: StoredMeta | undefined;
  // A completed copy is stored only when its whole matched a SHA-256 the member announced: its
  // first bytes are vouched for by nobody else.
  if (storing && writer && resumed?.verified !== false) {
    committed = await commitTransfer(core, {
      ctx,
      transfer: t,
      head,
      writer,
      body: { size, sha256, lifetime: rules.lifetime, fetchStartedAt: o.requestTime },
    });
  }
  return { ok: true, committed, body: { size, sha256 }, ...(resumed ? { resumed } : {}) };
}
