/**
 * The authoritative DNS redirector: UDP and TCP listeners, the query pipeline
 * (decode → answer cache → build → truncate → rate limit), and the admin views
 * (`recentDecisions()`, `probeCache()`, `stats()`).
 *
 * The hot path never touches dns2: a query whose (name, type, class, EDNS, location bucket) was
 * answered within the answer's TTL is served by copying the cached bytes and patching the id,
 * RD/CD and the question's letters. Everything else goes through {@link DnsServer.handlePacket}'s
 * general path, which builds records and encodes them with dns2.
 */
import dgram from 'node:dgram';
import dns from 'node:dns';
import { once } from 'node:events';
import net from 'node:net';
import { type Clock, type Random, systemClock, systemRandom } from '@coral/testkit';
import {
  AnswerBuilder,
  answerMeta,
  type AnswerMeta,
  type BuiltAnswer,
  type Peer,
} from '../answer/answer-builder.js';
import { AnswerCache } from '../cache/answer-cache.js';
import { HintWalks } from '../locate/hint-walks.js';
import { compileViews, type LocationContext, Locator } from '../locate/locator.js';
import { DnsConfigError, DnsListenError, DnsStateError } from '../errors.js';
import { parseCidr, parseIp } from '../net/ip.js';
import type { NodeDirectory } from '../node-directory.js';
import { type Prober, TcpConnectProber } from '../probe/prober.js';
import { type ProbeEntry, ResolverProbes } from '../probe/resolver-probes.js';
import { ResponseRateLimiter, type RrlVerdict } from '../rrl/response-rate-limiter.js';
import { checkLimits } from './validate.js';
import {
  DEFAULT_TCP_IPV4_PREFIX,
  DEFAULT_TCP_IPV6_PREFIX,
  DEFAULT_TCP_MAX_CONNECTIONS_PER_SOURCE,
  TcpConnections,
} from './tcp.js';
import { CLASS, RCODE, RCODE_NAME, TYPE } from '../wire/constants.js';
import { encodeBare, patchCached } from '../wire/encode.js';
import { type DecodeResult, decodeQuery, type Query, udpLimit } from '../wire/query.js';
import type { ResponseOpt } from '../wire/records.js';
import {
  DEFAULT_ANSWER_CACHE_ENTRIES,
  DEFAULT_ANSWER_CACHE_MAX_BYTES,
  DEFAULT_DECISION_BUFFER_SIZE,
  DEFAULT_HINT_TIMEOUT_MS,
  DEFAULT_TCP_IDLE_TIMEOUT_MS,
  DEFAULT_TCP_MAX_CONNECTIONS,
  DEFAULT_TCP_MAX_MESSAGE_BYTES,
  DEFAULT_TCP_MAX_QUERIES_PER_CONNECTION,
  DEFAULT_UDP_RECEIVE_BUFFER_BYTES,
  type Decision,
  type DnsLogger,
  type DnsMetrics,
  type DnsServerComponents,
  type DnsServerOptions,
} from './types.js';

/** Cached answers live between (1 - CACHE_JITTER) and 1 times their TTL. */
const CACHE_JITTER = 0.25;

const noopLogger: DnsLogger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  isLevelEnabled: () => false,
};

interface Ring {
  at: number;
  transport: 'udp' | 'tcp';
  client: string;
  cached: boolean;
  outcome: Decision['outcome'];
  meta: AnswerMeta;
}

