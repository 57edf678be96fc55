/**
 * The query pipeline: decode → answer cache → build → truncate → rate limit → log. Transports
 * (UDP, TCP) hand it a message and a peer and send whatever it returns.
 *
 * The hot path never touches dns2: a query whose (name, type, class, EDNS, location bucket) was
 * answered within the answer's TTL is served by copying the cached bytes and patching the id,
 * RD/CD and the question's letters. Everything else goes through the answer builder, which
 * builds records and encodes them with dns2.
 */
import type { Clock, Random } from '@coral/testkit';
import {
  type AnswerBuilder,
  answerMeta,
  type AnswerMeta,
  type BuiltAnswer,
  type Peer,
} from '../answer/answer-builder.js';
import type { AnswerCache } from '../cache/answer-cache.js';
import type { LocationContext, Locator } from '../locate/locator.js';
import type { NodeDirectory } from '../node-directory.js';
import type { ResponseRateLimiter, RrlVerdict } from '../rrl/response-rate-limiter.js';
import { CLASS, RCODE, RCODE_NAME, TYPE } from '../wire/constants.js';
import { encodeBare, patchCached } from '../wire/encode.js';
import { type DecodeResult, decodeQuery, type Query, udpLimit } from '../wire/query.js';
import type { ResponseOpt } from '../wire/records.js';
import type { DecisionLog } from './decision-log.js';
import type { PipelineCounters } from './stats.js';
import type { Decision, DnsLogger, DnsMetrics } from './types.js';

/** Cached answers live between (1 - CACHE_JITTER) and 1 times their TTL. */
const CACHE_JITTER = 0.25;

export interface PipelineComponents {
  directory: NodeDirectory;
  clock: Clock;
  random: Random;
  logger: DnsLogger;
  metrics: DnsMetrics | undefined;
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
  readonly #answers: AnswerBuilder;
  readonly #locator: Locator;
  readonly #cache: AnswerCache;
  readonly #rrl: ResponseRateLimiter;
  readonly #log: DecisionLog;
  readonly #c: PipelineCounters;
  readonly #cacheOn: boolean;
  readonly #pending = new Map<string, Promise<BuiltAnswer>>();

