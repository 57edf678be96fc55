/**
 * The sampled audit of member-served objects (DESIGN.md "Trust, but audit"; issue 31 item 3).
 * A fleet key admits a member; it does not make it honest. A fraction (`auditFraction`) of the
 * copies this node stores from members — every one from a member another member reported — is
 * fetched again by this node from the origin itself, in the background, and compared
 * (./verdict.ts): bytes (size, SHA-256), validators (ETag, Last-Modified), declared freshness.
 *
 * Bounded so that nobody can turn it into origin load: at most `auditConcurrency` audits at once
 * and `auditsPerMinute` started per minute (a sample beyond either is skipped and counted), and
 * members' reports get a budget of their own (`reportsPerMinute`), so a flood of reports can
 * neither spend the audits' nor make this node fetch more than that from origins.
 *
 * A member whose copy disagrees is quarantined here (./quarantine.ts), logged at error with the
 * evidence, and reported (`onQuarantine`: the node package sends it, signed, to every member).
 * Its copy is replaced by the origin's (the audit's own fetch is stored like any origin fetch),
 * and every other copy this node took from it lately is dropped, to be fetched again when asked.
 *
 * A member's report never quarantines on its own (a liar would report honest members): the
 * accused becomes a suspect here for `suspectSeconds` (every copy from it audited), and the
 * reported object is checked at once — this node asks the accused for it and the origin for it,
 * and judges for itself. Only its own evidence quarantines.
 *
 * A member can also be caught without an audit: a copy it streamed that failed mid-body and was
 * completed from the origin (../fetch/resume.ts) whose assembled bytes are not the ones it
 * announced (`proven`) — the origin's part came under the member's own validators, so the member's
 * part or its hash was a lie. That is this node's own evidence too, and takes the same path.
 */
import { createHash } from 'node:crypto';
import type { TimerHandle } from '@coral/runtime';
import { responseRules } from '../cache/policy.js';
import { forwardHeaders } from '../fetch/request-headers.js';
import { discard, streamResponse } from '../fetch/response.js';
import type { UpstreamResponse } from '../origin/upstream.js';
import { racePeers } from '../peer/peer-fetch.js';
import type { MemberAudit, ProxyCore, RequestCtx } from '../kit/core.js';
import { toRecord } from '../kit/headers.js';
import { codedOf } from '../kit/encoding.js';
import { withdraw } from '../commit/announce.js';
import type { StoredMeta } from '../store/types.js';
import { Transfer } from '../transfer/transfer.js';
import type {
  AuditEvidence,
  MemberQuarantine,
  MemberReport,
  QuarantineEntry,
} from './quarantine.js';
import { judge } from './verdict.js';
import type { AuditedCopy, Verdict } from './verdict.js';

export interface AuditorOptions {
  fraction: number;
  perMinute: number;
  concurrency: number;
  reportsPerMinute: number;
}

export interface AuditorComponents {
  core: ProxyCore;
  quarantine: MemberQuarantine;
  /** The members as they are (not the quarantine's view): the accused is asked at its address. */
  members: ProxyCore['members'];
  random: () => number;
  /** Host and canonical path → the origin URL this node maps them to (undefined: it maps none). */
  map: (host: string, path: string) => string | undefined;
  onQuarantine?: (report: MemberReport, entry: QuarantineEntry) => void;
}

/** Copies remembered with the member they came from (dropped when it is quarantined). */
const PROVENANCE_MAX = 10_000;

export class MemberAuditor implements MemberAudit {
  readonly #c: AuditorComponents;
  readonly #o: AuditorOptions;
  #running = 0;
  readonly #started: number[] = [];
  readonly #reportsTaken: number[] = [];
  /** Variant key → the member its stored copy came from (most recent last). */
  readonly #provenance = new Map<string, string>();

  constructor(components: AuditorComponents, options: AuditorOptions) {
    this.#c = components;
    this.#o = options;
  }