/** Counters returned by {@link DnsServer.stats}. */
export interface DnsStats {
  queries: { udp: number; tcp: number };
  responses: number;
  rcodes: Record<string, number>;
  methods: Record<string, number>;
  malformed: number;
  dropped: number;
  truncated: number;
  internalErrors: number;
  cache: { hits: number; misses: number; entries: number; bytes: number; evictions: number };
  hints: {
    walks: number;
    cacheHits: number;
    joined: number;
    stale: number;
    skippedRate: number;
    skippedBusy: number;
    timedOut: number;
    inFlight: number;
    entries: number;
  };
  rrl: { allowed: number; dropped: number; slipped: number; exempt: number; accounts: number };
  probes: {
    started: number;
    measured: number;
    unreachable: number;
    skippedBusy: number;
    skippedRate: number;
    skippedTarget: number;
    inFlight: number;
  };
  tcp: {
    /** Connections admitted. */
    connections: number;
    open: number;
    /** Closed on arrival: the table was full and every connection was owed an answer. */
    rejected: number;
    /** Closed on arrival: their source already had `tcp.maxConnectionsPerSource` open. */
    rejectedPerSource: number;
    /** Idle connections closed to admit a new one into a full table. */
    evicted: number;
    oversize: number;
    idleClosed: number;
  };
}

export class DnsServer {
  readonly #directory: NodeDirectory;
  readonly #clock: Clock;
  readonly #logger: DnsLogger;
  readonly #metrics: DnsMetrics | undefined;
  readonly #random: Random;
  readonly #probes: ResolverProbes;
  readonly #hints: HintWalks;
  readonly #locator: Locator;
  readonly #rrl: ResponseRateLimiter;

  readonly #answers: AnswerBuilder;
  readonly #udpRcvBuf: number;
  readonly #cacheOn: boolean;
  readonly #tcpConns: TcpConnections;

  /** Encoded answers by name, then by {@link variantKey} (type, class, EDNS flavour, ECS). */
  readonly #cache: AnswerCache;
  readonly #pending = new Map<string, Promise<BuiltAnswer>>();
  readonly #ring: (Ring | undefined)[];
  #ringNext = 0;

  #udp: dgram.Socket | undefined;
  #tcp: net.Server | undefined;
  #state: 'new' | 'listening' | 'closed' = 'new';