  constructor(components: PipelineComponents, options: { cache: boolean }) {
    this.#directory = components.directory;
    this.#clock = components.clock;
    this.#random = components.random;
    this.#logger = components.logger;
    this.#metrics = components.metrics;
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
      return this.#bare(q, msg, peer, transport, RCODE.BADVERS, false, 'EDNS version', {
        udpSize: this.#answers.udpMax,
        dnssecOk: q.opt.dnssecOk,
      });
    }
    if (q.qclass !== CLASS.IN && q.qclass !== CLASS.ANY) {
      return this.#bare(q, msg, peer, transport, RCODE.REFUSED, false, `class ${q.qclass}`);
    }
    if (q.qtype === TYPE.AXFR || q.qtype === TYPE.IXFR) {
      return this.#bare(
        q,
        msg,
        peer,
        transport,
        RCODE.REFUSED,
        false,
        'zone transfers not offered',
      );
    }
    const cacheable = this.#cacheOn && !q.escaped;
    const variant = cacheable ? variantKey(q) : 0;
    let ctx: LocationContext | undefined;
    if (cacheable) {
      const top = this.#cache.top(q.qname, variant);
      if (top) {
        let entry = top.static;
        if (!entry && top.byBucket) {
          ctx = this.#context(q, peer);
          entry = top.byBucket.get(ctx.bucket);
        }
        if (entry && entry.expiresAt > this.#clock.now() && this.#stillLive(entry.meta.nodes)) {
          this.#c.hits++;
          this.#cache.touch(entry);
          return this.#finish(
            patchCached(entry.bytes, msg, q),
            entry.meta,
            q,
            msg,
            peer,
            transport,
            true,
          );
        }
      }
      this.#c.misses++;
    }
    return this.#miss(q, msg, peer, transport, variant, cacheable, ctx);
  }

  async #miss(
    q: Query,
    msg: Uint8Array,
    peer: Peer,
    transport: 'udp' | 'tcp',
    variant: number | string,
    cacheable: boolean,
    ctxIn: LocationContext | undefined,
  ): Promise<Buffer | null> {
    let built: BuiltAnswer;
    try {
      if (cacheable) {
        // Single flight: concurrent misses for the same answer share one build.
        const ctx = ctxIn ?? (this.#answers.needsLocation(q) ? this.#context(q, peer) : undefined);
        const flightKey = `${q.qname}|${variant}#${ctx?.bucket ?? ''}`;
        let p = this.#pending.get(flightKey);
        if (!p) {
          p = this.#answers.build(q, peer, ctx, msg);
          this.#pending.set(flightKey, p);
          p.finally(() => this.#pending.delete(flightKey)).catch(() => {});
        }
        built = await p;
        this.#store(q.qname, variant, built);
        built = {
          bytes: patchCached(built.bytes, msg, q),
          meta: built.meta,
          cacheMs: built.cacheMs,
          static: built.static,
          bucket: built.bucket,
        };
      } else {
        built = await this.#answers.build(q, peer, undefined, msg);
      }
    } catch (err) {
      this.internalError(err);
      return this.#bare(q, msg, peer, transport, RCODE.SERVFAIL, false, 'internal error');
    }
    return this.#finish(built.bytes, built.meta, q, msg, peer, transport, false);
  }

  #context(q: Query, peer: Peer): LocationContext {
    return this.#locator.context(peer.address, peer.bytes, q.opt?.ecs);
  }

  #stillLive(ids: string[]): boolean {
    const dir = this.#directory;
    if (!dir.isLive) return true;
    for (let i = 0; i < ids.length; i++) if (!dir.isLive(ids[i]!)) return false;
    return true;
  }

  #store(qname: string, variant: number | string, built: BuiltAnswer): void {
    if (built.cacheMs <= 0) return;
    // Up to a quarter shorter at random, so answers cached together (a cold start, a burst of
    // new names) do not all expire, and get rebuilt, in the same instant.
    const expiresAt = this.#clock.now() + built.cacheMs * (1 - CACHE_JITTER * this.#random.next());
    this.#cache.store(
      qname,
      variant,
      built.static ? undefined : built.bucket!,
      built.bytes,
      built.meta,
      expiresAt,
      sameMeta,
    );
  }

  /** Send-side steps shared by every response: TC, rate limiting, counters, decision log. */
  #finish(
    full: Buffer,
    meta: AnswerMeta,
    q: Query | undefined,
    msg: Uint8Array,
    peer: Peer,
    transport: 'udp' | 'tcp',
    cached: boolean,
  ): Buffer | null {
    let bytes: Buffer | null = full;
    let outcome: Decision['outcome'] = 'sent';
    if (transport === 'udp') {
      if (full.length > udpLimit(q, this.#answers.udpMax)) {
        bytes = this.#truncated(meta, q, msg);
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
            bytes = this.#truncated(meta, q, msg);
            outcome = 'rrl-slip';
          }
        }
      }
    }
    this.#log.record(
      this.#clock.now(),
      transport,
      peer.address,
      meta.name,
      meta.type,
      cached,
      outcome,
      meta,
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
      name: d.query?.qname ?? '',
      type: d.query?.qtype ?? 0,
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
    return this.#finish(bytes, meta, undefined, msg, peer, transport, false);
  }

  #bare(
    q: Query,
    msg: Uint8Array,
    peer: Peer,
    transport: 'udp' | 'tcp',
    rcode: number,
    aa: boolean,
    detail: string,
    opt?: ResponseOpt,
  ): Buffer | null {
    const { bytes, meta } = this.#answers.bare(q, msg, rcode, aa, detail, '', opt);
    return this.#finish(bytes, meta, q, msg, peer, transport, false);
  }
}

/** Two metas that say the same (a rebuilt answer that chose the same way and the same nodes). */
function sameMeta(a: AnswerMeta, b: AnswerMeta): boolean {
  if (a.nodes.length !== b.nodes.length) return false;
  for (let i = 0; i < a.nodes.length; i++) if (a.nodes[i] !== b.nodes[i]) return false;
  return (
    a.name === b.name &&
    a.type === b.type &&
    a.rcode === b.rcode &&
    a.aa === b.aa &&
    a.method === b.method &&
    a.detail === b.detail &&
    a.ttl === b.ttl &&
    a.ecs === b.ecs &&
    a.scope === b.scope &&
    a.rrlKind === b.rrlKind &&
    a.rrlName === b.rrlName &&
    a.opt?.udpSize === b.opt?.udpSize &&
    a.opt?.dnssecOk === b.opt?.dnssecOk &&
    a.opt?.ecs?.scopePrefix === b.opt?.ecs?.scopePrefix
  );
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
