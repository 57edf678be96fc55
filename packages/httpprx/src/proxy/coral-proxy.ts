/**
 * CoralProxy — the request path (DESIGN.md "httpprx"):
 *   map Host → origin; local cache (fresh → serve; stale → revalidate or serve while
 *   revalidating); join an in-flight fetch; ask the index for holders and race the nearest; else
 *   the origin; stream to every waiter while storing; announce `fetching` / `complete`.
 */
import { once } from 'node:events';
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Readable } from 'node:stream';
import { systemClock } from '@coral/testkit';
import type { Clock, TimerHandle } from '@coral/testkit';
import type { ContentIndex, Holder } from '../content-index.js';
import { originKey } from '../connect/index.js';
import type { SmartConnector } from '../connect/index.js';
import {
  CACHE_NAME,
  CLOSE_TIMEOUT_MS,
  COMPLETE_TTL_SECONDS,
  DEFAULT_ZONES,
  DISK_BUDGET_BYTES,
  FETCHING_TTL_SECONDS,
  HOT_OBJECT_MAX_BYTES,
  INDEX_TIMEOUT_MS,
  MAX_OBJECT_BYTES,
  MEMORY_BUDGET_BYTES,
  NEGATIVE_TTL_MS,
  ORIGIN_BODY_TIMEOUT_MS,
  ORIGIN_TIMEOUT_MS,
  PEER_AUTH_HEADER,
  PEER_HEADER,
  PEER_FETCHING_TIMEOUT_MS,
  PEER_RACE,
  PEER_TIMEOUT_MS,
  RATE_LIMIT_BURST,
  RATE_LIMIT_PER_SECOND,
  REANNOUNCE_INTERVAL_MS,
  SHA256_HEADER,
} from '../constants.js';
import { ProxyError } from '../errors.js';
import {
  ageFacts,
  currentAge,
  etagMatches,
  freshnessLifetime,
  mergeNotModified,
  parseRange,
  requestRules,
  staleRules,
  storable,
  varyNames,
  varyValues,
} from '../cache/policy.js';
import type { HeaderRecord, PolicyOptions, RequestRules } from '../cache/policy.js';
import { coralize, normalizeUrl, parseCoralHost, urlKey } from '../mapping/coral-name.js';
import { admit, singleHost } from '../request/admission.js';
import { answerClientError, refuseConnect } from '../request/client-error.js';
import { originBase, upstreamUrl } from '../request/target.js';
import type { OriginBase } from '../request/target.js';
import { RateLimiter } from '../guards/rate-limiter.js';
import { createOriginConnector } from '../origin/connector.js';
import { Upstream } from '../origin/upstream.js';
import type { UpstreamResponse } from '../origin/upstream.js';
import type { PeerAuth } from '../peer/auth.js';
import { PeerConnector } from '../peer/connector.js';
import { chooseHolders } from '../peer/members.js';
import type { FleetMembers, PeerTarget } from '../peer/members.js';
import { racePeers, readAllBounded } from '../peer/peer-fetch.js';
import { DiskStore } from '../store/disk-store.js';
import { MemoryStore } from '../store/memory-store.js';
import type { CacheStore, StoredMeta } from '../store/types.js';
import {
  NOT_FORWARDED_COMMON,
  NOT_FORWARDED_CORAL,
  NOT_STORED,
  appendVia,
  cacheStatus,
  flatten,
  toRecord,
} from './headers.js';
import { HotCache } from './hot-cache.js';
import { InFlight } from './inflight.js';
import type {
  CacheListEntry,
  Logger,
  ProxyComponents,
  ProxyMetrics,
  ProxyOptions,
} from './types.js';
import { errorPage, ifRangeOk, pipeToResponse } from './respond.js';
import type { Outcome, StreamHead } from './inflight.js';

interface Ctx {
  req: IncomingMessage;
  res: ServerResponse;
  method: string;
  mode: 'coral' | 'site';
  zone?: string;
  clientPort?: number;
  host: string;
  /** Normalized origin URL. */
  url: string;
  path: string;
  primary: string;
  keyBytes: Uint8Array;
  reqHeaders: HeaderRecord;
  rules: RequestRules;
  peer: boolean;
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v;
}

const noopLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

const SERVER_ERROR_STATUSES = new Set([500, 502, 503, 504]);

export class CoralProxy {
  readonly #index: ContentIndex;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #metrics: ProxyMetrics | undefined;
  readonly #zones: string[];
  readonly #sites: Map<string, OriginBase>;
  readonly #members: FleetMembers | undefined;
  readonly #peerAuth: PeerAuth | undefined;
  readonly #peerConnector: PeerConnector;
  readonly #self: { nodeId: string; ip: string; httpPort: number };
  readonly #via: string;
  readonly #policy: PolicyOptions;
  readonly #maxObject: number;
  readonly #hotMax: number;
  readonly #peerTimeout: number;
  readonly #peerRace: number;
  readonly #peerFetchingTimeout: number;
  readonly #indexTimeout: number;
  readonly #closeTimeout: number;
  readonly #reannounceMs: number;
  readonly #store: CacheStore;
  readonly #hot: HotCache;
  readonly #routes = new Map<string, { hotKey: string }>();
  readonly #inflight = new Map<string, InFlight>();
  /** Running fetch tasks (transfer + commit), awaited by close(). */
  readonly #tasks = new Set<Promise<void>>();
  readonly #limiter: RateLimiter;
  readonly #origin: Upstream;
  readonly #peers: Upstream;
  readonly #connector: { connector: SmartConnector; close(): void };
  #server: Server | undefined;
  #opened: Promise<void> | undefined;
  #closing = false;
  #active = 0;
  #reannounceTimer: TimerHandle | undefined;
  readonly #sockets = new Set<Socket>();

  /** Usable with any `http.Server`: `createServer(proxy.handler)`. */
  readonly handler: (req: IncomingMessage, res: ServerResponse) => void;

