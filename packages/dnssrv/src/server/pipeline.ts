/**
 * The query pipeline: decode → classify the name → answer cache → (build) → instantiate →
 * truncate → rate limit → log. Transports (UDP, TCP) hand it a message and a peer and send
 * whatever it returns.
 *
 * Answers are cached as templates shared by a family of names (every origin of a zone) and a
 * location bucket (see `wire/template.ts`), so a name never asked before costs what a repeated
 * one does: a memoised classification, two or three map reads, and one copy with a few pointers
 * patched. Builds (locating proxies, encoding records) happen once per template, and after the
 * first one off the hot path: a template past three quarters of its life is rebuilt in the
 * background by the next query that uses it, and an expired one is served (stale, for at most
 * one more life) while its rebuild runs. Liveness is re-checked on every use.
 */
import type { Clock, Random } from '@coral/runtime';
import type { AnswerBuilder, Built } from '../answer/answer-builder.js';
import { type AnswerMeta, answerMeta, type Peer } from '../answer/meta.js';
import type { AnswerCache } from '../cache/answer-cache.js';
import type { LocationContext, Locator } from '../locate/locator.js';
import type { NameClass, NameClassifier } from '../names/classify.js';
import type { NodeDirectory } from '../node-directory.js';
import type { ResponseRateLimiter, RrlVerdict } from '../rrl/response-rate-limiter.js';
import { CLASS, RCODE, RCODE_NAME, TYPE } from '../wire/constants.js';
import { encodeBare } from '../wire/encode.js';
import { type DecodeResult, decodeQuery, type Query, udpLimit } from '../wire/query.js';
import type { ResponseOpt } from '../wire/records.js';
import { instantiate } from '../wire/template.js';
import type { DecisionLog } from './decision-log.js';
import type { PipelineCounters } from './stats.js';
import type { Decision, DnsLogger, DnsMetrics } from './types.js';

/** Cached answers live between (1 - CACHE_JITTER) and 1 times their TTL. */
const CACHE_JITTER = 0.25;
/** Share of its life after which a used template is rebuilt in the background. */
const REFRESH_AT = 0.75;

type Named = Exclude<NameClass, { kind: 'outside' }>;
/** Names whose answers are cached (all but the ACME challenge, read from its store each time). */
type Cached = Exclude<Named, { kind: 'acme-challenge' }>;

export interface PipelineComponents {
  directory: NodeDirectory;
  clock: Clock;
  random: Random;
  logger: DnsLogger;
  metrics: DnsMetrics | undefined;
  names: NameClassifier;
  answers: AnswerBuilder;
  locator: Locator;
  cache: AnswerCache;
  rrl: ResponseRateLimiter;
  log: DecisionLog;
  counters: PipelineCounters;
}

export class QueryPipeline {
  readonly #directory: NodeDirectory;
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #logger: DnsLogger;
  readonly #metrics: DnsMetrics | undefined;
  readonly #names: NameClassifier;
  readonly #answers: AnswerBuilder;
  readonly #locator: Locator;
  readonly #cache: AnswerCache;
  readonly #rrl: ResponseRateLimiter;
  readonly #log: DecisionLog;
  readonly #c: PipelineCounters;
  readonly #cacheOn: boolean;
  /** Builds in flight, by cache key: concurrent misses (and refreshes) share one. */
  readonly #pending = new Map<string, Promise<Built>>();
  /** Background rebuilds about to start. */
  readonly #scheduled = new Set<string>();

  constructor(components: PipelineComponents, options: { cache: boolean }) {
    this.#directory = components.directory;
    this.#clock = components.clock;
    this.#random = components.random;
    this.#logger = components.logger;
    this.#metrics = components.metrics;
    this.#names = components.names;
    this.#answers = components.answers;
    this.#locator = components.locator;
    this.#cache = components.cache;
    this.#rrl = components.rrl;
    this.#log = components.log;
    this.#c = components.counters;
    this.#cacheOn = options.cache;
  }

  /** An exception or rejection while answering: logged and counted, never thrown out. */
  internalError(err: unknown): void {
    this.#c.internalErrors++;
    this.#logger.error({ component: 'dnssrv', err }, 'internal error answering a query');
  }

