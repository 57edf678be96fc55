/**
 * Asking the fleet: holders from the index (bounded by `indexTimeoutMs`), mapped to verified
 * member addresses (../peer/members.ts), the nearest raced (../peer/peer-fetch.ts). The winner's
 * body is streamed to the clients and the temp file as it arrives and hashed on the way; it counts
 * only if it matches its announcement. What is checked before the first byte (Content-Length
 * against the record's size, `x-coral-sha256` against the record's hash) falls back to the origin
 * at no cost to the client; a body that turns out wrong at the end aborts the clients reading it
 * (they never see a complete-looking wrong body), is not stored, and its member is skipped for a
 * while (../peer/penalties.ts). A body that stalls or is cut short is completed from the origin
 * when the member's validators allow it (./resume.ts); if the whole is then not what the member
 * announced, the member lied about bytes it sent: the clients are aborted and it is quarantined.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { TimerHandle } from '@coral/runtime';
import type { AuditEvidence } from '../audit/quarantine.js';
import { responseRules } from '../cache/policy.js';
import type { ClaimResult, Holder } from '../content-index.js';
import { SHA256_HEADER } from '../constants.js';
import type { UpstreamResponse } from '../origin/upstream.js';
import { chooseHolders } from '../peer/members.js';
import type { PeerTarget } from '../peer/members.js';
import type { PeerPenalties } from '../peer/penalties.js';
import { racePeers } from '../peer/peer-fetch.js';
import type { ProxyCore, RequestCtx } from '../kit/core.js';
import { toRecord } from '../kit/headers.js';
import type { FetchJob } from './job.js';
import { contentLength, discard, streamResponse } from './response.js';
import type { StreamResult } from './response.js';
import { resumeBasis, resumeFromOrigin } from './resume.js';
import { CODED_FIELD } from '../kit/encoding.js';

/** `index.lookup`, bounded by `indexTimeoutMs` on the clock even if the index ignores the signal. */
function lookupHolders(core: ProxyCore, keyBytes: Uint8Array): Promise<Holder[]> {
  return bounded(core, 'index lookup', (signal) => core.index.lookup(keyBytes, { signal }));
}