  /**
   * A copy from `member` was stored for `ctx` (keyed mode): remember where it came from, and audit
   * it when sampled (always, from a suspect).
   */
  served(member: string, ctx: RequestCtx, copy: StoredMeta): void {
    const id = member.toLowerCase();
    this.#provenance.delete(copy.key);
    if (this.#provenance.size >= PROVENANCE_MAX) {
      this.#provenance.delete(this.#provenance.keys().next().value!);
    }
    this.#provenance.set(copy.key, id);
    const rate = this.#c.quarantine.suspected(id) ? 1 : this.#o.fraction;
    if (rate <= 0 || this.#c.random() >= rate) return;
    const metrics = this.#c.core.metrics;
    if (!this.#take(this.#started, this.#o.perMinute) || this.#running >= this.#o.concurrency) {
      metrics?.audit?.('skipped');
      return;
    }
    this.#run(() => this.#audit(id, ctx, copy));
  }

  /**
   * A member reported `report.member` (signed by the fleet's keys: `reporter` is who it says it
   * is). The accused becomes a suspect; the object is checked here when the report budget allows.
   */
  reported(report: MemberReport, reporter: string): void {
    const { core, quarantine } = this.#c;
    const id = report.member.toLowerCase();
    const metrics = core.metrics;
    if (id === core.self.nodeId.toLowerCase() || quarantine.quarantined(id)) {
      metrics?.memberReport?.('ignored');
      return;
    }
    quarantine.suspect(id, reporter);
    core.log.warn(
      { member: id, reporter, url: report.url, evidence: report.evidence },
      'a member reported another for serving copies the origin disagrees with: auditing it',
    );
    if (
      this.#c.map(report.host, report.path) !== report.url ||
      !this.#take(this.#reportsTaken, this.#o.reportsPerMinute)
    ) {
      metrics?.memberReport?.('unchecked');
      return;
    }
    this.#run(() => this.#confirm(id, report));
  }

  #run(task: () => Promise<void>): void {
    const core = this.#c.core;
    this.#running++;
    const p = task()
      .catch((e: unknown) => {
        core.metrics?.audit?.('error');
        core.log.warn({ err: String(e) }, 'member audit failed');
      })
      .finally(() => {
        this.#running--;
        core.tasks.delete(p);
      });
    core.tasks.add(p);
  }

