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
import net from 'node:net';
import { type Clock, type Random, systemClock, systemRandom } from '@coral/testkit';
import { compileViews, type LocationContext, Locator } from '../locate/locator.js';
import { DnsConfigError, DnsListenError, DnsStateError } from '../errors.js';
import { normalizeZone, parseCoralName } from '../names/coral-name.js';
import { formatIp, parseCidr, parseIp } from '../net/ip.js';
import type { NodeDirectory } from '../node-directory.js';
import { type Prober, TcpConnectProber } from '../probe/prober.js';
import { type ProbeEntry, ResolverProbes } from '../probe/resolver-probes.js';
import {
  ResponseRateLimiter,
  type RrlKind,
  type RrlVerdict,
} from '../rrl/response-rate-limiter.js';
import { CLASS, RCODE, RCODE_NAME, TYPE } from '../wire/constants.js';
import { encodeBare, encodeResponse, patchCached } from '../wire/encode.js';
import { type DecodeResult, decodeQuery, type Query, udpLimit } from '../wire/query.js';
import type { ResourceRecord, ResponseOpt } from '../wire/records.js';
import {
  DEFAULT_ANSWER_CACHE_ENTRIES,
  DEFAULT_ANSWER_COUNT,
  DEFAULT_CNAME_TTL,
  DEFAULT_DECISION_BUFFER_SIZE,
  DEFAULT_HINT_TIMEOUT_MS,
  DEFAULT_LOCAL_TTL,
  DEFAULT_NS_TTL,
  DEFAULT_SOA,
  DEFAULT_TCP_IDLE_TIMEOUT_MS,
  DEFAULT_TCP_MAX_CONNECTIONS,
  DEFAULT_TCP_MAX_MESSAGE_BYTES,
  DEFAULT_TCP_MAX_QUERIES_PER_CONNECTION,
  DEFAULT_TTL,
  DEFAULT_UDP_MAX_PAYLOAD,
  DEFAULT_UDP_RECEIVE_BUFFER_BYTES,
  DEFAULT_ZONES,
  type Decision,
  type DnsLogger,
  type DnsMetrics,
  type DnsServerComponents,
  type DnsServerOptions,
  type LocationMethod,
  type NameserverConfig,
} from './types.js';

const noopLogger: DnsLogger = { debug() {}, info() {}, warn() {}, error() {} };

interface Peer {
  address: string;
  port: number;
  bytes: Uint8Array;
}

/** Everything about a response except its bytes: what is logged, counted and rate-limited. */
interface Meta {
  name: string;
  type: number;
  rcode: number;
  aa: boolean;
  method: LocationMethod | 'none';
  detail: string;
  nodes: string[];
  ttl?: number;
  ecs?: string;
  scope?: number;
  opt?: ResponseOpt;
  rrlKind: RrlKind;
  rrlName: string;
}

interface Built {
  bytes: Buffer;
  meta: Meta;
  /** How long the encoded answer may be reused (0 = never). */
  cacheMs: number;
  /** True when the answer does not depend on where the client is. */
  static: boolean;
  bucket?: string;
}

interface CacheEntry {
  bytes: Buffer;
  meta: Meta;
  expiresAt: number;
}

interface CacheTop {
  static?: CacheEntry;
  byBucket?: Map<string, CacheEntry>;
}

