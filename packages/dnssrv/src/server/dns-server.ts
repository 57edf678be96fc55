/**
 * The authoritative DNS redirector: builds its parts from components and options, binds UDP and
 * TCP, and offers the admin views (`recentDecisions()`, `probeCache()`, `stats()`).
 *
 * The parts, one job each: `udp.ts` (the socket), `tcp.ts` (DNS over TCP: framing and connection
 * limits), `pipeline.ts` (decode → cache → build → truncate → rate limit), `decision-log.ts`
 * (why each answer was what it was), the answer builder and caches, the locator, the resolver
 * probes, the hint walks and the rate limiter.
 */
import type dgram from 'node:dgram';
import { once } from 'node:events';
import net from 'node:net';
import { ConnectionBudget, type ListenerBudget } from '@coral/connguard';
import { type Clock, type Random, systemClock, systemRandom } from '@coral/runtime';
import { AnswerBuilder, zonesAndNameservers } from '../answer/answer-builder.js';
import { AnswerCache, DEFAULT_ANSWER_CACHE_MAX_BYTES } from '../cache/answer-cache.js';
import { Delegation } from '../delegation/delegation.js';
import { NameClassifier } from '../names/classify.js';
import { HintWalks } from '../locate/hint-walks.js';
import { compileViews, Locator } from '../locate/locator.js';
import { DnsConfigError, DnsListenError, DnsStateError } from '../errors.js';
import { parseCidr } from '../net/ip.js';
import type { NodeDirectory } from '../node-directory.js';
import { type Prober, TcpConnectProber } from '../probe/prober.js';
import { type ProbeEntry, ResolverProbes } from '../probe/resolver-probes.js';
import { ResponseRateLimiter } from '../rrl/response-rate-limiter.js';
import { DecisionLog } from './decision-log.js';
import { peerOf } from './peers.js';
import { QueryPipeline } from './pipeline.js';
import { type DnsStats, PipelineCounters } from './stats.js';
import {
  DEFAULT_TCP_IPV4_PREFIX,
  DEFAULT_TCP_IPV6_PREFIX,
  DEFAULT_TCP_MAX_CONNECTIONS_PER_SOURCE,
  TcpConnections,
  tcpBudgetLimits,
} from './tcp.js';
import {
  DEFAULT_ANSWER_CACHE_ENTRIES,
  DEFAULT_DECISION_BUFFER_SIZE,
  DEFAULT_HINT_TIMEOUT_MS,
  DEFAULT_NS_TTL,
  DEFAULT_TCP_IDLE_TIMEOUT_MS,
  DEFAULT_TCP_MAX_CONNECTIONS,
  DEFAULT_TCP_MAX_MESSAGE_BYTES,
  DEFAULT_TCP_MAX_QUERIES_PER_CONNECTION,
  DEFAULT_UDP_RECEIVE_BUFFER_BYTES,
  type Decision,
  type DnsLogger,
  type DnsServerComponents,
  type DnsServerOptions,
} from './types.js';
import { UdpListener } from './udp.js';
import { checkDelegation, checkLimits } from './validate.js';

export type { DnsStats } from './stats.js';

const noopLogger: DnsLogger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  isLevelEnabled: () => false,
};

export class DnsServer {
  readonly #clock: Clock;
  readonly #logger: DnsLogger;
  readonly #random: Random;
  readonly #probes: ResolverProbes;
  readonly #hints: HintWalks;
  readonly #rrl: ResponseRateLimiter;
  readonly #answers: AnswerBuilder;
  readonly #names: NameClassifier;
  readonly #cache: AnswerCache;
  readonly #log: DecisionLog;
  readonly #counters = new PipelineCounters();
  readonly #pipeline: QueryPipeline;
  readonly #udp: UdpListener;
  readonly #udpRcvBuf: number;
  readonly #tcpConns: TcpConnections;
  readonly #tcpListener: ListenerBudget;
  #tcp: net.Server | undefined;
  #udpBound = false;
  #state: 'new' | 'listening' | 'closed' = 'new';