  /** One more start within the last minute, if fewer than `max` were. */
  #take(starts: number[], max: number): boolean {
    const now = this.#c.core.clock.now();
    while (starts.length > 0 && starts[0]! <= now - 60_000) starts.shift();
    if (starts.length >= max) return false;
    starts.push(now);
    return true;
  }

  async #audit(member: string, ctx: RequestCtx, copy: StoredMeta): Promise<void> {
    const core = this.#c.core;
    const claim = stored(core, copy);
    const first = await this.#fromOrigin(ctx);
    let verdict = judge(claim, first);
    if (verdict.kind === 'inconclusive' && verdict.reason === 'needs-second-look') {
      verdict = judge(claim, first, await this.#hashOrigin(ctx.url, forwardHeaders(core, ctx)));
    }
    this.#conclude(member, verdict, claim, first, { host: ctx.host, path: ctx.path, url: ctx.url });
  }

  async #confirm(member: string, report: MemberReport): Promise<void> {
    const core = this.#c.core;
    const metrics = core.metrics;
    const claim = await this.#askMember(member, report);
    if (!claim) {
      metrics?.memberReport?.('unconfirmed');
      return;
    }
    const first = await this.#hashOrigin(report.url, {});
    let verdict = judge(claim, first);
    if (verdict.kind === 'inconclusive' && verdict.reason === 'needs-second-look') {
      verdict = judge(claim, first, await this.#hashOrigin(report.url, {}));
    }
    metrics?.memberReport?.(verdict.kind === 'lied' ? 'confirmed' : 'unconfirmed');
    this.#conclude(member, verdict, claim, first, report, 'report');
  }

  #conclude(
    member: string,
    verdict: Verdict,
    claim: AuditedCopy,
    origin: AuditedCopy,
    target: { host: string; path: string; url: string },
    found: QuarantineEntry['found'] = 'audit',
  ): void {
    const core = this.#c.core;
    core.metrics?.audit?.(verdict.kind);
    if (verdict.kind !== 'lied') {
      core.log.debug({ member, url: target.url, verdict }, 'member audit');
      return;
    }
    const evidence: AuditEvidence = {
      url: target.url,
      disagreements: verdict.disagreements,
      proof: verdict.proof,
      member: facts(claim),
      origin: facts(origin),
    };
    this.#quarantine(member, found, evidence, target);
  }

  /**
   * `member` streamed a copy for `ctx` that was completed from the origin under its own
   * validators, and the whole is not what it announced (`evidence.member`: its claim;
   * `evidence.origin`: the assembled body): quarantined here, as by an audit.
   */
  proven(member: string, ctx: RequestCtx, evidence: AuditEvidence): void {
    this.#quarantine(member.toLowerCase(), 'stream', evidence, {
      host: ctx.host,
      path: ctx.path,
      url: ctx.url,
    });
  }

  #quarantine(
    member: string,
    found: QuarantineEntry['found'],
    evidence: AuditEvidence,
    target: { host: string; path: string; url: string },
  ): void {
    const core = this.#c.core;
    const entry = this.#c.quarantine.add(member, found, evidence);
    core.log.error(
      {
        member,
        until: new Date(entry.until).toISOString(),
        quarantines: entry.count,
        evidence,
      },
      'a member served a copy the origin disagrees with: quarantined (its answers and designation skipped), its copies here dropped',
    );
    void this.#dropCopies(member, evidence.member.sha256, target.url);
    this.#c.onQuarantine?.({ member, ...target, evidence }, entry);
  }

  /** Every copy this node took from `member` lately, and any it holds of the lie, are dropped. */
  async #dropCopies(member: string, lie: string, url: string): Promise<void> {
    const core = this.#c.core;
    const keys = [...this.#provenance].filter(([, m]) => m === member).map(([k]) => k);
    for (const k of keys) this.#provenance.delete(k);
    const primaries = new Set<string>();
    for (const key of keys) {
      const meta = await core.store.get(key);
      if (!meta) continue;
      // A copy the origin replaced since (the audit's own fetch) is the origin's: kept. A coded
      // copy is known by its identity form's hash, as the evidence is (`stored` below).
      const sha = codedOf(meta.headers)?.sha256 ?? meta.sha256;
      if (meta.url === url && sha !== lie) continue;
      await core.store.delete(key);
      core.hot.delete(key);
      primaries.add(meta.primary);
    }
    for (const p of primaries) {
      if (!core.store.has(p)) await withdraw(core, Buffer.from(p, 'hex'));
    }
  }

  /** The origin's answer to `ctx`, fetched and stored like any origin fetch (it replaces the member's). */
  async #fromOrigin(ctx: RequestCtx): Promise<AuditedCopy> {
    const core = this.#c.core;
    const t = new Transfer(ctx.primary);
    const requestTime = core.clock.now();
    const res = await this.#request({
      url: ctx.url,
      method: 'GET',
      headers: unconditional(forwardHeaders(core, ctx)),
    });
    const responseTime = core.clock.now();
    const headers = toRecord(res.headers);
    try {
      const out = await streamResponse(core, { ctx, transfer: t, unregister: () => {} }, res, {
        requestTime,
        responseTime,
        fwd: 'uri-miss',
        source: 'origin',
        audit: true,
      });
      if (!out.ok || !out.body) return failed(res.status);
      return copyOf(core, res.status, headers, out.body, responseTime);
    } finally {
      t.bodySettled();
    }
  }

  /** An origin request of the audit's; one that gets no answer is a failed audit fetch. */
  async #request(req: Parameters<ProxyCore['origin']['request']>[0]): Promise<UpstreamResponse> {
    try {
      return await this.#c.core.origin.request(req);
    } catch (err) {
      this.#c.core.metrics?.auditFetch?.(0, false);
      throw err;
    }
  }

  /** The origin's answer for `url`, hashed and not kept. */
  async #hashOrigin(url: string, headers: Record<string, string>): Promise<AuditedCopy> {
    const core = this.#c.core;
    const res = await this.#request({ url, method: 'GET', headers: unconditional(headers) });
    const responseTime = core.clock.now();
    const body = await hashBody(core, res, ORIGIN_IDLE_MS);
    core.metrics?.auditFetch?.(body?.size ?? 0, body !== undefined);
    if (!body) return failed(res.status);
    return copyOf(core, res.status, toRecord(res.headers), body, responseTime);
  }

  /** What the accused serves for the reported object, asked as a peer (its cache only). */
  async #askMember(member: string, report: MemberReport): Promise<AuditedCopy | undefined> {
    const core = this.#c.core;
    const m = this.#c.members?.member(member);
    if (!m) return undefined;
    const holder = { nodeId: member, ip: m.ip, httpPort: m.httpPort, state: 'complete' as const };
    const winner = await racePeers(
      {
        upstream: core.peers,
        clock: core.clock,
        connector: core.peerConnector,
        ...(core.peerAuth ? { auth: core.peerAuth } : {}),
      },
      [{ holder, ip: m.ip, httpPort: m.httpPort }],
      {
        path: report.path,
        host: report.host,
        headers: {},
        nodeId: core.self.nodeId,
        via: core.via,
      },
      () => core.limits.peerTimeoutMs,
    );
    if (!winner) return undefined;
    const body = await hashBody(core, winner.response, core.limits.peerTimeoutMs);
    if (!body) {
      winner.abort();
      return undefined;
    }
    return copyOf(
      core,
      winner.response.status,
      toRecord(winner.response.headers),
      body,
      winner.responseTime,
    );
  }
}