/** An index operation bounded by `indexTimeoutMs` on the clock, aborted when it runs out. */
function bounded<T>(
  core: ProxyCore,
  what: string,
  op: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const ac = new AbortController();
  const ms = core.limits.indexTimeoutMs;
  return new Promise<T>((resolve, reject) => {
    const timer = core.clock.setTimeout(() => {
      const err = new Error(`${what} exceeded ${ms} ms`);
      ac.abort(err);
      reject(err);
    }, ms);
    op(ac.signal).then(
      (h) => {
        timer.cancel();
        resolve(h);
      },
      (e: unknown) => {
        timer.cancel();
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

/** `index.claim`, bounded like a lookup (a claim that fails leaves the fetch, and its announcement, to this node). */
function claimHolders(core: ProxyCore, keyBytes: Uint8Array): Promise<ClaimResult> {
  const claim = core.index.claim?.bind(core.index);
  if (!claim) return Promise.resolve({ won: true });
  return bounded(core, 'index claim', (signal) => claim(keyBytes, { signal }));
}

/**
 * The members to ask for `keyBytes`: the index's holders; when it knows none and it has claims,
 * the claim's winner (`claimed`: this node won its claim, which announced it as `fetching`).
 * Without `members` there is no peer fetch, and no lookup either.
 */
export async function peerTargets(
  core: ProxyCore,
  keyBytes: Uint8Array,
  penalties: PeerPenalties,
): Promise<{ targets: PeerTarget[]; notMembers: number; claimed: boolean }> {
  if (!core.members) return { targets: [], notMembers: 0, claimed: false };
  let holders: Holder[] = [];
  let claimed = false;
  try {
    holders = await lookupHolders(core, keyBytes);
    if (holders.length === 0 && core.index.claim) {
      const c = await claimHolders(core, keyBytes);
      if (c.won) claimed = true;
      else holders = c.holders;
    }
  } catch (e) {
    core.log.warn({ err: String(e) }, 'index lookup failed');
  }
  // A member quarantined here is not asked, whatever the index says it holds.
  const kept = holders.filter((h) => !core.quarantined(h.nodeId));
  for (let i = kept.length; i < holders.length; i++) core.metrics?.holderSkipped?.('quarantined');
  const choice = chooseHolders(kept, core.members, core.self);
  if (choice.notMembers > 0) {
    for (let i = 0; i < choice.notMembers; i++) core.metrics?.holderSkipped?.('not-member');
    core.log.debug(
      { key: Buffer.from(keyBytes).toString('hex'), skipped: choice.notMembers },
      'holder records naming no verified member skipped',
    );
  }
  return {
    targets: choice.targets.filter((t) => !penalties.penalized(t.holder.nodeId)),
    notMembers: choice.notMembers,
    claimed,
  };
}

/** One ask of the fleet (`fetchFromPeers`). */
export interface PeerAsk extends FetchJob {
  /** The members to race, nearest first. */
  targets: PeerTarget[];
  /** Members skipped for a while after a failure or a lie (../peer/penalties.ts). */
  penalties: PeerPenalties;
  /** An ask of the member designated for the URL (../peer/rendezvous.ts). */
  designated?: boolean;
}

/** Race `ask.targets`; true when a member's answer is being streamed (whatever its end). */
export async function fetchFromPeers(core: ProxyCore, ask: PeerAsk): Promise<boolean> {
  const { ctx, targets, headers, notMembers, penalties } = ask;
  const designated = ask.designated ?? false;
  // The designated member answers 102 as soon as it takes the ask, and again at a beat while it
  // waits on its origin (../peer/processing.ts): the fetching patience bounds the wait for each
  // sign of life (a member busy with a flash crowd may take a while to read the ask: the peer
  // timeout alone made asks to busy members fail over to the origin), the origin's the whole wait.
  // Before the first 102 the wait goes on while the member stays live by failure detection.
  // A holder the index says is fetching answers only once its own origin does: the same patience.
  // A designated member that failure detection holds dead (the choice keeps it for a moment:
  // ../peer/members.ts) gets the short patience: it is only worth asking if the death was false.
  const live = (h: Holder) => core.members?.member(h.nodeId) !== undefined;
  const patience = (h: Holder) =>
    h.state === 'fetching' && (!designated || live(h))
      ? core.limits.peerFetchingTimeoutMs
      : core.limits.peerTimeoutMs;
  let failure: 'refused' | 'timeout' | 'error' | undefined;
  let processing = false;
  let fellSilent = false;
  const winner = await racePeers(
    {
      upstream: core.peers,
      clock: core.clock,
      connector: core.peerConnector,
      ...(core.peerAuth ? { auth: core.peerAuth } : {}),
      onEvent: (e) => {
        if (e.type === 'peer-processing') processing = true;
        else {
          failure =
            e.type === 'peer-refused' ? 'refused' : e.type === 'peer-timeout' ? 'timeout' : 'error';
          if (e.type === 'peer-timeout' && e.silent) fellSilent = true;
        }
        core.log.debug(e, 'peer event');
      },
    },
    targets,
    {
      path: ctx.path,
      host: ctx.host,
      headers,
      nodeId: core.self.nodeId,
      via: headers['via'] ?? core.via,
      designated,
      takenPatienceMs: core.limits.originTimeoutMs + core.limits.peerTimeoutMs,
      beatPatienceMs: core.limits.peerFetchingTimeoutMs,
      // A designated member still live is only slow to take the ask: waiting beats a second fetch.
      live,
    },
    patience,
  );
  if (!winner) {
    // A designated member that did not answer at all is skipped for a while (its misses go to
    // the index); one that refused only sees the membership differently.
    if (designated) {
      core.metrics?.designated?.(`ask-${failure ?? 'error'}`);
      // Skipped for a while unless it refused (it sees the membership differently) or its 102s
      // kept coming to the end of the origin's patience (it is only waiting on a slow origin):
      // no answer at all, an error, or silence after its 102 mean it hung or died.
      const slowOrigin = failure === 'timeout' && processing && !fellSilent;
      if (failure !== 'refused' && !slowOrigin)
        for (const t of targets) penalties.penalize(t.holder.nodeId);
    }
    return false;
  }
  const h = winner.holder;
  const res = winner.response;
  const declared = contentLength(res.headers as Record<string, string>);
  const raw = res.headers[SHA256_HEADER];
  const claimed = typeof raw === 'string' ? raw.toLowerCase() : undefined;
  const record = h.sha256?.toLowerCase();
  // What can be checked before any byte is passed on is checked now: a lie costs the client nothing.
  const early =
    (declared !== undefined && h.size !== undefined && declared !== h.size) ||
    (claimed !== undefined && record !== undefined && claimed !== record) ||
    (declared !== undefined && declared > core.limits.maxObjectBytes);
  if (early) {
    core.log.warn(
      { peer: h.nodeId, declared, claimed },
      'peer answer contradicts its announcement',
    );
    discard(res);
    winner.abort();
    core.metrics?.peerFetch(0, false);
    penalties.penalize(h.nodeId, 'integrity');
    return false;
  }
  const sha256 = [claimed, record].filter((x): x is string => x !== undefined);
  let body = res.body;
  if (
    declared !== undefined &&
    declared <= core.limits.peerVerifyWholeBytes &&
    ctx.method === 'GET'
  ) {
    // Small enough to check whole before a byte is sent: a lie (or a stall) costs the client
    // nothing, the origin answers it instead.
    const whole = await readWhole(core, res, declared, patience(h));
    const digest = whole && createHash('sha256').update(whole).digest('hex');
    if (
      !whole ||
      sha256.some((s) => s !== digest) ||
      (h.size !== undefined && whole.length !== h.size)
    ) {
      core.log.warn(
        { peer: h.nodeId, received: whole?.length, sha256: digest },
        'peer copy failed its check before it was sent: asking the origin',
      );
      winner.abort();
      core.metrics?.peerFetch(whole?.length ?? 0, false);
      core.metrics?.peerIntegrity?.('origin');
      // Cut short or stalled: it may be restarting; other bytes than announced: a lie.
      penalties.penalize(h.nodeId, whole ? 'integrity' : 'unreachable');
      return false;
    }
    body = Readable.from([whole]);
  }
  // A body that stops mid-way may be completed from the origin, under the member's validators.
  const fields = toRecord(res.headers);
  // A coded copy (../kit/encoding.ts) cannot be completed with the origin's identity bytes.
  const basis =
    ctx.method === 'GET' && fields[CODED_FIELD] === undefined
      ? resumeBasis(fields, declared ?? h.size)
      : undefined;
  const out = await streamResponse(core, ask, body === res.body ? res : { ...res, body }, {
    requestTime: winner.requestTime,
    responseTime: winner.responseTime,
    fwd: 'peer',
    source: 'peer',
    peer: h.nodeId,
    peerVerified: core.members?.recordsAuthenticated === true,
    notMembers,
    verify: { size: h.size, sha256 },
    // A body from a member that is fetching it (the designated member's target is a `fetching`
    // holder too) comes at its origin's pace: the fetching patience.
    idleMs: patience(h),
    resume: (at) =>
      basis
        ? resumeFromOrigin(core, ctx, headers, basis, at)
        : Promise.resolve({ ok: false, why: 'no-validator' }),
  });
  // A stored copy from a member may be audited against the origin (../audit/auditor.ts).
  if (out.ok && out.committed) core.audit?.served(h.nodeId, ctx, out.committed);
  if (out.ok && out.resumed) {
    winner.abort();
    core.metrics?.peerIntegrity?.('resumed');
    // Honest (or unverifiable) but failed mid-way: it may be restarting.
    penalties.penalize(h.nodeId, 'unreachable');
    core.log.info(
      { peer: h.nodeId, url: ctx.url, at: out.resumed.at, verified: out.resumed.verified },
      "a member's copy stopped mid-body: completed from the origin",
    );
  }
  if (!out.ok) {
    winner.abort();
    penalties.penalize(h.nodeId, out.mismatch ? 'integrity' : 'unreachable');
    // Its clients are cut off: wrong bytes at the end, or stopped and not completed.
    if (out.mismatch || out.resumed) core.metrics?.peerIntegrity?.('aborted');
    if (out.mismatch && out.resumed && !out.resumed.refused && out.body && sha256.length > 0) {
      proven(core, ctx, h.nodeId, winner.responseTime, res.status, fields, sha256, out);
    }
  }
  return true;
}

/**
 * A member's copy completed from the origin (under its own validators) is not what it announced:
 * the bytes it sent, or the hash it announced for them, were a lie — this node's own evidence.
 */
function proven(
  core: ProxyCore,
  ctx: RequestCtx,
  member: string,
  responseTime: number,
  status: number,
  fields: Record<string, string>,
  announced: string[],
  out: StreamResult,
): void {
  const assembled = out.body!;
  const lifetime = responseRules(status, fields, core.policy, responseTime).lifetime;
  const validators = {
    ...(fields['etag'] !== undefined ? { etag: fields['etag'] } : {}),
    ...(fields['last-modified'] !== undefined ? { lastModified: fields['last-modified'] } : {}),
    lifetime,
  };
  const evidence: AuditEvidence = {
    url: ctx.url,
    disagreements: ['bytes'],
    proof: true,
    member: { size: assembled.size, sha256: announced[0]!, ...validators },
    origin: { size: assembled.size, sha256: assembled.sha256, ...validators },
  };
  core.log.warn(
    { peer: member, url: ctx.url, at: out.resumed?.at, evidence },
    "a member's copy, completed from the origin under its validators, is not what it announced",
  );
  core.audit?.proven(member, ctx, evidence);
}

/**
 * The whole body of a member's answer of `length` bytes, each chunk within `idleMs` on the
 * clock; undefined when it stalls, fails, or is longer or shorter than `length`.
 */
function readWhole(
  core: ProxyCore,
  res: UpstreamResponse,
  length: number,
  idleMs: number,
): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    let timer: TimerHandle | undefined;
    const finish = (b: Buffer | undefined) => {
      if (done) return;
      done = true;
      timer?.cancel();
      if (!b) discard(res);
      resolve(b);
    };
    const arm = () => {
      timer?.cancel();
      timer = core.clock.setTimeout(() => finish(undefined), idleMs);
    };
    arm();
    res.body.on('data', (c: Buffer) => {
      size += c.length;
      if (size > length) return finish(undefined);
      chunks.push(c);
      arm();
    });
    res.body.on('end', () => finish(size === length ? Buffer.concat(chunks, size) : undefined));
    res.body.on('error', () => finish(undefined));
  });
}