  readonly #c = {
    udp: 0,
    tcp: 0,
    responses: 0,
    rcodes: {} as Record<string, number>,
    methods: {} as Record<string, number>,
    malformed: 0,
    dropped: 0,
    truncated: 0,
    internalErrors: 0,
    hits: 0,
    misses: 0,
  };

  constructor(components: DnsServerComponents, options: DnsServerOptions = {}) {
    checkLimits(options as Record<string, unknown>);
    this.#directory = components.directory;
    this.#clock = components.clock ?? systemClock;
    this.#logger = components.logger ?? noopLogger;
    this.#metrics = components.metrics;
    this.#random = components.random ?? systemRandom;

    this.#udpRcvBuf = options.udpReceiveBufferBytes ?? DEFAULT_UDP_RECEIVE_BUFFER_BYTES;
    this.#cacheOn = options.answerCache?.enabled ?? true;
    this.#cache = new AnswerCache({
      maxEntries: options.answerCache?.maxEntries ?? DEFAULT_ANSWER_CACHE_ENTRIES,
      maxBytes: options.answerCache?.maxBytes ?? DEFAULT_ANSWER_CACHE_MAX_BYTES,
    });
    const tcp = options.tcp ?? {};
    this.#tcpConns = new TcpConnections(
      {
        clock: this.#clock,
        peerOf,
        respond: (frame, peer) => this.#respond(frame, peer, 'tcp'),
        internalError: (err) => this.#internalError(err),
      },
      {
        idleTimeoutMs: tcp.idleTimeoutMs ?? DEFAULT_TCP_IDLE_TIMEOUT_MS,
        maxMessageBytes: tcp.maxMessageBytes ?? DEFAULT_TCP_MAX_MESSAGE_BYTES,
        maxConnections: tcp.maxConnections ?? DEFAULT_TCP_MAX_CONNECTIONS,
        maxConnectionsPerSource:
          tcp.maxConnectionsPerSource ?? DEFAULT_TCP_MAX_CONNECTIONS_PER_SOURCE,
        maxQueriesPerConnection:
          tcp.maxQueriesPerConnection ?? DEFAULT_TCP_MAX_QUERIES_PER_CONNECTION,
        ipv4PrefixLength: tcp.ipv4PrefixLength ?? DEFAULT_TCP_IPV4_PREFIX,
        ipv6PrefixLength: tcp.ipv6PrefixLength ?? DEFAULT_TCP_IPV6_PREFIX,
      },
    );
    this.#ring = new Array(
      Math.max(1, options.decisionBufferSize ?? DEFAULT_DECISION_BUFFER_SIZE),
    ).fill(undefined);

    const probe = options.probe ?? {};
    const prober: Prober =
      components.prober ??
      new TcpConnectProber(
        { clock: this.#clock },
        {
          ...(probe.timeoutMs !== undefined ? { timeoutMs: probe.timeoutMs } : {}),
          ...(probe.port !== undefined ? { port: probe.port } : {}),
        },
      );
    this.#probes = new ResolverProbes(
      { prober, clock: this.#clock },
      {
        ...(probe.enabled !== undefined ? { enabled: probe.enabled } : {}),
        ...(probe.ttlMs !== undefined ? { ttlMs: probe.ttlMs } : {}),
        ...(probe.failureTtlMs !== undefined ? { failureTtlMs: probe.failureTtlMs } : {}),
        ...(probe.maxInFlight !== undefined ? { maxInFlight: probe.maxInFlight } : {}),
        ...(probe.maxPerSecond !== undefined ? { maxPerSecond: probe.maxPerSecond } : {}),
      },
    );
    this.#hints = new HintWalks(
      { directory: this.#directory, clock: this.#clock },
      options.hints ?? {},
    );
    this.#locator = new Locator(
      {
        directory: this.#directory,
        probes: this.#probes,
        hints: this.#hints,
        clock: this.#clock,
        random: this.#random,
      },
      {
        views: compileViews(options.views ?? []),
        hintTimeoutMs: options.hintTimeoutMs ?? DEFAULT_HINT_TIMEOUT_MS,
      },
    );
    this.#answers = new AnswerBuilder(
      { locator: this.#locator, random: this.#random, self: this.#directory.self() },
      options,
    );
    const { exempt, ...rrl } = options.rrl ?? {};
    this.#rrl = new ResponseRateLimiter(
      { clock: this.#clock },
      { ...rrl, exempt: (exempt ?? []).map(parseCidr) },
    );
  }

  // ───────────────────────────── listening ─────────────────────────────

  /** Bind UDP and/or TCP on `port` (0 = any free port, the same one for both). */
  async listen(opts: {
    port: number;
    host?: string;
    udp?: boolean;
    tcp?: boolean;
  }): Promise<{ port: number; host: string }> {
    if (this.#state !== 'new') throw new DnsStateError(`listen() on a ${this.#state} server`);
    this.#state = 'listening';
    const host = opts.host ?? '127.0.0.1';
    const wantUdp = opts.udp ?? true;
    const wantTcp = opts.tcp ?? true;
    if (!wantUdp && !wantTcp) throw new DnsConfigError('listen(): neither udp nor tcp');
    for (let attempt = 0; ; attempt++) {
      let port = opts.port;
      try {
        if (wantUdp) port = await this.#bindUdp(port, host);
        if (wantTcp) port = await this.#bindTcp(port, host);
        this.#logger.info(
          { component: 'dnssrv', host, port, zones: this.#answers.zones },
          'listening',
        );
        return { port, host };
      } catch (err) {
        this.#udp?.close();
        this.#udp = undefined;
        const code = (err as NodeJS.ErrnoException).code;
        // Port 0: UDP got a free port that TCP could not have; try another.
        if (opts.port === 0 && code === 'EADDRINUSE' && attempt < 10) continue;
        this.#state = 'closed';
        throw new DnsListenError(`cannot listen on ${host}:${opts.port}: ${String(err)}`, {
          cause: err,
        });
      }
    }
  }

  async #bindUdp(port: number, host: string): Promise<number> {
    const sock = dgram.createSocket({
      type: host.includes(':') ? 'udp6' : 'udp4',
      lookup: lookupLiteral,
    });
    // Listen first: with lookupLiteral, bind() can emit 'listening' before it returns.
    const listening = once(sock, 'listening'); // rejects with the bind error
    sock.bind(port, host);
    await listening;
    try {
      sock.setRecvBufferSize(this.#udpRcvBuf);
    } catch (err) {
      this.#logger.warn({ component: 'dnssrv', err }, 'cannot set the UDP receive buffer');
    }
    sock.on('error', (err) => this.#logger.warn({ err }, 'udp socket error'));
    sock.on('message', (msg, rinfo) => this.#onUdp(msg, rinfo));
    this.#udp = sock;
    return sock.address().port;
  }

  async #bindTcp(port: number, host: string): Promise<number> {
    // Half-open: a client may send its query and FIN at once (socket.end(frame)); our side
    // stays writable until every pending answer is written.
    const server = net.createServer({ allowHalfOpen: true }, (sock) => this.#onTcp(sock));
    // No server.maxConnections: TcpConnections admits (per-source and overall caps, idle eviction).
    const listening = once(server, 'listening'); // rejects with the listen error
    server.listen(port, host);
    await listening;
    server.on('error', (err) => this.#logger.warn({ err }, 'tcp server error'));
    this.#tcp = server;
    return (server.address() as net.AddressInfo).port;
  }

  async close(): Promise<void> {
    if (this.#state === 'closed' && !this.#udp && !this.#tcp) return;
    this.#state = 'closed';
    this.#probes.close();
    this.#hints.close();
    const udp = this.#udp;
    const tcp = this.#tcp;
    this.#udp = undefined;
    this.#tcp = undefined;
    this.#tcpConns.closeAll();
    await Promise.all([
      udp ? new Promise<void>((r) => udp.close(() => r())) : undefined,
      tcp ? new Promise<void>((r) => tcp.close(() => r())) : undefined,
    ]);
  }

  // ───────────────────────────── admin views ─────────────────────────────

  /** The most recent decisions, oldest first. */
  recentDecisions(): Decision[] {
    const out: Decision[] = [];
    const n = this.#ring.length;
    for (let i = 0; i < n; i++) {
      const r = this.#ring[(this.#ringNext + i) % n];
      if (!r) continue;
      const m = r.meta;
      out.push({
        at: r.at,
        transport: r.transport,
        client: r.client,
        name: m.name,
        type: m.type,
        rcode: RCODE_NAME[m.rcode] ?? String(m.rcode),
        method: m.method,
        detail: m.detail,
        nodes: [...m.nodes],
        ...(m.ttl !== undefined ? { ttl: m.ttl } : {}),
        ...(m.ecs !== undefined ? { ecs: m.ecs } : {}),
        ...(m.scope !== undefined ? { scope: m.scope } : {}),
        cached: r.cached,
        outcome: r.outcome,
      });
    }
    return out;
  }

  /** The resolver RTT cache (per /24). */
  probeCache(): ProbeEntry[] {
    return this.#probes.entries();
  }

  stats(): DnsStats {
    const c = this.#c;
    return {
      queries: { udp: c.udp, tcp: c.tcp },
      responses: c.responses,
      rcodes: { ...c.rcodes },
      methods: { ...c.methods },
      malformed: c.malformed,
      dropped: c.dropped,
      truncated: c.truncated,
      internalErrors: c.internalErrors,
      cache: {
        hits: c.hits,
        misses: c.misses,
        entries: this.#cache.entries,
        bytes: this.#cache.bytes,
        evictions: this.#cache.evictions,
      },
      hints: {
        ...this.#hints.counters,
        inFlight: this.#hints.inFlight,
        entries: this.#hints.entries,
      },
      rrl: { ...this.#rrl.counters, accounts: this.#rrl.accounts },
      probes: { ...this.#probes.counters, inFlight: this.#probes.inFlight },
      tcp: { ...this.#tcpConns.counters, open: this.#tcpConns.open },
    };
  }

  // ───────────────────────────── transports ─────────────────────────────

  #onUdp(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    let r: Buffer | null | Promise<Buffer | null>;
    try {
      r = this.#respond(msg, peerOf(rinfo.address, rinfo.port), 'udp');
    } catch (err) {
      this.#internalError(err);
      return;
    }
    if (r === null) return;
    if (r instanceof Promise) {
      r.then(
        (b) => {
          if (b) this.#sendUdp(b, rinfo);
        },
        (err) => this.#internalError(err),
      );
    } else {
      this.#sendUdp(r, rinfo);
    }
  }

  #sendUdp(b: Buffer, rinfo: dgram.RemoteInfo): void {
    try {
      // A forged source (port 0, ...) makes send() throw synchronously: never out of the loop.
      this.#udp?.send(b, rinfo.port, rinfo.address);
    } catch (err) {
      this.#logger.debug({ component: 'dnssrv', err, peer: rinfo.address }, 'udp send failed');
    }
  }

  #onTcp(sock: net.Socket): void {
    if (this.#state !== 'listening') {
      sock.destroy();
      return;
    }
    this.#tcpConns.accept(sock);
  }

  #internalError(err: unknown): void {
    this.#c.internalErrors++;
    this.#logger.error({ component: 'dnssrv', err }, 'internal error answering a query');
  }

  // ───────────────────────────── the pipeline ─────────────────────────────

  /**
   * Answer one DNS message as if it came from `peer` over `transport`: the bytes that would be
   * sent, or null when nothing would be (dropped, rate-limited). Never rejects for bad input.
   */
  async handlePacket(
    msg: Uint8Array,
    peer: { address: string; port: number },
    transport: 'udp' | 'tcp' = 'udp',
  ): Promise<Buffer | null> {
    return this.#respond(msg, peerOf(peer.address, peer.port), transport);
  }

  #respond(
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
      this.#internalError(err);
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
    // Ring slots are reused: a busy server writes one per query and should not allocate for it.
    const slot = this.#ring[this.#ringNext];
    if (slot) {
      slot.at = this.#clock.now();
      slot.transport = transport;
      slot.client = peer.address;
      slot.cached = cached;
      slot.outcome = outcome;
      slot.meta = meta;
    } else {
      this.#ring[this.#ringNext] = {
        at: this.#clock.now(),
        transport,
        client: peer.address,
        cached,
        outcome,
        meta,
      };
    }
    this.#ringNext = (this.#ringNext + 1) % this.#ring.length;
    // The reason for every answer, as log fields (debug level; not even built when disabled).
    if (this.#logger.isLevelEnabled?.('debug') !== false)
      this.#logger.debug(
        {
          component: 'dnssrv',
          client: peer.address,
          transport,
          name: meta.name,
          type: meta.type,
          rcode: meta.rcode,
          method: meta.method,
          reason: meta.detail,
          nodes: meta.nodes,
          cached,
          outcome,
        },
        'dns answer',
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

/**
 * The socket's address lookup. Replies go to the address a datagram came from, always an IP
 * literal: hand it back at once, where dns.lookup would answer it on the next tick (a closure and
 * a tick per reply). Anything else still goes through dns.lookup.
 */
const lookupLiteral = ((
  hostname: string,
  options: number | dns.LookupOneOptions,
  callback: (err: NodeJS.ErrnoException | null, address: string, family: number) => void,
): void => {
  const family = net.isIP(hostname);
  if (family !== 0) callback(null, hostname, family);
  else dns.lookup(hostname, typeof options === 'number' ? { family: options } : options, callback);
}) as dgram.SocketOptions['lookup'];

/**
 * Per source address: its bytes, and one string for it. Node makes a new address string for every
 * datagram; the decision ring keeps the last few hundred of them, so each scavenge would promote
 * the ones it finds there. The ring and everything else get this one instead.
 */
const peers = new Map<string, { address: string; bytes: Uint8Array }>();

function peerOf(address: string, port: number): Peer {
  let known = peers.get(address);
  if (!known) {
    known = { address, bytes: parseIp(address) ?? new Uint8Array(4) };
    if (peers.size >= 4096) peers.clear();
    peers.set(address, known);
  }
  return { address: known.address, port, bytes: known.bytes };
}