/** Idle bound on an origin body read by the audit alone (ms, clock). */
const ORIGIN_IDLE_MS = 30_000;

function unconditional(h: Record<string, string>): Record<string, string> {
  const out = { ...h };
  for (const k of [
    'if-none-match',
    'if-modified-since',
    'if-match',
    'if-unmodified-since',
    'if-range',
    'range',
  ])
    delete out[k];
  return out;
}

function failed(status: number): AuditedCopy {
  return { status: status === 200 ? 0 : status, size: -1, sha256: '', lifetime: 0 };
}

function copyOf(
  core: ProxyCore,
  status: number,
  headers: Record<string, string>,
  body: { size: number; sha256: string },
  responseTime: number,
): AuditedCopy {
  return {
    status,
    ...body,
    etag: headers['etag'],
    lastModified: headers['last-modified'],
    date: headers['date'],
    lifetime: responseRules(status, headers, core.policy, responseTime).lifetime,
  };
}

/** The member's copy as stored (its freshness as declared: the cap raised its age, not this). */
function stored(core: ProxyCore, m: StoredMeta): AuditedCopy {
  // A coded copy (../kit/encoding.ts) is compared by its identity form, checked at its commit.
  const coded = codedOf(m.headers);
  return copyOf(
    core,
    m.status,
    m.headers,
    coded ? { size: coded.length, sha256: coded.sha256 } : { size: m.size, sha256: m.sha256 },
    m.facts.responseTime,
  );
}

function facts(c: AuditedCopy): AuditEvidence['member'] {
  return {
    size: c.size,
    sha256: c.sha256,
    ...(c.etag !== undefined ? { etag: c.etag } : {}),
    ...(c.lastModified !== undefined ? { lastModified: c.lastModified } : {}),
    lifetime: c.lifetime,
  };
}

/** Size and SHA-256 of a whole body (at most `maxObjectBytes`, each chunk within `idleMs`). */
function hashBody(
  core: ProxyCore,
  res: UpstreamResponse,
  idleMs: number,
): Promise<{ size: number; sha256: string } | undefined> {
  return new Promise((resolve) => {
    const hash = createHash('sha256');
    let size = 0;
    let done = false;
    let timer: TimerHandle | undefined;
    const finish = (ok: boolean) => {
      if (done) return;
      done = true;
      timer?.cancel();
      if (!ok) discard(res);
      resolve(ok ? { size, sha256: hash.digest('hex') } : undefined);
    };
    const arm = () => {
      timer?.cancel();
      timer = core.clock.setTimeout(() => finish(false), idleMs);
    };
    arm();
    res.body.on('data', (c: Buffer) => {
      size += c.length;
      if (size > core.limits.maxObjectBytes) return finish(false);
      hash.update(c);
      arm();
    });
    res.body.on('end', () => finish(true));
    res.body.on('error', () => finish(false));
  });
}