  /**
   * Answer one DNS message from `peer` over `transport`: the bytes to send, null when nothing is
   * sent (dropped, rate-limited), or a promise of either when the answer had to be built.
   */
  respond(
    msg: Uint8Array,
    peer: Peer,
    transport: 'udp' | 'tcp',
  ): Buffer | null | Promise<Buffer | null> {
    this.#c[transport]++;
    const d = decodeQuery(msg);
    if (!d.ok) return this.#malformed(d, msg, peer, transport);
    const q = d.query;
    if (q.opt && q.opt.version !== 0) {
      return this.#bare(q, msg, peer, transport, RCODE.BADVERS, false, 'EDNS version', '', {
        udpSize: this.#answers.udpMax,
        dnssecOk: q.opt.dnssecOk,
      });
    }
    if (q.qclass !== CLASS.IN && q.qclass !== CLASS.ANY) {
      return this.#bare(q, msg, peer, transport, RCODE.REFUSED, false, `class ${q.qclass}`);
    }
    if (q.qtype === TYPE.AXFR || q.qtype === TYPE.IXFR) {
      const detail = 'zone transfers not offered';
      return this.#bare(q, msg, peer, transport, RCODE.REFUSED, false, detail);
    }
    if (q.escaped) {
      // Names that needed escaping are never origins: NXDOMAIN in a zone, REFUSED outside.
      const z = this.#names.zoneOf(q.qname);
      if (!z) return this.#bare(q, msg, peer, transport, RCODE.REFUSED, false, 'outside the zones');
      const detail = 'name cannot be an origin';
      return this.#bare(q, msg, peer, transport, RCODE.NXDOMAIN, true, detail, z.zone.name);
    }
    const c = this.#names.classify(q.qname);
    if (c.kind === 'outside') {
      return this.#bare(q, msg, peer, transport, RCODE.REFUSED, false, 'outside the zones');
    }
    const ctx = this.#answers.needsLocation(q, c)
      ? this.#locator.context(peer.address, peer.bytes, q.opt?.ecs)
      : undefined;
    if (!this.#cacheOn || c.kind === 'acme-challenge') {
      return this.#miss(q, c, ctx, undefined, msg, peer, transport);
    }
    const variant = variantKey(q);
    const top = this.#cache.top(c.family, variant);
    const entry = ctx ? top?.byBucket?.get(ctx.bucket) : top?.static;
    if (entry) {
      const now = this.#clock.now();
      const built = entry.built;
      if (now < entry.staleUntil && this.#stillLive(built.liveIds)) {
        if (now >= entry.refreshAt) this.#refresh(q, c, ctx, variant);
        if (now >= entry.expiresAt) this.#c.stale++;
        this.#c.hits++;
        this.#cache.touch(entry);
        const bytes = instantiate(built.template, msg, q);
        return this.#finish(bytes, built.meta, detailOf(c, built), q, msg, peer, transport, true);
      }
    }
    this.#c.misses++;
    return this.#miss(q, c, ctx, variant, msg, peer, transport);
  }

  /** The cache key of a build: family, variant and (located answers) bucket. */
  #key(c: Cached, variant: number | string, ctx: LocationContext | undefined): string {
    return `${c.family}|${variant}#${ctx?.bucket ?? ''}`;
  }

  /** Build (or join the build of) the answer for this key; store it when it may be reused. */
  #build(
    q: Query,
    c: Cached,
    ctx: LocationContext | undefined,
    variant: number | string,
  ): Promise<Built> {
    const key = this.#key(c, variant, ctx);
    let p = this.#pending.get(key);
    if (!p) {
      p = this.#answers.build(q, c, ctx).then((built) => {
        this.#store(c.family, variant, ctx, built);
        return built;
      });
      this.#pending.set(key, p);
      p.finally(() => this.#pending.delete(key)).catch(() => {});
    }
    return p;
  }

  /**
   * A rebuild in the background (single flight). It starts after the I/O already waiting has been
   * served (setImmediate): the hit that asked for it is sent first, as it was, and a build's
   * synchronous part does not delay the queries queued behind it.
   */
  #refresh(q: Query, c: Cached, ctx: LocationContext | undefined, variant: number | string): void {
    const key = this.#key(c, variant, ctx);
    if (this.#pending.has(key) || this.#scheduled.has(key)) return;
    this.#scheduled.add(key);
    this.#c.refreshes++;
    setImmediate(() => {
      this.#scheduled.delete(key);
      this.#build(q, c, ctx, variant).catch((err) => this.internalError(err));
    });
  }

  /**
   * A miss: build the answer (shared with concurrent misses of its key and stored, or, with
   * `variant` undefined, for this query alone), then send it.
   */
  async #miss(
    q: Query,
    c: Named,
    ctx: LocationContext | undefined,
    variant: number | string | undefined,
    msg: Uint8Array,
    peer: Peer,
    transport: 'udp' | 'tcp',
  ): Promise<Buffer | null> {
    let built: Built;
    try {
      built =
        variant === undefined || c.kind === 'acme-challenge'
          ? await this.#answers.build(q, c, ctx)
          : await this.#build(q, c, ctx, variant);
      // No proxy: what a name gets depends on the name, so each query gets its own.
      if (built.noProxy && c.kind === 'origin') built = this.#answers.noProxy(q, c, built.noProxy);
    } catch (err) {
      this.internalError(err);
      return this.#bare(q, msg, peer, transport, RCODE.SERVFAIL, false, 'internal error');
    }
    const bytes = instantiate(built.template, msg, q);
    return this.#finish(bytes, built.meta, detailOf(c, built), q, msg, peer, transport, false);
  }

  #stillLive(ids: readonly string[]): boolean {
    const dir = this.#directory;
    if (!dir.isLive || ids.length === 0) return true;
    for (let i = 0; i < ids.length; i++) if (!dir.isLive(ids[i]!)) return false;
    return true;
  }

  #store(
    family: string,
    variant: number | string,
    ctx: LocationContext | undefined,
    built: Built,
  ): void {
    if (built.cacheMs <= 0 || built.noProxy) return;
    // Up to a quarter shorter at random, so answers cached together (a cold start, a burst of
    // new resolvers) do not all expire, and get rebuilt, in the same instant.
    const now = this.#clock.now();
    const life = built.cacheMs * (1 - CACHE_JITTER * this.#random.next());
    this.#cache.store(family, variant, built.located ? ctx?.bucket : undefined, built, {
      refreshAt: now + life * REFRESH_AT,
      expiresAt: now + life,
      staleUntil: now + 2 * life,
    });
  }

  /** Send-side steps shared by every response: TC, rate limiting, counters, decision log. */
  #finish(
    full: Buffer,
    meta: AnswerMeta,
    detail: string,
    q: Query | undefined,
    msg: Uint8Array,
    peer: Peer,
    transport: 'udp' | 'tcp',
    cached: boolean,
    /** The question a TC answer echoes (none for a malformed query). */
    echo: Query | undefined = q,
  ): Buffer | null {
    let bytes: Buffer | null = full;
    let outcome: Decision['outcome'] = 'sent';
    if (transport === 'udp') {
      if (full.length > udpLimit(echo, this.#answers.udpMax)) {
        bytes = this.#truncated(meta, echo, msg);
        outcome = 'truncated';
        this.#c.truncated++;
      }
      if (this.#rrl.enabled) {
        const verdict: RrlVerdict = this.#rrl.check(peer.bytes, meta.rrlKind, meta.rrlName);
        if (verdict !== 'send') {
          this.#metrics?.rateLimited();
          if (verdict === 'drop') {
            bytes = null;
            outcome = 'rrl-drop';
          } else {
            bytes = this.#truncated(meta, echo, msg);
            outcome = 'rrl-slip';
          }
        }
      }
    }
    this.#log.record(
      this.#clock.now(),
      transport,
      peer.address,
      q?.qname ?? '',
      q?.qtype ?? 0,
      cached,
      outcome,
      meta,
      detail,
    );
    if (bytes) {
      const rc = RCODE_NAME[meta.rcode] ?? String(meta.rcode);
      this.#c.responses++;
      this.#c.rcodes[rc] = (this.#c.rcodes[rc] ?? 0) + 1;
      this.#c.methods[meta.method] = (this.#c.methods[meta.method] ?? 0) + 1;
      this.#metrics?.answer(meta.method, rc);
    }
    return bytes;
  }

  #truncated(meta: AnswerMeta, q: Query | undefined, msg: Uint8Array): Buffer {
    return encodeBare({
      id: (msg[0]! << 8) | msg[1]!,
      queryFlags: (msg[2]! << 8) | msg[3]!,
      aa: meta.aa,
      tc: true,
      rcode: meta.rcode,
      ...(q ? { question: { msg, query: q } } : {}),
      ...(meta.opt ? { opt: meta.opt } : {}),
    });
  }

  #malformed(
    d: Extract<DecodeResult, { ok: false }>,
    msg: Uint8Array,
    peer: Peer,
    transport: 'udp' | 'tcp',
  ): Buffer | null {
    this.#c.malformed++;
    if (d.action === 'drop') {
      this.#c.dropped++;
      return null;
    }
    const rcode = d.action === 'notimp' ? RCODE.NOTIMP : RCODE.FORMERR;
    const meta = answerMeta({
      rcode,
      aa: false,
      method: 'none',
      detail: d.reason,
      nodes: [],
      rrlKind: 'error',
      rrlName: '',
    });
    const bytes = encodeBare({
      id: d.id ?? 0,
      queryFlags: d.flags ?? 0,
      aa: false,
      tc: false,
      rcode,
      ...(d.query ? { question: { msg, query: d.query } } : {}),
    });
    // The question (when readable) is logged, but not echoed in a TC answer: it was malformed.
    return this.#finish(bytes, meta, d.reason, d.query, msg, peer, transport, false, undefined);
  }

  #bare(
    q: Query,
    msg: Uint8Array,
    peer: Peer,
    transport: 'udp' | 'tcp',
    rcode: number,
    aa: boolean,
    detail: string,
    rrlName = '',
    opt?: ResponseOpt,
  ): Buffer | null {
    const { bytes, meta } = this.#answers.bare(q, msg, rcode, aa, detail, rrlName, opt);
    return this.#finish(bytes, meta, detail, q, msg, peer, transport, false);
  }
}

/** An invalid name's answer is shared by all of them; the reason in the log is the name's own. */
function detailOf(c: NameClass, built: Built): string {
  return c.kind === 'invalid' ? c.reason : built.meta.detail;
}

/**
 * Everything but the name that changes an answer's bytes: type, class (IN or ANY get this far),
 * EDNS or not and its DO bit, and the ECS option as sent. A small integer unless there is ECS.
 */
function variantKey(q: Query): number | string {
  const opt = q.opt;
  const k = q.qtype * 8 + (q.qclass === CLASS.ANY ? 4 : 0) + (!opt ? 0 : opt.dnssecOk ? 2 : 1);
  return opt?.ecs ? `${k}|${Buffer.from(opt.ecs.raw).toString('hex')}` : k;
}