  constructor(components: DnsServerComponents, options: DnsServerOptions = {}) {
    checkLimits(options as Record<string, unknown>);
    const directory: NodeDirectory = components.directory;
    this.#clock = components.clock ?? systemClock;
    this.#logger = components.logger ?? noopLogger;
    this.#random = components.random ?? systemRandom;

    this.#udpRcvBuf = options.udpReceiveBufferBytes ?? DEFAULT_UDP_RECEIVE_BUFFER_BYTES;
    this.#cache = new AnswerCache({
      maxEntries: options.answerCache?.maxEntries ?? DEFAULT_ANSWER_CACHE_ENTRIES,
      maxBytes: options.answerCache?.maxBytes ?? DEFAULT_ANSWER_CACHE_MAX_BYTES,
    });
    this.#log = new DecisionLog(
      { logger: this.#logger },
      { size: options.decisionBufferSize ?? DEFAULT_DECISION_BUFFER_SIZE },
    );

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
    this.#hints = new HintWalks({ directory, clock: this.#clock }, options.hints ?? {});
    const locator = new Locator(
      {
        directory,
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
    const delegation = new Delegation(
      { directory, clock: this.#clock },
      checkDelegation(options.delegation ?? {}, options.nsTtl ?? DEFAULT_NS_TTL),
    );
    const { zones, nameservers } = zonesAndNameservers(options, directory.self());
    this.#names = new NameClassifier(zones, nameservers, {
      levels: delegation.levels,
      ...(options.answerCache?.maxNames !== undefined
        ? { memoSize: options.answerCache.maxNames }
        : {}),
    });
    this.#answers = new AnswerBuilder(
      {
        locator,
        random: this.#random,
        delegation,
        zones,
        nameservers,
        ...(components.challenges ? { challenges: components.challenges } : {}),
      },
      options,
    );
    const { exempt, ...rrl } = options.rrl ?? {};
    this.#rrl = new ResponseRateLimiter(
      { clock: this.#clock },
      { ...rrl, exempt: (exempt ?? []).map(parseCidr) },
    );
    this.#pipeline = new QueryPipeline(
      {
        directory,
        clock: this.#clock,
        random: this.#random,
        logger: this.#logger,
        metrics: components.metrics,
        names: this.#names,
        answers: this.#answers,
        locator,
        cache: this.#cache,
        rrl: this.#rrl,
        log: this.#log,
        counters: this.#counters,
      },
      { cache: options.answerCache?.enabled ?? true },
    );

    const tcp = options.tcp ?? {};
    // The node's budget (its ceiling spans every listener), else one of the server's own.
    const budget = components.connections ?? new ConnectionBudget({ clock: this.#clock });
    this.#tcpListener = budget.listener(
      'dns-tcp',
      tcpBudgetLimits({
        idleTimeoutMs: tcp.idleTimeoutMs ?? DEFAULT_TCP_IDLE_TIMEOUT_MS,
        maxConnections: tcp.maxConnections ?? DEFAULT_TCP_MAX_CONNECTIONS,
        maxConnectionsPerSource:
          tcp.maxConnectionsPerSource ?? DEFAULT_TCP_MAX_CONNECTIONS_PER_SOURCE,
        ipv4PrefixLength: tcp.ipv4PrefixLength ?? DEFAULT_TCP_IPV4_PREFIX,
        ipv6PrefixLength: tcp.ipv6PrefixLength ?? DEFAULT_TCP_IPV6_PREFIX,
      }),
    );
    this.#tcpConns = new TcpConnections(
      {
        listener: this.#tcpListener,
        peerOf,
        respond: (frame, peer) => this.#pipeline.respond(frame, peer, 'tcp'),
        internalError: (err) => this.#pipeline.internalError(err),
      },
      {
        maxMessageBytes: tcp.maxMessageBytes ?? DEFAULT_TCP_MAX_MESSAGE_BYTES,
        maxQueriesPerConnection:
          tcp.maxQueriesPerConnection ?? DEFAULT_TCP_MAX_QUERIES_PER_CONNECTION,
      },
    );
    this.#udp = new UdpListener({
      logger: this.#logger,
      onMessage: (msg, rinfo) => this.#onUdp(msg, rinfo),
    });
  }

  // ───────────────────────────── listening ─────────────────────────────

  /**
   * Bind UDP and/or TCP on `port` (0 = any free port, the same one for both). With `reusePort`
   * (SO_REUSEPORT) several servers — a node's worker threads — listen on the same port, and the
   * kernel spreads datagrams and connections over them by a hash of the client's address and port.
   */
  async listen(opts: {
    port: number;
    host?: string;
    udp?: boolean;
    tcp?: boolean;
    reusePort?: boolean;
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
        if (wantUdp) {
          port = await this.#udp.bind(port, host, this.#udpRcvBuf, opts.reusePort);
          this.#udpBound = true;
        }
        if (wantTcp) port = await this.#bindTcp(port, host, opts.reusePort ?? false);
        this.#logger.info(
          { component: 'dnssrv', host, port, zones: this.#answers.zones },
          'listening',
        );
        return { port, host };
      } catch (err) {
        await this.#udp.close();
        this.#udpBound = false;
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

  async #bindTcp(port: number, host: string, reusePort: boolean): Promise<number> {
    // Half-open: a client may send its query and FIN at once (socket.end(frame)); our side
    // stays writable until every pending answer is written.
    const server = net.createServer({ allowHalfOpen: true }, (sock) => this.#onTcp(sock));
    // No server.maxConnections: TcpConnections admits (per-source and overall caps, idle eviction).
    const listening = once(server, 'listening'); // rejects with the listen error
    server.listen({ port, host, ...(reusePort ? { reusePort: true } : {}) });
    await listening;
    // Accept errors (EMFILE, ENFILE, ENOMEM) come here while the server goes on listening.
    server.on('error', (err: NodeJS.ErrnoException) => {
      this.#tcpListener.acceptError(err.code ?? 'UNKNOWN');
      this.#logger.warn({ err }, 'tcp server error');
    });
    this.#tcp = server;
    return (server.address() as net.AddressInfo).port;
  }

  async close(): Promise<void> {
    if (this.#state === 'closed' && !this.#udpBound && !this.#tcp) return;
    this.#state = 'closed';
    this.#probes.close();
    this.#hints.close();
    const tcp = this.#tcp;
    this.#tcp = undefined;
    this.#udpBound = false;
    this.#tcpConns.closeAll();
    await Promise.all([
      this.#udp.close(),
      tcp ? new Promise<void>((r) => tcp.close(() => r())) : undefined,
    ]);
  }

  // ───────────────────────────── admin views ─────────────────────────────

  /** The most recent decisions, oldest first. */
  recentDecisions(): Decision[] {
    return this.#log.recent();
  }

  /** The resolver RTT cache (per /24). */
  probeCache(): ProbeEntry[] {
    return this.#probes.entries();
  }

  stats(): DnsStats {
    const c = this.#counters;
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
        stale: c.stale,
        refreshes: c.refreshes,
        entries: this.#cache.entries,
        bytes: this.#cache.bytes,
        evictions: this.#cache.evictions,
        names: this.#names.size,
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

  /**
   * Answer one DNS message as if it came from `peer` over `transport`: the bytes that would be
   * sent, or null when nothing would be (dropped, rate-limited). Never rejects for bad input.
   */
  async handlePacket(
    msg: Uint8Array,
    peer: { address: string; port: number },
    transport: 'udp' | 'tcp' = 'udp',
  ): Promise<Buffer | null> {
    return this.#pipeline.respond(msg, peerOf(peer.address, peer.port), transport);
  }

  #onUdp(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    let r: Buffer | null | Promise<Buffer | null>;
    try {
      r = this.#pipeline.respond(msg, peerOf(rinfo.address, rinfo.port), 'udp');
    } catch (err) {
      this.#pipeline.internalError(err);
      return;
    }
    if (r === null) return;
    if (r instanceof Promise) {
      r.then(
        (b) => {
          if (b) this.#udp.send(b, rinfo);
        },
        (err) => this.#pipeline.internalError(err),
      );
    } else {
      this.#udp.send(r, rinfo);
    }
  }

  #onTcp(sock: net.Socket): void {
    if (this.#state !== 'listening') {
      sock.destroy();
      return;
    }
    this.#tcpConns.accept(sock);
  }
}