interface Ring {
  at: number;
  transport: 'udp' | 'tcp';
  client: string;
  cached: boolean;
  outcome: Decision['outcome'];
  meta: Meta;
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
  cache: { hits: number; misses: number; entries: number };
  rrl: { allowed: number; dropped: number; slipped: number; exempt: number; accounts: number };
  probes: {
    started: number;
    measured: number;
    unreachable: number;
    skippedBusy: number;
    inFlight: number;
  };
  tcp: {
    connections: number;
    open: number;
    rejected: number;
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
  readonly #locator: Locator;
  readonly #rrl: ResponseRateLimiter;

  readonly #zones: string[];
  readonly #answerCount: number;
  readonly #ttl: number;
  readonly #localTtl: number;
  readonly #cnameTtl: number;
  readonly #nsTtl: number;
  readonly #nameservers: NameserverConfig[];
  readonly #nsByName = new Map<string, NameserverConfig>();
  readonly #soa: Required<Omit<NonNullable<DnsServerOptions['soa']>, 'mname' | 'rname'>> & {
    mname?: string;
    rname?: string;
  };
  readonly #udpMax: number;
  readonly #udpRcvBuf: number;
  readonly #cacheOn: boolean;
  readonly #cacheMax: number;
  readonly #tcpIdleMs: number;
  readonly #tcpMaxMessage: number;
  readonly #tcpMaxConnections: number;
  readonly #tcpMaxQueries: number;

  readonly #cache = new Map<string, CacheTop>();
  #cacheEntries = 0;
  readonly #pending = new Map<string, Promise<Built>>();
  readonly #ring: (Ring | undefined)[];
  #ringNext = 0;