  constructor(components: ProxyComponents, options: ProxyOptions) {
    this.#index = components.index;
    this.#clock = components.clock ?? systemClock;
    const log = components.logger ?? noopLogger;
    this.#log = log.child ? log.child({ component: 'httpprx' }) : log;
    this.#metrics = components.metrics;
    this.#zones = options.zones ?? [...DEFAULT_ZONES];
    this.#sites = new Map(
      Object.entries(options.sites ?? {}).map(([h, u]) => [
        h.toLowerCase(),
        originBase(new URL(u)),
      ]),
    );
    this.#members = components.members;
    this.#peerAuth = components.peerAuth;
    this.#self = { ...options.self };
    this.#via = `1.1 coral-${options.self.nodeId.slice(0, 12)}`;
    this.#policy = { defaultTtlSeconds: options.defaultTtlSeconds ?? 0 };
    this.#maxObject = options.maxObjectBytes ?? MAX_OBJECT_BYTES;
    this.#hotMax = options.hotObjectMaxBytes ?? HOT_OBJECT_MAX_BYTES;
    this.#peerTimeout = options.peerTimeoutMs ?? PEER_TIMEOUT_MS;
    this.#peerRace = options.peerRace ?? PEER_RACE;
    this.#peerFetchingTimeout = options.peerFetchingTimeoutMs ?? PEER_FETCHING_TIMEOUT_MS;
    this.#indexTimeout = options.indexTimeoutMs ?? INDEX_TIMEOUT_MS;
    this.#closeTimeout = options.closeTimeoutMs ?? CLOSE_TIMEOUT_MS;
    this.#reannounceMs = options.reannounceIntervalMs ?? REANNOUNCE_INTERVAL_MS;
    const memBudget = options.memoryBudgetBytes ?? MEMORY_BUDGET_BYTES;
    const onEvict = (m: StoredMeta) => this.#evicted(m);
    this.#store = options.dataDir
      ? new DiskStore(
          { onEvict },
          { dir: options.dataDir, budgetBytes: options.diskBudgetBytes ?? DISK_BUDGET_BYTES },
        )
      : new MemoryStore({ onEvict }, { budgetBytes: memBudget });
    this.#hot = new HotCache({ budgetBytes: memBudget, maxObjectBytes: this.#hotMax });
    this.#limiter = new RateLimiter(
      { clock: this.#clock },
      {
        perSecond: options.rateLimit?.perSecond ?? RATE_LIMIT_PER_SECOND,
        burst: options.rateLimit?.burst ?? options.rateLimit?.perSecond ?? RATE_LIMIT_BURST,
      },
    );
    const connector = createOriginConnector(
      {
        clock: this.#clock,
        ...(components.resolver ? { resolver: components.resolver } : {}),
        ...(components.dial ? { dial: components.dial } : {}),
      },
      {
        allowPrivateOrigins: options.allowPrivateOrigins ?? false,
        // The operator named the site origins: they may be on a private network without opening
        // every private address to Coralized names.
        privateAllowed: [...this.#sites.values()].map((o) => originKey(o.hostname, o.port)),
        ...(options.hosts ? { hosts: options.hosts } : {}),
        timeoutMs: options.originTimeoutMs ?? ORIGIN_TIMEOUT_MS,
        negativeTtlMs: options.negativeTtlMs ?? NEGATIVE_TTL_MS,
      },
    );
    this.#connector = connector;
    this.#origin = new Upstream(
      { connect: connector.connect },
      {
        headersTimeoutMs: options.originTimeoutMs ?? ORIGIN_TIMEOUT_MS,
        bodyTimeoutMs: options.originBodyTimeoutMs ?? ORIGIN_BODY_TIMEOUT_MS,
      },
    );
    // Peers are reached only at verified member addresses (or what the origin policy allows);
    // their bounds come from the clock (racePeers).
    this.#peerConnector = new PeerConnector(
      { clock: this.#clock, ...(components.dial ? { dial: components.dial } : {}) },
      {
        allowPrivate: options.allowPrivateOrigins ?? false,
        timeoutMs: Math.max(this.#peerTimeout, this.#peerFetchingTimeout),
      },
    );
    this.#peers = new Upstream(
      { connect: this.#peerConnector.undiciConnect() },
      { headersTimeoutMs: 0, bodyTimeoutMs: 0, connections: 8 },
    );
    this.handler = (req, res) => this.#onRequest(req, res);
  }

  /** The SmartConnect origin connector (its `stats()` and `cacheSnapshot()` feed the admin API). */
  get originConnector(): SmartConnector {
    return this.#connector.connector;
  }