  #udp: dgram.Socket | undefined;
  #tcp: net.Server | undefined;
  readonly #conns = new Set<net.Socket>();
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
    tcpConnections: 0,
    tcpRejected: 0,
    tcpOversize: 0,
    tcpIdleClosed: 0,
  };

  constructor(components: DnsServerComponents, options: DnsServerOptions = {}) {
    this.#directory = components.directory;
    this.#clock = components.clock ?? systemClock;
    this.#logger = components.logger ?? noopLogger;
    this.#metrics = components.metrics;
    this.#random = components.random ?? systemRandom;

    this.#zones = (options.zones ?? DEFAULT_ZONES).map(normalizeZone);
    if (
      this.#zones.length === 0 ||
      this.#zones.some((z) => !/^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/.test(z))
    ) {
      throw new DnsConfigError(
        `zones must be non-empty DNS names, got ${JSON.stringify(options.zones)}`,
      );
    }
    this.#answerCount = positiveInt('answerCount', options.answerCount ?? DEFAULT_ANSWER_COUNT);
    this.#ttl = nonNegativeInt('ttl', options.ttl ?? DEFAULT_TTL);
    this.#localTtl = nonNegativeInt('localTtl', options.localTtl ?? DEFAULT_LOCAL_TTL);
    this.#cnameTtl = nonNegativeInt('cnameTtl', options.cnameTtl ?? DEFAULT_CNAME_TTL);
    this.#nsTtl = nonNegativeInt('nsTtl', options.nsTtl ?? DEFAULT_NS_TTL);
    this.#soa = { ...DEFAULT_SOA, ...options.soa };

    const self = this.#directory.self();
    this.#nameservers = (
      options.nameservers ?? [
        {
          name: `ns.${this.#zones[0]}`,
          ...(self.ipv4 ? { ipv4: self.ipv4 } : {}),
          ...(self.ipv6 ? { ipv6: self.ipv6 } : {}),
        },
      ]
    ).map((ns) => {
      const name = normalizeZone(ns.name);
      if (!/^[a-z0-9_-]+(\.[a-z0-9_-]+)+$/.test(name)) {
        throw new DnsConfigError(`nameserver name "${ns.name}" is not a DNS name`);
      }
      if (ns.ipv4 !== undefined && parseIp(ns.ipv4)?.length !== 4) {
        throw new DnsConfigError(`nameserver ${ns.name}: bad ipv4 "${ns.ipv4}"`);
      }
      if (ns.ipv6 !== undefined && parseIp(ns.ipv6)?.length !== 16) {
        throw new DnsConfigError(`nameserver ${ns.name}: bad ipv6 "${ns.ipv6}"`);
      }
      return { ...ns, name };
    });
    for (const ns of this.#nameservers) this.#nsByName.set(ns.name, ns);

    this.#udpMax = Math.max(512, Math.min(65535, options.udpMaxPayload ?? DEFAULT_UDP_MAX_PAYLOAD));
    this.#udpRcvBuf = options.udpReceiveBufferBytes ?? DEFAULT_UDP_RECEIVE_BUFFER_BYTES;
    this.#cacheOn = options.answerCache?.enabled ?? true;
    this.#cacheMax = options.answerCache?.maxEntries ?? DEFAULT_ANSWER_CACHE_ENTRIES;
    this.#tcpIdleMs = options.tcp?.idleTimeoutMs ?? DEFAULT_TCP_IDLE_TIMEOUT_MS;
    this.#tcpMaxMessage = options.tcp?.maxMessageBytes ?? DEFAULT_TCP_MAX_MESSAGE_BYTES;
    this.#tcpMaxConnections = options.tcp?.maxConnections ?? DEFAULT_TCP_MAX_CONNECTIONS;
    this.#tcpMaxQueries =
      options.tcp?.maxQueriesPerConnection ?? DEFAULT_TCP_MAX_QUERIES_PER_CONNECTION;
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
      },
    );
    this.#locator = new Locator(
      {
        directory: this.#directory,
        probes: this.#probes,
        clock: this.#clock,
        random: this.#random,
      },
      {
        views: compileViews(options.views ?? []),
        hintTimeoutMs: options.hintTimeoutMs ?? DEFAULT_HINT_TIMEOUT_MS,
      },
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
        this.#logger.info({ component: 'dnssrv', host, port, zones: this.#zones }, 'listening');
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

  #bindUdp(port: number, host: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const sock = dgram.createSocket({ type: host.includes(':') ? 'udp6' : 'udp4' });
      sock.once('error', reject);
      sock.bind(port, host, () => {
        sock.off('error', reject);
        try {
          sock.setRecvBufferSize(this.#udpRcvBuf);
        } catch (err) {
          this.#logger.warn({ component: 'dnssrv', err }, 'cannot set the UDP receive buffer');
        }
        sock.on('error', (err) => this.#logger.warn({ err }, 'udp socket error'));
        sock.on('message', (msg, rinfo) => this.#onUdp(msg, rinfo));
        this.#udp = sock;
        resolve(sock.address().port);
      });
    });
  }

  #bindTcp(port: number, host: string): Promise<number> {
    return new Promise((resolve, reject) => {
      // Half-open: a client may send its query and FIN at once (socket.end(frame)); our side
      // stays writable until every pending answer is written.
      const server = net.createServer({ allowHalfOpen: true }, (sock) => this.#onTcp(sock));
      server.maxConnections = this.#tcpMaxConnections;
      server.on('drop', () => this.#c.tcpRejected++);
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        server.on('error', (err) => this.#logger.warn({ err }, 'tcp server error'));
        this.#tcp = server;
        resolve((server.address() as net.AddressInfo).port);
      });
    });
  }

  async close(): Promise<void> {
    if (this.#state === 'closed' && !this.#udp && !this.#tcp) return;
    this.#state = 'closed';
    this.#probes.close();
    const udp = this.#udp;
    const tcp = this.#tcp;
    this.#udp = undefined;
    this.#tcp = undefined;
    for (const c of this.#conns) c.destroy();
    this.#conns.clear();
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
      cache: { hits: c.hits, misses: c.misses, entries: this.#cacheEntries },
      rrl: { ...this.#rrl.counters, accounts: this.#rrl.accounts },
      probes: { ...this.#probes.counters, inFlight: this.#probes.inFlight },
      tcp: {
        connections: c.tcpConnections,
        open: this.#conns.size,
        rejected: c.tcpRejected,
        oversize: c.tcpOversize,
        idleClosed: c.tcpIdleClosed,
      },
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
    this.#c.tcpConnections++;
    this.#conns.add(sock);
    const peer = peerOf(sock.remoteAddress ?? '0.0.0.0', sock.remotePort ?? 0);
    let buf: Buffer = Buffer.alloc(0);
    let queries = 0;
    let pending = 0;
    let ending = false;
    const onIdle = (): void => {
      this.#c.tcpIdleClosed++;
      sock.destroy();
    };
    let timer = this.#clock.setTimeout(onIdle, this.#tcpIdleMs);
    const write = (b: Buffer | null) => {
      pending--;
      if (b && !sock.destroyed && sock.writable) {
        const len = Buffer.allocUnsafe(2);
        len.writeUInt16BE(b.length, 0);
        sock.write(Buffer.concat([len, b]));
      }
      if (ending && pending === 0) sock.end();
    };
    sock.on('data', (chunk: Buffer) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      while (buf.length >= 2 && !ending) {
        const len = buf.readUInt16BE(0);
        if (len === 0 || len > this.#tcpMaxMessage) {
          this.#c.tcpOversize++;
          sock.destroy();
          return;
        }
        if (buf.length < 2 + len) break;
        const frame = buf.subarray(2, 2 + len);
        buf = buf.subarray(2 + len);
        // Only a complete query counts as activity: trickling bytes cannot hold a slot forever.
        timer.cancel();
        timer = this.#clock.setTimeout(onIdle, this.#tcpIdleMs);
        queries++;
        if (queries >= this.#tcpMaxQueries) ending = true;
        pending++;
        let r: Buffer | null | Promise<Buffer | null>;
        try {
          r = this.#respond(frame, peer, 'tcp');
        } catch (err) {
          this.#internalError(err);
          r = null;
        }
        if (r instanceof Promise) {
          r.then(write, (err) => {
            this.#internalError(err);
            write(null);
          });
        } else {
          write(r);
        }
      }
      // A partial frame larger than allowed never completes: close early.
      if (buf.length > 2 + this.#tcpMaxMessage) sock.destroy();
    });
    sock.on('end', () => {
      ending = true;
      if (pending === 0) sock.end();
    });
    sock.on('error', () => {});
    sock.on('close', () => {
      timer.cancel();
      this.#conns.delete(sock);
    });
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
        udpSize: this.#udpMax,
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
    const cacheable = this.#cacheOn && q.qnameContiguous && !q.escaped;
    const baseKey = cacheable ? cacheKey(q) : '';
    let ctx: LocationContext | undefined;
    if (cacheable) {
      const top = this.#cache.get(baseKey);
      if (top) {
        let entry = top.static;
        if (!entry && top.byBucket) {
          ctx = this.#context(q, peer);
          entry = top.byBucket.get(ctx.bucket);
        }
        if (entry && entry.expiresAt > this.#clock.now() && this.#stillLive(entry.meta.nodes)) {
          this.#c.hits++;
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
    return this.#miss(q, msg, peer, transport, baseKey, cacheable, ctx);
  }

  async #miss(
    q: Query,
    msg: Uint8Array,
    peer: Peer,
    transport: 'udp' | 'tcp',
    baseKey: string,
    cacheable: boolean,
    ctxIn: LocationContext | undefined,
  ): Promise<Buffer | null> {
    let built: Built;
    try {
      if (cacheable) {
        // Single flight: concurrent misses for the same answer share one build.
        const ctx = ctxIn ?? (this.#needsLocation(q) ? this.#context(q, peer) : undefined);
        const flightKey = `${baseKey}#${ctx?.bucket ?? ''}`;
        let p = this.#pending.get(flightKey);
        if (!p) {
          p = this.#build(q, peer, ctx, msg);
          this.#pending.set(flightKey, p);
          p.finally(() => this.#pending.delete(flightKey)).catch(() => {});
        }
        built = await p;
        this.#store(baseKey, built);
        built = { ...built, bytes: patchCached(built.bytes, msg, q) };
      } else {
        built = await this.#build(q, peer, undefined, msg);
      }
    } catch (err) {
      this.#internalError(err);
      return this.#bare(q, msg, peer, transport, RCODE.SERVFAIL, false, 'internal error');
    }
    return this.#finish(built.bytes, built.meta, q, msg, peer, transport, false);
  }

  #needsLocation(q: Query): boolean {
    if (!LOCATED_TYPES.has(q.qtype)) return false;
    if (this.#nsByName.has(q.qname)) return false;
    return parseCoralName(q.qname, this.#zones).kind === 'origin';
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

  #store(baseKey: string, built: Built): void {
    if (built.cacheMs <= 0) return;
    if (this.#cacheEntries >= this.#cacheMax) {
      this.#cache.clear();
      this.#cacheEntries = 0;
    }
    const entry: CacheEntry = {
      bytes: built.bytes,
      meta: built.meta,
      expiresAt: this.#clock.now() + built.cacheMs,
    };
    let top = this.#cache.get(baseKey);
    if (!top) this.#cache.set(baseKey, (top = {}));
    if (built.static) {
      if (!top.static) this.#cacheEntries++;
      top.static = entry;
    } else {
      top.byBucket ??= new Map();
      if (!top.byBucket.has(built.bucket!)) this.#cacheEntries++;
      top.byBucket.set(built.bucket!, entry);
    }
  }

  /** Send-side steps shared by every response: TC, rate limiting, counters, decision log. */
  #finish(
    full: Buffer,
    meta: Meta,
    q: Query | undefined,
    msg: Uint8Array,
    peer: Peer,
    transport: 'udp' | 'tcp',
    cached: boolean,
  ): Buffer | null {
    let bytes: Buffer | null = full;
    let outcome: Decision['outcome'] = 'sent';
    if (transport === 'udp') {
      if (full.length > udpLimit(q, this.#udpMax)) {
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
    this.#ring[this.#ringNext] = {
      at: this.#clock.now(),
      transport,
      client: peer.address,
      cached,
      outcome,
      meta,
    };
    this.#ringNext = (this.#ringNext + 1) % this.#ring.length;
    // The reason for every answer, as log fields (debug level: a no-op unless enabled).
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

  #truncated(meta: Meta, q: Query | undefined, msg: Uint8Array): Buffer {
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
    const meta: Meta = {
      name: d.query?.qname ?? '',
      type: d.query?.qtype ?? 0,
      rcode,
      aa: false,
      method: 'none',
      detail: d.reason,
      nodes: [],
      rrlKind: 'error',
      rrlName: '',
    };
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
    const o = opt ?? this.#responseOpt(q, 0);
    const meta: Meta = {
      name: q.qname,
      type: q.qtype,
      rcode,
      aa,
      method: 'none',
      detail,
      nodes: [],
      ...(o ? { opt: o } : {}),
      rrlKind: rcode === RCODE.NXDOMAIN ? 'nxdomain' : 'error',
      rrlName: '',
    };
    const bytes = encodeBare({
      id: q.id,
      queryFlags: q.flags,
      aa,
      tc: false,
      rcode,
      question: { msg, query: q },
      ...(o ? { opt: o } : {}),
    });
    return this.#finish(bytes, meta, q, msg, peer, transport, false);
  }

  #responseOpt(q: Query, scope: number): ResponseOpt | undefined {
    if (!q.opt) return undefined;
    const ecs = q.opt.ecs;
    return {
      udpSize: this.#udpMax,
      dnssecOk: q.opt.dnssecOk,
      ...(ecs
        ? {
            ecs: {
              family: ecs.family,
              sourcePrefix: ecs.sourcePrefix,
              scopePrefix: ecs.sourcePrefix === 0 ? 0 : scope,
              address: ecs.address,
            },
          }
        : {}),
    };
  }

  // ───────────────────────────── building answers ─────────────────────────────

  async #build(
    q: Query,
    peer: Peer,
    ctxIn: LocationContext | undefined,
    msg: Uint8Array,
  ): Promise<Built> {
    const qname = q.labels.join('.');
    const opt0 = this.#responseOpt(q, 0);
    const base = { name: q.qname, type: q.qtype, nodes: [] as string[] };
    const ecsText = q.opt?.ecs
      ? { ecs: `${formatIp(q.opt.ecs.address)}/${q.opt.ecs.sourcePrefix}` }
      : {};

    // Names that needed escaping are never origins: NXDOMAIN in a zone, REFUSED outside.
    if (q.escaped) {
      const parsed = parseCoralName(q.qname, this.#zones);
      const zone = parsed.kind === 'outside' ? undefined : parsed.zone;
      const inZone = zone !== undefined;
      const rcode = inZone ? RCODE.NXDOMAIN : RCODE.REFUSED;
      const bytes = encodeBare({
        id: q.id,
        queryFlags: q.flags,
        aa: inZone,
        tc: false,
        rcode,
        question: { msg, query: q },
        ...(opt0 ? { opt: opt0 } : {}),
      });
      return {
        bytes,
        meta: {
          ...base,
          rcode,
          aa: inZone,
          method: 'none',
          detail: inZone ? 'name cannot be an origin' : 'outside the zones',
          ...ecsText,
          ...(opt0 ? { opt: opt0 } : {}),
          rrlKind: inZone ? 'nxdomain' : 'error',
          rrlName: zone ?? '',
        },
        cacheMs: 0,
        static: true,
      };
    }

    const respond = (
      rcode: number,
      aa: boolean,
      answers: ResourceRecord[],
      authorities: ResourceRecord[],
      additionals: ResourceRecord[],
      meta: Omit<Meta, 'name' | 'type' | 'rcode' | 'aa' | 'nodes' | 'opt'> & { nodes?: string[] },
      opt: ResponseOpt | undefined,
      cacheMs: number,
      bucket?: string,
    ): Built => {
      const bytes = encodeResponse({
        id: q.id,
        rd: q.rd,
        cd: q.cd,
        aa,
        rcode,
        question: { name: qname, type: q.qtype, class: q.qclass },
        answers,
        authorities,
        additionals,
        ...(opt ? { opt } : {}),
      });
      return {
        bytes,
        meta: { ...base, ...ecsText, ...meta, rcode, aa, ...(opt ? { opt } : {}) },
        cacheMs,
        static: bucket === undefined,
        ...(bucket !== undefined ? { bucket } : {}),
      };
    };

    const staticMeta = (
      detail: string,
      rrlKind: RrlKind = 'answer',
      rrlName = `${q.qname}/${q.qtype}`,
    ) => ({
      method: 'none' as const,
      detail,
      rrlKind,
      rrlName,
    });

    // The fleet's nameservers.
    const ns = this.#nsByName.get(q.qname);
    if (ns) {
      const zone = this.#zoneOf(q.qname);
      const answers = this.#addressRecords(qname, ns, q.qtype);
      if (answers.length > 0) {
        return respond(
          RCODE.NOERROR,
          true,
          answers,
          [],
          [],
          staticMeta('nameserver address'),
          opt0,
          this.#nsTtl * 1000,
        );
      }
      return respond(
        RCODE.NOERROR,
        true,
        [],
        zone ? [this.#soaRecord(zone, true)] : [],
        [],
        staticMeta('nameserver: no such type'),
        opt0,
        this.#negTtl() * 1000,
      );
    }

    const parsed = parseCoralName(q.qname, this.#zones);
    switch (parsed.kind) {
      case 'outside': {
        const bytes = encodeBare({
          id: q.id,
          queryFlags: q.flags,
          aa: false,
          tc: false,
          rcode: RCODE.REFUSED,
          question: { msg, query: q },
          ...(opt0 ? { opt: opt0 } : {}),
        });
        return {
          bytes,
          meta: {
            ...base,
            ...ecsText,
            rcode: RCODE.REFUSED,
            aa: false,
            method: 'none',
            detail: 'outside the zones',
            ...(opt0 ? { opt: opt0 } : {}),
            rrlKind: 'error',
            rrlName: '',
          },
          cacheMs: 60_000,
          static: true,
        };
      }
      case 'invalid':
        return respond(
          RCODE.NXDOMAIN,
          true,
          [],
          [this.#soaRecord(parsed.zone, true)],
          [],
          staticMeta(parsed.reason, 'nxdomain', parsed.zone),
          opt0,
          this.#negTtl() * 1000,
        );
      case 'apex': {
        const soa = this.#soaRecord(parsed.zone, false, qname);
        const nsRecords = this.#nsRecords(qname);
        const glue = this.#nameservers.flatMap((n) => [
          ...this.#addressRecords(n.name, n, TYPE.A),
          ...this.#addressRecords(n.name, n, TYPE.AAAA),
        ]);
        if (q.qtype === TYPE.SOA) {
          return respond(
            RCODE.NOERROR,
            true,
            [soa],
            [],
            [],
            staticMeta('apex SOA'),
            opt0,
            this.#soa.ttl * 1000,
          );
        }
        if (q.qtype === TYPE.NS) {
          return respond(
            RCODE.NOERROR,
            true,
            nsRecords,
            [],
            glue,
            staticMeta('apex NS'),
            opt0,
            Math.min(this.#nsTtl, 3600) * 1000,
          );
        }
        if (q.qtype === TYPE.ANY) {
          return respond(
            RCODE.NOERROR,
            true,
            [soa, ...nsRecords],
            [],
            glue,
            staticMeta('apex ANY'),
            opt0,
            this.#soa.ttl * 1000,
          );
        }
        return respond(
          RCODE.NOERROR,
          true,
          [],
          [this.#soaRecord(parsed.zone, true)],
          [],
          staticMeta('apex: no such type'),
          opt0,
          this.#negTtl() * 1000,
        );
      }
      case 'origin':
        break;
    }

    if (!LOCATED_TYPES.has(q.qtype)) {
      return respond(
        RCODE.NOERROR,
        true,
        [],
        [this.#soaRecord(parsed.zone, true)],
        [],
        staticMeta('origin: type not served'),
        opt0,
        this.#negTtl() * 1000,
      );
    }

    const ctx = ctxIn ?? this.#context(q, peer);
    const loc = await this.#locator.locate(ctx, this.#answerCount);
    const opt = this.#responseOpt(q, loc.scope);
    const scopeMeta = opt?.ecs ? { scope: opt.ecs.scopePrefix } : {};
    const rrlName = `${q.qname}/${q.qtype}`;
    if (loc.method === 'no-proxy') {
      const built = respond(
        RCODE.NOERROR,
        true,
        [{ type: 'CNAME', name: qname, ttl: this.#cnameTtl, target: parsed.host }],
        [],
        [],
        {
          method: 'no-proxy',
          detail: loc.detail,
          ttl: this.#cnameTtl,
          ...scopeMeta,
          rrlKind: 'answer',
          rrlName,
        },
        opt,
        0,
        ctx.bucket,
      );
      return built;
    }
    const v6 = q.qtype === TYPE.AAAA;
    const ttl = loc.local ? this.#localTtl : this.#ttl;
    const answers: ResourceRecord[] = [];
    const used: string[] = [];
    // A CNAME query while proxies are live: no CNAME exists, NOERROR/empty.
    for (const n of q.qtype === TYPE.CNAME ? [] : loc.nodes) {
      const address = v6 ? n.ipv6 : n.ipv4;
      if (!address) continue;
      answers.push(
        v6 ? { type: 'AAAA', name: qname, ttl, address } : { type: 'A', name: qname, ttl, address },
      );
      used.push(n.id);
    }
    const meta = {
      method: loc.method,
      detail:
        answers.length > 0 || q.qtype === TYPE.CNAME
          ? loc.detail
          : `${loc.detail}; no ${v6 ? 'IPv6' : 'IPv4'} address`,
      nodes: used.length > 0 ? used : loc.nodes.map((n) => n.id),
      ttl,
      ...scopeMeta,
      rrlKind: 'answer' as const,
      rrlName,
    };
    const built = respond(
      RCODE.NOERROR,
      true,
      answers,
      answers.length > 0 ? [] : [this.#soaRecord(parsed.zone, true)],
      [],
      meta,
      opt,
      ttl * 1000,
      ctx.bucket,
    );
    return built;
  }

  #zoneOf(name: string): string | undefined {
    let best: string | undefined;
    for (const z of this.#zones) {
      if ((name === z || name.endsWith(`.${z}`)) && (!best || z.length > best.length)) best = z;
    }
    return best;
  }

  #negTtl(): number {
    return Math.min(this.#soa.ttl, this.#soa.minimum);
  }

  #soaRecord(zone: string, negative: boolean, ownerAsSent?: string): ResourceRecord {
    const s = this.#soa;
    return {
      type: 'SOA',
      name: ownerAsSent ?? zone,
      ttl: negative ? this.#negTtl() : s.ttl,
      mname: s.mname ?? this.#nameservers[0]?.name ?? `ns.${zone}`,
      rname: s.rname ?? `hostmaster.${zone}`,
      serial: s.serial,
      refresh: s.refresh,
      retry: s.retry,
      expire: s.expire,
      minimum: s.minimum,
    };
  }

  #nsRecords(owner: string): ResourceRecord[] {
    // No nameserver is known to be nearer than another: rotate the order so load spreads.
    const start = this.#nameservers.length > 1 ? this.#random.int(this.#nameservers.length) : 0;
    const ordered = [...this.#nameservers.slice(start), ...this.#nameservers.slice(0, start)];
    return ordered.map((n) => ({ type: 'NS', name: owner, ttl: this.#nsTtl, host: n.name }));
  }

  #addressRecords(owner: string, ns: NameserverConfig, qtype: number): ResourceRecord[] {
    const out: ResourceRecord[] = [];
    if ((qtype === TYPE.A || qtype === TYPE.ANY) && ns.ipv4) {
      out.push({ type: 'A', name: owner, ttl: this.#nsTtl, address: ns.ipv4 });
    }
    if ((qtype === TYPE.AAAA || qtype === TYPE.ANY) && ns.ipv6) {
      out.push({ type: 'AAAA', name: owner, ttl: this.#nsTtl, address: ns.ipv6 });
    }
    return out;
  }
}

/** Types whose answer depends on the proxies: A, AAAA, ANY (answered as A) and CNAME (present
 * only when no proxy is live). */
const LOCATED_TYPES = new Set<number>([TYPE.A, TYPE.AAAA, TYPE.ANY, TYPE.CNAME]);

function cacheKey(q: Query): string {
  let k = `${q.qname}|${q.qtype}|${q.qclass}|`;
  if (!q.opt) return `${k}n`;
  k += q.opt.dnssecOk ? 'd' : 'o';
  const ecs = q.opt.ecs;
  if (ecs) k += Buffer.from(ecs.raw).toString('hex');
  return k;
}

const peerBytes = new Map<string, Uint8Array>();

function peerOf(address: string, port: number): Peer {
  let bytes = peerBytes.get(address);
  if (!bytes) {
    bytes = parseIp(address) ?? new Uint8Array(4);
    if (peerBytes.size >= 4096) peerBytes.clear();
    peerBytes.set(address, bytes);
  }
  return { address, port, bytes };
}

function positiveInt(name: string, v: number): number {
  if (!Number.isInteger(v) || v < 1)
    throw new DnsConfigError(`${name} must be an integer ≥ 1, got ${v}`);
  return v;
}

function nonNegativeInt(name: string, v: number): number {
  if (!Number.isInteger(v) || v < 0)
    throw new DnsConfigError(`${name} must be an integer ≥ 0, got ${v}`);
  return v;
}