  /** Open the store (done by `listen`; call it yourself when mounting `handler` elsewhere). */
  open(): Promise<void> {
    this.#opened ??= (async () => {
      await this.#store.open();
      this.#scheduleReannounce();
    })();
    return this.#opened;
  }

  async listen(port: number, host?: string): Promise<{ address: string; port: number }> {
    await this.open();
    // Host is checked by the handler (admission), which answers with the proxy's own error page.
    const server = createServer(
      { keepAliveTimeout: 5_000, requireHostHeader: false },
      this.handler,
    );
    server.on('clientError', (err: Error & { code?: string }, socket) => {
      const answered = answerClientError(err, socket, this.#via);
      if (answered) this.#metrics?.clientError?.(answered.code);
    });
    server.on('connect', (_req, socket) => refuseConnect(socket, this.#via, 'GET, HEAD'));
    server.on('connection', (s: Socket) => {
      this.#sockets.add(s);
      s.on('close', () => this.#sockets.delete(s));
    });
    this.#server = server;
    const listening = once(server, 'listening'); // rejects with the listen error
    server.listen(port, host);
    await listening;
    const a = server.address() as AddressInfo;
    if (this.#self.httpPort === 0) this.#self.httpPort = a.port;
    // Objects kept on disk from a previous run are announced again right away.
    this.reannounce();
    return { address: a.address, port: a.port };
  }

  /** Stop accepting, let in-flight responses finish (bounded), then release everything. */
  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    this.#reannounceTimer?.cancel();
    const deadline = Date.now() + this.#closeTimeout;
    const server = this.#server;
    if (server) {
      const closed = new Promise<void>((r) => server.close(() => r()));
      server.closeIdleConnections();
      while (this.#active > 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
        server.closeIdleConnections();
      }
      server.closeAllConnections();
      for (const s of this.#sockets) s.destroy();
      await closed;
    }
    // Let fetches and commits in progress finish within the same bound, then cut whatever is
    // left (an unfinished body is never committed) and wait briefly for the tasks to unwind.
    const settle = (ms: number) =>
      Promise.race([
        Promise.allSettled([...this.#tasks]),
        new Promise((r) => setTimeout(r, Math.max(0, ms)).unref()),
      ]);
    await settle(deadline - Date.now());
    await this.#origin.destroy();
    await this.#peers.destroy();
    await settle(1_000);
    this.#connector.close();
    if (this.#opened) await this.#opened.catch(() => {});
    await this.#store.close();
  }

  async cacheList(): Promise<CacheListEntry[]> {
    await this.open();
    return this.#store.list().map((m) => {
      const lifetime = freshnessLifetime(m.status, m.headers, this.#policy);
      const age = currentAge(m.facts, m.facts.responseTime);
      const e: CacheListEntry = {
        url: m.url,
        key: m.key,
        status: m.status,
        size: m.size,
        sha256: m.sha256,
        storedAt: m.storedAt,
        expiresAt: m.facts.responseTime + (lifetime - age) * 1000,
        vary: m.vary,
      };
      if (m.headers['content-type']) e.contentType = m.headers['content-type'];
      return e;
    });
  }

  /** Remove every stored variant of `url` and withdraw the announcement. */
  async purge(url: string): Promise<boolean> {
    await this.open();
    const norm = normalizeUrl(url);
    const keyBytes = urlKey(norm);
    const primary = Buffer.from(keyBytes).toString('hex');
    const removed = await this.#invalidate(primary);
    if (this.#index.withdraw) await this.#index.withdraw(keyBytes).catch(() => {});
    return removed > 0;
  }

  // ---------------------------------------------------------------------------------------------
  // Request entry and the hot path

  #onRequest(req: IncomingMessage, res: ServerResponse): void {
    const h = req.headers;
    const client = req.socket.remoteAddress ?? '';
    if (!this.#limiter.take(client)) {
      this.#metrics?.rateLimited();
      const err = new ProxyError('CORAL_RATE_LIMITED', `too many requests from ${client}`);
      this.#sendError(res, req.method ?? 'GET', err, {
        'retry-after': String(this.#limiter.retryAfter(client)),
      });
      return;
    }
    // Fast path: a plain GET/HEAD for a hot, fresh object without Vary.
    const method = req.method;
    if ((method === 'GET' || method === 'HEAD') && h.host !== undefined && h.via === undefined) {
      const route = this.#routes.get(h.host + (req.url ?? ''));
      if (
        route &&
        h.range === undefined &&
        h['if-none-match'] === undefined &&
        h['if-modified-since'] === undefined &&
        h['cache-control'] === undefined &&
        h.pragma === undefined &&
        h.authorization === undefined &&
        h[PEER_HEADER] === undefined
      ) {
        const hot = this.#hot.get(route.hotKey);
        if (
          hot &&
          hot.fast &&
          this.#store.get(hot.meta.key) === hot.meta &&
          singleHost(req.rawHeaders)
        ) {
          const age = currentAge(hot.meta.facts, this.#clock.now());
          if (age < hot.lifetime) {
            res.writeHead(hot.meta.status, HotCache.block(hot, age));
            if (method === 'HEAD') res.end();
            else res.end(hot.body);
            this.#metrics?.request('hit', method, hot.meta.status);
            return;
          }
        }
      }
    }
    req.on('error', () => {});
    res.on('error', () => {});
    this.#active++;
    res.on('close', () => this.#active--);
    this.#handle(req, res).catch((e: unknown) => {
      this.#log.error({ err: String(e), url: req.url }, 'request failed');
      const err =
        e instanceof ProxyError ? e : new ProxyError('CORAL_ORIGIN_UNREACHABLE', String(e));
      if (!res.headersSent) this.#sendError(res, req.method ?? 'GET', err);
      else res.destroy();
    });
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!this.#opened) await this.open();
    else await this.#opened;
    const method = req.method ?? 'GET';
    if (this.#closing)
      return this.#sendError(
        res,
        method,
        new ProxyError('CORAL_SHUTTING_DOWN', 'proxy is shutting down'),
      );
    const via = req.headers.via;
    if (via !== undefined && String(via).includes(this.#via.slice(4))) {
      return this.#sendError(
        res,
        method,
        new ProxyError('CORAL_LOOP_DETECTED', `request already passed through ${this.#via}`),
      );
    }
    let admitted;
    try {
      admitted = admit(req);
    } catch (e) {
      // A bad Host or target: the message may not be what it seems (smuggling, a body we will
      // not read), so the connection is closed after the answer.
      if (e instanceof ProxyError) return this.#sendError(res, method, e, { connection: 'close' });
      throw e;
    }
    const { host: hostHeader, authority, path } = admitted;
    if (req.headers[PEER_HEADER] !== undefined && this.#peerAuth) {
      const verdict = this.#peerAuth.verify({
        method,
        authority: hostHeader,
        path: req.url ?? '',
        header: headerValue(req.headers[PEER_AUTH_HEADER]),
      });
      if (verdict !== 'ok') {
        this.#metrics?.peerRejected?.(verdict);
        this.#log.debug(
          { peer: req.socket.remoteAddress, reason: verdict },
          'peer request refused: Coral-Peer-Auth did not verify',
        );
        return this.#sendError(
          res,
          method,
          new ProxyError('CORAL_PEER_UNAUTHORIZED', `peer request not authenticated (${verdict})`),
        );
      }
    }
    let mode: 'coral' | 'site';
    let url: string;
    let zone: string | undefined;
    const clientPort = authority.port;
    try {
      const site = this.#sites.get(authority.name);
      if (site) {
        mode = 'site';
        url = upstreamUrl(site, path);
      } else {
        const target = parseCoralHost(hostHeader, this.#zones);
        if (!target) {
          throw new ProxyError(
            'CORAL_NOT_CORALIZED',
            `${authority.name} is not a Coralized name: this proxy serves only *.${this.#zones.join(', *.')}` +
              ' (for example http://www.example.com.' +
              (this.#zones[0] ?? 'nyud.net') +
              '/)',
          );
        }
        mode = 'coral';
        zone = target.zone;
        url = upstreamUrl(
          { protocol: 'http:', hostname: target.originHost, port: target.originPort },
          path,
        );
      }
    } catch (e) {
      if (e instanceof ProxyError) return this.#sendError(res, method, e);
      throw e;
    }
    if (mode === 'coral' && method !== 'GET' && method !== 'HEAD') {
      return this.#sendError(
        res,
        method,
        new ProxyError(
          'CORAL_METHOD_NOT_ALLOWED',
          `${method} is not allowed on Coralized names; only GET and HEAD`,
        ),
        { allow: 'GET, HEAD' },
      );
    }
    const keyBytes = urlKey(url);
    const primary = Buffer.from(keyBytes).toString('hex');
    const reqHeaders = toRecord(req.headers);
    const ctx: Ctx = {
      req,
      res,
      method,
      mode,
      ...(zone !== undefined ? { zone } : {}),
      ...(clientPort !== undefined ? { clientPort } : {}),
      host: hostHeader,
      url,
      path: new URL(url).pathname + new URL(url).search,
      primary,
      keyBytes,
      reqHeaders,
      rules: requestRules(reqHeaders),
      peer: reqHeaders[PEER_HEADER] !== undefined,
    };
    if (method !== 'GET' && method !== 'HEAD') return this.#forwardUnsafe(ctx);
    if (this.#routes.size > 50_000) this.#routes.clear();
    // The fast path looks requests up by the raw Host and target this one was admitted with.
    if (req.headers.host !== undefined) {
      this.#routes.set(req.headers.host + (req.url ?? ''), { hotKey: primary + '|' });
    }
    return this.#lookup(ctx);
  }

  // ---------------------------------------------------------------------------------------------
  // Cache lookup

  #select(ctx: Ctx): StoredMeta | undefined {
    let best: StoredMeta | undefined;
    for (const m of this.#store.variants(ctx.primary)) {
      const values = varyValues(m.vary, ctx.reqHeaders);
      if (values.every((v, i) => v === m.varyValues[i]) && (!best || m.storedAt > best.storedAt))
        best = m;
    }
    return best;
  }

  async #lookup(ctx: Ctx): Promise<void> {
    const { rules } = ctx;
    // Responses to requests with Authorization are never shared: always forwarded, stored only
    // when the response allows it (RFC 9111 §3.5).
    if (ctx.reqHeaders['authorization'] !== undefined && !ctx.peer) {
      return this.#fetchAndServe(ctx, { register: false, allowPeers: false, fwd: 'request' });
    }
    const meta = rules.noStore ? undefined : this.#select(ctx);
    if (meta) {
      const now = this.#clock.now();
      const age = currentAge(meta.facts, now);
      const lifetime = freshnessLifetime(meta.status, meta.headers, this.#policy);
      const sr = staleRules(meta.headers);
      const staleness = age - lifetime; // < 0 while fresh
      const freshEnough =
        age < lifetime &&
        (rules.maxAge === undefined || age <= rules.maxAge) &&
        age + rules.minFresh < lifetime;
      const clientAcceptsStale = !sr.mustRevalidate && staleness >= 0 && staleness < rules.maxStale;
      if (ctx.peer) {
        if (age < lifetime && !sr.noCache)
          return this.#serveEntry(ctx, meta, ['hit', `ttl=${lifetime - age}`]);
        return this.#joinOrRefuse(ctx);
      }
      if (!sr.noCache && !rules.noCache && (freshEnough || clientAcceptsStale)) {
        return this.#serveEntry(ctx, meta, ['hit', `ttl=${lifetime - age}`]);
      }
      if (rules.onlyIfCached) {
        return this.#sendError(
          ctx.res,
          ctx.method,
          new ProxyError('CORAL_NOT_CACHED', 'stale and only-if-cached'),
        );
      }
      if (!sr.noCache && !rules.noCache && staleness >= 0 && staleness < sr.whileRevalidate) {
        // Serve stale now; refresh once in the background.
        if (!this.#inflight.has(ctx.primary)) {
          this.#startFetch(ctx, { register: true, allowPeers: false, stale: meta, fwd: 'stale' });
        }
        return this.#serveEntry(ctx, meta, [
          'hit',
          `ttl=${lifetime - age}`,
          'detail=stale-while-revalidate',
        ]);
      }
      const existing = this.#inflight.get(ctx.primary);
      if (existing && !rules.noCache) return this.#join(ctx, existing);
      return this.#fetchAndServe(ctx, {
        register: true,
        allowPeers: false,
        stale: meta,
        fwd: rules.noCache ? 'request' : 'stale',
      });
    }
    if (ctx.peer) return this.#joinOrRefuse(ctx);
    if (rules.onlyIfCached) {
      return this.#sendError(
        ctx.res,
        ctx.method,
        new ProxyError('CORAL_NOT_CACHED', 'not cached and only-if-cached'),
      );
    }
    const existing = this.#inflight.get(ctx.primary);
    if (existing && !rules.noStore) return this.#join(ctx, existing);
    if (ctx.method === 'HEAD') {
      // A HEAD miss is forwarded as is; it stores nothing.
      return this.#fetchAndServe(ctx, { register: false, allowPeers: false, fwd: 'uri-miss' });
    }
    const hasVariants = this.#store.variants(ctx.primary).length > 0;
    return this.#fetchAndServe(ctx, {
      register: !rules.noStore,
      allowPeers: !rules.noStore && !rules.noCache,
      fwd: rules.noCache ? 'request' : hasVariants ? 'vary-miss' : 'uri-miss',
    });
  }

  #joinOrRefuse(ctx: Ctx): Promise<void> | void {
    const existing = this.#inflight.get(ctx.primary);
    if (existing) return this.#join(ctx, existing);
    return this.#sendError(
      ctx.res,
      ctx.method,
      new ProxyError('CORAL_NOT_CACHED', 'peer request for an object not held here'),
    );
  }

  async #join(ctx: Ctx, inf: InFlight): Promise<void> {
    inf.joiners++;
    this.#metrics?.joined?.();
    const o = await inf.outcome;
    if (o.kind === 'stream') {
      const values = varyValues(o.head.vary, ctx.reqHeaders);
      const match = values.every((v, i) => v === o.head.varyValues[i]);
      if (!o.head.shareable || !match || (ctx.peer && o.head.peerVerified === false)) {
        if (ctx.peer)
          return this.#sendError(
            ctx.res,
            ctx.method,
            new ProxyError('CORAL_NOT_CACHED', 'not shareable'),
          );
        return this.#fetchAndServe(ctx, { register: false, allowPeers: false, fwd: 'uri-miss' });
      }
    }
    return this.#serveOutcome(ctx, inf, o, true);
  }

  // ---------------------------------------------------------------------------------------------
  // Serving

  #headerBlock(ctx: Ctx | undefined, meta: StoredMeta): HeaderRecord {
    const out: HeaderRecord = { ...meta.headers };
    delete out['transfer-encoding'];
    out['content-length'] = String(meta.size);
    out['via'] = appendVia(meta.headers['via'], this.#via);
    if (ctx) this.#rewriteLocation(ctx, out);
    return out;
  }

  #rewriteLocation(ctx: Ctx, h: HeaderRecord): void {
    const loc = h['location'];
    if (ctx.mode !== 'coral' || !loc || !/^http:\/\//i.test(loc) || !ctx.zone) return;
    try {
      h['location'] = coralize(loc, ctx.zone, ctx.clientPort);
    } catch {
      /* leave unrewritable locations alone */
    }
  }

  async #serveEntry(
    ctx: Ctx,
    meta: StoredMeta,
    statusParams: string[],
    fwdKind = 'hit',
  ): Promise<void> {
    const { res, reqHeaders } = ctx;
    this.#store.touch(meta.key);
    const age = currentAge(meta.facts, this.#clock.now());
    const headers = this.#headerBlock(ctx, meta);
    headers['age'] = String(age);
    if (ctx.peer) headers[SHA256_HEADER] = meta.sha256;
    const cs = cacheStatus(CACHE_NAME, statusParams);
    headers['cache-status'] = cs;
    // Conditional request from the client.
    if (meta.status === 200) {
      const inm = reqHeaders['if-none-match'];
      const ims = reqHeaders['if-modified-since'];
      let notModified = false;
      if (inm !== undefined) notModified = etagMatches(inm, meta.headers['etag']);
      else if (ims !== undefined && meta.headers['last-modified']) {
        const a = Date.parse(meta.headers['last-modified']);
        const b = Date.parse(ims);
        notModified = Number.isFinite(a) && Number.isFinite(b) && a <= b;
      }
      if (notModified) {
        const h: HeaderRecord = {};
        for (const k of [
          'etag',
          'cache-control',
          'expires',
          'date',
          'vary',
          'content-location',
          'last-modified',
          'age',
          'via',
          'cache-status',
        ]) {
          if (headers[k] !== undefined) h[k] = headers[k]!;
        }
        res.writeHead(304, flatten(h));
        res.end();
        this.#metrics?.request(fwdKind, ctx.method, 304);
        return;
      }
    }
    // Single-range requests from the stored full response.
    let start = 0;
    let end = meta.size - 1;
    let status = meta.status;
    if (
      meta.status === 200 &&
      reqHeaders['range'] !== undefined &&
      ifRangeOk(reqHeaders['if-range'], meta)
    ) {
      const r = parseRange(reqHeaders['range'], meta.size);
      if (r === 'unsatisfiable') {
        res.writeHead(
          416,
          flatten({
            'content-range': `bytes */${meta.size}`,
            via: headers['via']!,
            'cache-status': cs,
            'content-length': '0',
          }),
        );
        res.end();
        this.#metrics?.request(fwdKind, ctx.method, 416);
        return;
      }
      if (r) {
        start = r.start;
        end = r.end;
        status = 206;
        headers['content-range'] = `bytes ${start}-${end}/${meta.size}`;
        headers['content-length'] = String(end - start + 1);
      }
    }
    headers['accept-ranges'] = 'bytes';
    this.#metrics?.request(fwdKind, ctx.method, status);
    const hot = this.#hot.get(meta.key);
    if (hot && hot.meta === meta) {
      res.writeHead(status, flatten(headers));
      if (ctx.method === 'HEAD') res.end();
      else
        res.end(
          start === 0 && end === meta.size - 1 ? hot.body : hot.body.subarray(start, end + 1),
        );
      return;
    }
    if (meta.size <= this.#hotMax) {
      let body: Buffer;
      try {
        body = await this.#store.readBody(meta);
      } catch {
        await this.#store.delete(meta.key);
        return this.#fetchAndServe(ctx, { register: false, allowPeers: false, fwd: 'uri-miss' });
      }
      if (body.length === meta.size) this.#makeHot(meta, body);
      res.writeHead(status, flatten(headers));
      if (ctx.method === 'HEAD') res.end();
      else res.end(body.subarray(start, end + 1));
      return;
    }
    res.writeHead(status, flatten(headers));
    if (ctx.method === 'HEAD' || meta.size === 0) {
      res.end();
      return;
    }
    const stream = this.#store.readStream(meta, start, end);
    pipeToResponse(stream, res);
  }

  #makeHot(meta: StoredMeta, body: Buffer): void {
    if (meta.size > this.#hotMax) return;
    const lifetime = freshnessLifetime(meta.status, meta.headers, this.#policy);
    const headers = this.#headerBlock(undefined, meta);
    headers['accept-ranges'] = 'bytes';
    const fast =
      meta.vary.length === 0 &&
      meta.headers['location'] === undefined &&
      !staleRules(meta.headers).noCache;
    this.#hot.put(meta, body, { lifetime, fast, headers: flatten(headers) });
  }

  async #serveOutcome(ctx: Ctx, inf: InFlight, o: Outcome, collapsed: boolean): Promise<void> {
    const { res } = ctx;
    if (o.kind === 'error') return this.#sendError(res, ctx.method, o.error);
    if (o.kind === 'entry') {
      const params = [`fwd=${o.fwd}`];
      if (o.fwdStatus !== undefined) params.push(`fwd-status=${o.fwdStatus}`);
      if (o.fwd === 'stale' && o.detail) params.push(`ttl=${this.#ttlOf(o.meta)}`);
      if (collapsed) params.push('collapsed');
      if (o.detail) params.push(`detail=${o.detail}`);
      return this.#serveEntry(
        ctx,
        o.meta,
        params,
        o.detail === 'stale-if-error' ? 'stale' : o.fwd === 'stale' ? 'revalidated' : o.fwd,
      );
    }
    const head = o.head;
    const headers: HeaderRecord = { ...head.headers };
    headers['age'] = String(head.age);
    headers['via'] = appendVia(head.headers['via'], this.#via);
    const params = [`fwd=${head.fwd}`, `fwd-status=${head.fwdStatus}`];
    if (head.stored) params.push('stored');
    if (collapsed) params.push('collapsed');
    const details: string[] = [];
    if (head.peer) details.push(`peer-${head.peer.slice(0, 12)}`);
    if (head.peer && head.peerVerified === false) details.push('unverified');
    if (head.notMembers) details.push(`not-member-holders-${head.notMembers}`);
    // RFC 9211 detail: one token, or a string when there is more than one fact.
    if (details.length === 1) params.push(`detail=${details[0]}`);
    else if (details.length > 1) params.push(`detail="${details.join(' ')}"`);
    headers['cache-status'] = cacheStatus(CACHE_NAME, params);
    this.#rewriteLocation(ctx, headers);
    const flat = flatten(headers);
    if (ctx.mode === 'site' && head.setCookie)
      for (const c of head.setCookie) flat.push('set-cookie', c);
    res.writeHead(head.status, flat);
    this.#metrics?.request(head.fwd === 'peer' ? 'peer' : 'miss', ctx.method, head.status);
    if (ctx.method === 'HEAD') {
      res.end();
      return;
    }
    const unsubscribe = inf.subscribe({
      data: (c) => {
        res.write(c);
      },
      end: () => {
        res.end();
      },
      error: () => {
        res.destroy();
      },
    });
    res.on('close', () => {
      unsubscribe();
      // Nobody else may use a response that is not shareable: when its client leaves, stop it.
      if (!head.shareable && !inf.finished) inf.abandon?.();
    });
  }

  #ttlOf(meta: StoredMeta): number {
    return (
      freshnessLifetime(meta.status, meta.headers, this.#policy) -
      currentAge(meta.facts, this.#clock.now())
    );
  }

  #sendError(
    res: ServerResponse,
    method: string,
    err: ProxyError,
    extra: Record<string, string> = {},
  ): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const { headers, body } = errorPage(err, this.#via, extra);
    res.writeHead(err.status, headers);
    res.end(method === 'HEAD' ? undefined : body);
    this.#metrics?.request('error', method, err.status);
  }

  // ---------------------------------------------------------------------------------------------
  // Fetching

  #fetchAndServe(
    ctx: Ctx,
    opts: { register: boolean; allowPeers: boolean; stale?: StoredMeta; fwd: string },
  ): Promise<void> {
    const inf = this.#startFetch(ctx, opts);
    return inf.outcome.then((o) => this.#serveOutcome(ctx, inf, o, false));
  }

  #startFetch(
    ctx: Ctx,
    opts: { register: boolean; allowPeers: boolean; stale?: StoredMeta; fwd: string },
  ): InFlight {
    const inf = new InFlight(ctx.primary);
    if (opts.register) this.#inflight.set(ctx.primary, inf);
    const release = () => {
      if (this.#inflight.get(ctx.primary) === inf) this.#inflight.delete(ctx.primary);
    };
    const task = this.#runFetch(ctx, inf, opts)
      .catch((e: unknown) => {
        const err =
          e instanceof ProxyError ? e : new ProxyError('CORAL_ORIGIN_UNREACHABLE', String(e));
        inf.settle({ kind: 'error', error: err });
        inf.fail(err);
      })
      .finally(() => {
        release();
        this.#tasks.delete(task);
      });
    this.#tasks.add(task);
    return inf;
  }

  #holder(state: 'fetching' | 'complete', meta?: StoredMeta): Holder {
    const h: Holder = {
      nodeId: this.#self.nodeId,
      ip: this.#self.ip,
      httpPort: this.#self.httpPort,
      state,
    };
    if (meta) {
      h.size = meta.size;
      h.sha256 = meta.sha256;
    }
    return h;
  }

  #announce(keyBytes: Uint8Array, holder: Holder, ttl: number): void {
    if (ttl <= 0) return;
    this.#index.announce(keyBytes, holder, ttl).catch((e: unknown) => {
      this.#log.warn({ err: String(e) }, 'announce failed');
    });
  }

  async #runFetch(
    ctx: Ctx,
    inf: InFlight,
    opts: { register: boolean; allowPeers: boolean; stale?: StoredMeta; fwd: string },
  ): Promise<void> {
    const forwardHeaders = this.#forwardHeaders(ctx);
    // 1. Verified members that announced the object.
    let notMembers = 0;
    if (opts.allowPeers) {
      const choice = await this.#peerTargets(ctx.keyBytes);
      notMembers = choice.notMembers;
      this.#announce(ctx.keyBytes, this.#holder('fetching'), FETCHING_TTL_SECONDS);
      if (
        choice.targets.length > 0 &&
        (await this.#fetchFromPeers(
          ctx,
          inf,
          choice.targets.slice(0, this.#peerRace),
          forwardHeaders,
          notMembers,
        ))
      ) {
        return;
      }
    } else if (opts.register && ctx.method === 'GET') {
      this.#announce(ctx.keyBytes, this.#holder('fetching'), FETCHING_TTL_SECONDS);
    }
    // 2. The origin.
    const stale = opts.stale;
    const headers = { ...forwardHeaders };
    if (stale && stale.status === 200) {
      if (stale.headers['etag']) headers['if-none-match'] = stale.headers['etag'];
      if (stale.headers['last-modified'])
        headers['if-modified-since'] = stale.headers['last-modified'];
    }
    const requestTime = this.#clock.now();
    let res: UpstreamResponse;
    try {
      res = await this.#origin.request({ url: ctx.url, method: ctx.method, headers });
    } catch (e) {
      const err = this.#originError(e);
      this.#metrics?.originFetch(0, false);
      if (stale && this.#staleOnErrorOk(stale)) {
        inf.settle({ kind: 'entry', meta: stale, fwd: 'stale', detail: 'stale-if-error' });
        inf.finish();
        return;
      }
      if (stale && staleRules(stale.headers).mustRevalidate) {
        throw new ProxyError(
          'CORAL_REVALIDATION_FAILED',
          `cannot revalidate ${ctx.url}: ${err.message}`,
        );
      }
      throw err;
    }
    const responseTime = this.#clock.now();
    if (stale && SERVER_ERROR_STATUSES.has(res.status) && this.#staleOnErrorOk(stale)) {
      res.body.on('error', () => {});
      res.body.destroy();
      this.#metrics?.originFetch(0, false);
      inf.settle({
        kind: 'entry',
        meta: stale,
        fwd: 'stale',
        fwdStatus: res.status,
        detail: 'stale-if-error',
      });
      inf.finish();
      return;
    }
    if (res.status === 304 && stale) {
      res.body.on('error', () => {});
      res.body.resume();
      const fresh = toRecord(res.headers, NOT_STORED);
      const updated: StoredMeta = {
        ...stale,
        headers: mergeNotModified(stale.headers, fresh),
        facts: ageFacts(toRecord(res.headers), requestTime, responseTime),
      };
      await this.#store.update(updated);
      const now = this.#store.get(stale.key) ?? updated;
      this.#hot.delete(stale.key);
      this.#metrics?.originFetch(0, true);
      this.#announceComplete(ctx.keyBytes, now);
      inf.settle({ kind: 'entry', meta: now, fwd: 'stale', fwdStatus: 304 });
      inf.finish();
      return;
    }
    await this.#streamResponse(ctx, inf, res, {
      requestTime,
      responseTime,
      fwd: opts.fwd,
      source: 'origin',
      notMembers,
    });
  }

  /**
   * The members to ask for `keyBytes`: holders from the index mapped to verified member addresses
   * (peer/members.ts). Without `members` there is no peer fetch, and no lookup either.
   */
  async #peerTargets(keyBytes: Uint8Array): Promise<{ targets: PeerTarget[]; notMembers: number }> {
    if (!this.#members) return { targets: [], notMembers: 0 };
    let holders: Holder[] = [];
    try {
      holders = await this.#lookupHolders(keyBytes);
    } catch (e) {
      this.#log.warn({ err: String(e) }, 'index lookup failed');
    }
    const choice = chooseHolders(holders, this.#members, this.#self);
    if (choice.notMembers > 0) {
      for (let i = 0; i < choice.notMembers; i++) this.#metrics?.holderSkipped?.('not-member');
      this.#log.debug(
        { key: Buffer.from(keyBytes).toString('hex'), skipped: choice.notMembers },
        'holder records naming no verified member skipped',
      );
    }
    return choice;
  }

  /** `index.lookup`, bounded by `indexTimeoutMs` on the clock even if the index ignores the signal. */
  #lookupHolders(keyBytes: Uint8Array): Promise<Holder[]> {
    const ac = new AbortController();
    return new Promise<Holder[]>((resolve, reject) => {
      const timer = this.#clock.setTimeout(() => {
        const err = new Error(`index lookup exceeded ${this.#indexTimeout} ms`);
        ac.abort(err);
        reject(err);
      }, this.#indexTimeout);
      this.#index.lookup(keyBytes, { signal: ac.signal }).then(
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

  #staleOnErrorOk(stale: StoredMeta): boolean {
    const sr = staleRules(stale.headers);
    if (sr.mustRevalidate || sr.noCache) return false;
    const staleness =
      currentAge(stale.facts, this.#clock.now()) -
      freshnessLifetime(stale.status, stale.headers, this.#policy);
    return staleness < sr.ifError;
  }

  #originError(e: unknown): ProxyError {
    if (e instanceof ProxyError) return e;
    const code = (e as { code?: unknown }).code;
    const msg = e instanceof Error ? e.message : String(e);
    if (code === 'CORAL_ORIGIN_FORBIDDEN')
      return new ProxyError('CORAL_ORIGIN_FORBIDDEN', msg, { cause: e });
    if (code === 'CORAL_ORIGIN_NEGATIVE_CACHED')
      return new ProxyError('CORAL_ORIGIN_NEGATIVE_CACHED', msg, { cause: e });
    if (
      code === 'ETIMEDOUT' ||
      code === 'UND_ERR_CONNECT_TIMEOUT' ||
      code === 'UND_ERR_HEADERS_TIMEOUT'
    ) {
      return new ProxyError('CORAL_ORIGIN_TIMEOUT', `origin timed out: ${msg}`, { cause: e });
    }
    return new ProxyError(
      'CORAL_ORIGIN_UNREACHABLE',
      `origin unreachable (${String(code ?? 'error')}): ${msg}`,
      { cause: e },
    );
  }

  #forwardHeaders(ctx: Ctx): Record<string, string> {
    const drop = ctx.mode === 'coral' ? NOT_FORWARDED_CORAL : NOT_FORWARDED_COMMON;
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(ctx.reqHeaders)) {
      if (drop.has(k)) continue;
      out[k] = v;
    }
    out['via'] = appendVia(ctx.reqHeaders['via'], this.#via);
    return out;
  }

  async #fetchFromPeers(
    ctx: Ctx,
    inf: InFlight,
    targets: PeerTarget[],
    headers: Record<string, string>,
    notMembers: number,
  ): Promise<boolean> {
    const winner = await racePeers(
      {
        upstream: this.#peers,
        clock: this.#clock,
        connector: this.#peerConnector,
        ...(this.#peerAuth ? { auth: this.#peerAuth } : {}),
        onEvent: (e) => this.#log.debug(e, 'peer event'),
      },
      targets,
      {
        path: ctx.path,
        host: ctx.host,
        headers,
        nodeId: this.#self.nodeId,
        via: headers['via'] ?? this.#via,
      },
      (h) => (h.state === 'fetching' ? this.#peerFetchingTimeout : this.#peerTimeout),
    );
    if (!winner) return false;
    const declared = Number(winner.response.headers['content-length']);
    let data: Buffer;
    let sha256: string;
    try {
      ({ data, sha256 } = await readAllBounded(
        winner.response.body,
        { clock: this.#clock },
        {
          idleMs:
            winner.holder.state === 'fetching' ? this.#peerFetchingTimeout : this.#peerTimeout,
          maxBytes: this.#maxObject,
          abort: winner.abort,
        },
      ));
    } catch (e) {
      this.#log.warn({ peer: winner.holder.nodeId, err: String(e) }, 'peer transfer failed');
      this.#metrics?.peerFetch(0, false);
      return false;
    }
    const h = winner.holder;
    // The record's size and sha256 are checked in both modes (a mismatch is always a lie or a
    // fault), but only an authenticated record (keyed mode) makes a match mean anything: in open
    // mode the copy is served to the clients that asked and is not stored (see #streamResponse).
    const claimed = headerValue(winner.response.headers[SHA256_HEADER]);
    const bad =
      (Number.isFinite(declared) && declared !== data.length) ||
      (claimed !== undefined && claimed.toLowerCase() !== sha256) ||
      (h.size !== undefined && h.size !== data.length) ||
      (h.sha256 !== undefined && h.sha256.toLowerCase() !== sha256);
    if (bad) {
      this.#log.warn(
        { peer: h.nodeId, size: data.length, sha256 },
        'peer sent bytes that do not match its announcement',
      );
      this.#metrics?.peerFetch(data.length, false);
      return false;
    }
    this.#metrics?.peerFetch(data.length, true);
    const res: UpstreamResponse = {
      status: winner.response.status,
      headers: winner.response.headers,
      body: Readable.from([data]),
    };
    await this.#streamResponse(ctx, inf, res, {
      requestTime: winner.requestTime,
      responseTime: winner.responseTime,
      fwd: 'peer',
      source: 'peer',
      peer: h.nodeId,
      peerVerified: this.#members?.recordsAuthenticated === true,
      notMembers,
    });
    return true;
  }

  /** Turn an upstream response into the in-flight stream, storing it when allowed. */
  async #streamResponse(
    ctx: Ctx,
    inf: InFlight,
    res: UpstreamResponse,
    o: {
      requestTime: number;
      responseTime: number;
      fwd: string;
      source: 'origin' | 'peer';
      peer?: string;
      /** A peer copy checked against an authenticated record (keyed mode). */
      peerVerified?: boolean;
      notMembers?: number;
    },
  ): Promise<void> {
    const all = toRecord(res.headers);
    const headers = toRecord(res.headers, NOT_STORED);
    const rawCookie = res.headers['set-cookie'];
    const setCookie =
      rawCookie === undefined ? undefined : Array.isArray(rawCookie) ? rawCookie : [rawCookie];
    const facts = ageFacts(all, o.requestTime, o.responseTime);
    const declared =
      headers['content-length'] !== undefined ? Number(headers['content-length']) : undefined;
    const noBody =
      ctx.method === 'HEAD' ||
      res.status === 204 ||
      res.status === 304 ||
      (res.status >= 100 && res.status < 200);
    if (declared !== undefined && declared > this.#maxObject && !noBody) {
      res.body.on('error', () => {});
      res.body.destroy();
      throw new ProxyError(
        'CORAL_OBJECT_TOO_LARGE',
        `${ctx.url} is ${declared} bytes; this proxy fetches objects up to ${this.#maxObject} bytes`,
      );
    }
    const decision =
      ctx.method === 'GET'
        ? storable(ctx.reqHeaders, res.status, headers, this.#policy)
        : { store: false, reason: 'method' };
    const cookieBlocked = ctx.mode === 'site' && setCookie !== undefined;
    const unverifiedPeer = o.source === 'peer' && o.peerVerified !== true;
    const shareable = decision.store && !cookieBlocked && !ctx.rules.noStore;
    const store = shareable && !unverifiedPeer;
    const vary = varyNames(headers);
    const head: StreamHead = {
      status: res.status,
      headers,
      ...(setCookie ? { setCookie } : {}),
      age: currentAge(facts, this.#clock.now()),
      fwd: o.fwd,
      fwdStatus: res.status,
      stored: store,
      shareable,
      vary,
      varyValues: varyValues(vary, ctx.reqHeaders),
      ...(o.peer ? { peer: o.peer, peerVerified: !unverifiedPeer } : {}),
      ...(o.notMembers ? { notMembers: o.notMembers } : {}),
    };
    inf.settle({ kind: 'stream', head });
    if (noBody) {
      res.body.on('error', () => {});
      res.body.resume();
      inf.finish();
      return;
    }
    const writer = store ? this.#store.begin() : undefined;
    inf.abandon = () => {
      res.body.on('error', () => {});
      res.body.destroy(new Error('client gone'));
    };
    const hash = createHash('sha256');
    let size = 0;
    const complete = await new Promise<boolean>((resolve) => {
      let failed = false;
      const fail = (err: Error) => {
        if (failed) return;
        failed = true;
        res.body.on('error', () => {});
        res.body.destroy();
        void writer?.abort();
        inf.fail(err);
        if (o.source === 'origin') this.#metrics?.originFetch(size, false);
        resolve(false);
      };
      res.body.on('data', (chunk: Buffer) => {
        if (failed) return;
        size += chunk.length;
        if (size > this.#maxObject) {
          fail(
            new ProxyError(
              'CORAL_OBJECT_TOO_LARGE',
              `${ctx.url} exceeded ${this.#maxObject} bytes while streaming`,
            ),
          );
          return;
        }
        hash.update(chunk);
        writer?.write(chunk);
        inf.push(chunk);
      });
      res.body.on('error', (e: Error) => {
        this.#log.warn(
          { url: ctx.url, err: e.message, received: size },
          'upstream transfer truncated',
        );
        fail(e);
      });
      res.body.on('end', () => {
        if (failed) return;
        if (declared !== undefined && declared !== size) {
          fail(new Error(`short body: ${size} of ${declared} bytes`));
          return;
        }
        if (o.source === 'origin') this.#metrics?.originFetch(size, true);
        inf.finish();
        resolve(true);
      });
    });
    if (!writer || !complete) return;
    // Commit: the body file is complete; make it visible with its metadata.
    const storedHeaders = { ...headers };
    delete storedHeaders['content-length'];
    const meta: StoredMeta = {
      key: `${ctx.primary}|${head.varyValues.join('\u0000')}`,
      primary: ctx.primary,
      url: ctx.url,
      status: res.status,
      headers: storedHeaders,
      vary,
      varyValues: head.varyValues,
      facts,
      size,
      sha256: hash.digest('hex'),
      storedAt: this.#clock.now(),
    };
    try {
      const committed = await writer.commit(meta);
      this.#hot.delete(committed.key);
      if (this.#store.get(committed.key) === committed) {
        const chunks: Buffer[] = [];
        if (size <= this.#hotMax) {
          inf.subscribe({ data: (c) => chunks.push(c), end() {}, error() {} });
          this.#makeHot(committed, Buffer.concat(chunks));
        }
        this.#announceComplete(ctx.keyBytes, committed);
      }
    } catch (e) {
      this.#log.warn({ url: ctx.url, err: String(e) }, 'store commit failed');
    }
  }

  #announceComplete(keyBytes: Uint8Array, meta: StoredMeta): void {
    const ttl = Math.min(COMPLETE_TTL_SECONDS, this.#ttlOf(meta));
    this.#announce(keyBytes, this.#holder('complete', meta), ttl);
  }

  // ---------------------------------------------------------------------------------------------
  // Site mode: unsafe methods are forwarded uncached and invalidate (RFC 9111 §4.4)

  async #forwardUnsafe(ctx: Ctx): Promise<void> {
    const headers = this.#forwardHeaders(ctx);
    const cl = ctx.reqHeaders['content-length'];
    if (cl !== undefined) headers['content-length'] = cl;
    let res: UpstreamResponse;
    try {
      res = await this.#origin.request({
        url: ctx.url,
        method: ctx.method,
        headers,
        ...(ctx.method !== 'OPTIONS' && ctx.method !== 'DELETE' ? { body: ctx.req } : {}),
      });
    } catch (e) {
      return this.#sendError(ctx.res, ctx.method, this.#originError(e));
    }
    if (res.status >= 200 && res.status < 400) {
      await this.#invalidate(ctx.primary);
      for (const h of ['location', 'content-location']) {
        const v = res.headers[h];
        if (typeof v !== 'string') continue;
        try {
          const target = new URL(v, ctx.url);
          if (target.host === new URL(ctx.url).host) {
            await this.#invalidate(Buffer.from(urlKey(target.href)).toString('hex'));
          }
        } catch {
          /* not a URL */
        }
      }
    }
    const out = flatten(toRecord(res.headers, new Set(['set-cookie'])));
    const sc = res.headers['set-cookie'];
    if (sc !== undefined) for (const c of Array.isArray(sc) ? sc : [sc]) out.push('set-cookie', c);
    out.push(
      'via',
      this.#via,
      'cache-status',
      cacheStatus(CACHE_NAME, ['fwd=method', `fwd-status=${res.status}`]),
    );
    ctx.res.writeHead(res.status, out);
    this.#metrics?.request('bypass', ctx.method, res.status);
    pipeToResponse(res.body, ctx.res);
  }

  async #invalidate(primary: string): Promise<number> {
    let n = 0;
    for (const m of this.#store.variants(primary)) {
      this.#hot.delete(m.key);
      if (await this.#store.delete(m.key)) n++;
    }
    return n;
  }

  #evicted(meta: StoredMeta): void {
    this.#hot.delete(meta.key);
    if (this.#store.variants(meta.primary).length === 0 && this.#index.withdraw) {
      this.#index.withdraw(Buffer.from(meta.primary, 'hex')).catch(() => {});
    }
  }

  #scheduleReannounce(): void {
    if (this.#closing || this.#reannounceMs <= 0) return;
    this.#reannounceTimer = this.#clock.setTimeout(() => {
      this.reannounce();
      this.#scheduleReannounce();
    }, this.#reannounceMs);
  }

  /** Refresh `complete` announcements of every fresh stored object (run periodically). */
  reannounce(): number {
    let n = 0;
    const seen = new Set<string>();
    for (const m of this.#store.list()) {
      if (seen.has(m.primary)) continue;
      const ttl = Math.min(COMPLETE_TTL_SECONDS, this.#ttlOf(m));
      if (ttl <= 0) continue;
      seen.add(m.primary);
      this.#announce(Buffer.from(m.primary, 'hex'), this.#holder('complete', m), ttl);
      n++;
    }
    return n;
  }
}
