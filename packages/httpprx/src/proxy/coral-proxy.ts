/**
 * CoralProxy — the request path (DESIGN.md "httpprx"), one stage per module:
 *
 *   rate limit → fast path (../serve/fast-path.ts) → route (../request/route.ts)
 *     → site mode's other methods (../site/site.ts)
 *     → lookup: stored variants + decide (./lookup.ts, ../cache/decide.ts)
 *         → serve a stored response (../serve/entry.ts)
 *         → join or start a fetch (../fetch/fetcher.ts): peers (../fetch/peer.ts), then the
 *           origin (../fetch/origin.ts); the body to the store's temp file and to every client
 *           at its own pace (../transfer/); commit and announce (../commit/)
 *
 * This class wires the stages together and owns the lifecycle: listen, close, the re-announcement
 * sweep, the cache listing and purges.
 */
import { constants as cryptoConstants } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { Server as TlsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import {
  ConnectionBudget,
  DEFAULT_KEEPALIVE_TIMEOUT_MS,
  guardHttpServer,
  type ListenerLimits,
} from '@coral/connguard';
import { ExchangeTracker, noteOf } from '@coral/accesslog';
import { systemClock } from '@coral/runtime';
import type { TimerHandle } from '@coral/runtime';
import { originKey } from '../connect/index.js';
import type { SmartConnector } from '../connect/index.js';
import {
  CACHE_NAME,
  CLOSE_TIMEOUT_MS,
  DEFAULT_ZONES,
  DISK_BUDGET_BYTES,
  FOLLOW_HTTPS_UPGRADE,
  HOT_OBJECT_MAX_BYTES,
  INDEX_TIMEOUT_MS,
  MAX_OBJECT_BYTES,
  MEMORY_BUDGET_BYTES,
  HEURISTIC_CAP_SECONDS,
  NEGATIVE_TTL_MS,
  NEGATIVE_TTL_SECONDS,
  OPT_OUT_MAX_SITES,
  OPT_OUT_RECHECK_MS,
  ORIGIN_BODY_TIMEOUT_MS,
  ORIGIN_TIMEOUT_MS,
  PEER_FETCHING_TIMEOUT_MS,
  PEER_MAX_TTL_SECONDS,
  PEER_RACE,
  PEER_TIMEOUT_MS,
  PEER_VERIFY_WHOLE_BYTES,
  AUDIT_CONCURRENCY,
  AUDITS_PER_MINUTE,
  QUARANTINE_MAX_SECONDS,
  QUARANTINE_SECONDS,
  REPORTS_PER_MINUTE,
  SUSPECT_SECONDS,
  RATE_LIMIT_BURST,
  RATE_LIMIT_PER_SECOND,
  REANNOUNCE_INTERVAL_MS,
  STALE_ON_ERROR_SECONDS,
  TLS_HANDSHAKE_TIMEOUT_MS,
} from '../constants.js';
import { reannounceAll, withdraw } from '../commit/announce.js';
import { MemberAuditor } from '../audit/auditor.js';
import type { MemberReport } from '../audit/quarantine.js';
import { MemberQuarantine } from '../audit/quarantine.js';
import type { QuarantineEntry, SuspectEntry } from '../audit/quarantine.js';
import { ProxyError } from '../errors.js';
import { Fetcher } from '../fetch/fetcher.js';
import { originError } from '../fetch/origin.js';
import { RateLimiter } from '../guards/rate-limiter.js';
import { normalizeUrl, urlKey } from '../mapping/coral-name.js';
import { createOriginConnector } from '../origin/connector.js';
import { Upstream } from '../origin/upstream.js';
import { PeerConnector } from '../peer/connector.js';
import { answerClientError, refuseConnect } from '../request/client-error.js';
import { keepProcessing, processingIntervalMs } from '../peer/processing.js';
import { mapTarget, route } from '../request/route.js';
import { requestTarget } from '../mapping/target.js';
import { splitHostHeader } from '../mapping/host.js';
import type { RouteConfig } from '../request/route.js';
import { originBase } from '../mapping/target.js';
import type { OriginBase } from '../mapping/target.js';
import { fastHit } from '../serve/fast-path.js';
import { HotCache } from '../hot/hot-cache.js';
import { forwardUnsafe, invalidate } from '../site/site.js';
import { OptOuts, siteOf } from '../site-control/opt-outs.js';
import { FairShare } from '../fairness/fair-share.js';
import type { DomainTraffic } from '../fairness/fair-share.js';
import { sendHome } from '../serve/redirect.js';
import { DiskStore } from '../store/disk-store.js';
import { MemoryStore } from '../store/memory-store.js';
import type { StoredMeta } from '../store/types.js';
import type { ProxyCore } from '../kit/core.js';
import { withAccessHeads } from './access.js';
import { lookup } from './lookup.js';
import { sendError } from '../kit/respond.js';
import type {
  CacheListEntry,
  CacheStats,
  Logger,
  ProxyComponents,
  ProxyOptions,
  TlsCertificate,
  TlsListenOptions,
} from './types.js';

/** One bandwidth share as `CoralProxy.traffic()` reports it. */
export interface TrafficShare {
  /** The cap (bytes per second), 0 when unlimited. */
  capBytesPerSec: number;
  /** Chunks waiting for a grant right now (one per throttled flow). */
  waiting: number;
  /** The top domains by bytes since start, then `(other)`. */
  domains: DomainTraffic[];
}

/**
 * TLS 1.2 renegotiation refused (OpenSSL's `SSL_OP_NO_RENEGOTIATION`: a client's request for a
 * new handshake on an open connection is answered with an alert): each one costs the server a
 * full handshake, and a CDN's clients have no use for it. TLS 1.3 has no renegotiation.
 */
const NO_CLIENT_RENEGOTIATION = cryptoConstants.SSL_OP_NO_RENEGOTIATION;

/**
 * The TLS session-id context, the same in every process: Node's default is a hash of the
 * process's command line (`process.argv`), and OpenSSL resumes no session whose context differs,
 * so members started from another path or with other arguments would never resume each other's
 * tickets even with the same ticket keys.
 */
const TLS_SESSION_ID_CONTEXT = 'coral-httpprx-tls-v1';

/** Bytes of a TLS session-ticket key buffer (key name, HMAC secret, AES key). */
const TICKET_KEY_BYTES = 48;

/** Install session-ticket keys on a listener (OpenSSL copies them; the buffer is not kept). */
function setTicketKeys(server: TlsServer, keys: Uint8Array): void {
  if (!(keys instanceof Uint8Array) || keys.byteLength !== TICKET_KEY_BYTES) {
    throw new RangeError(
      `TLS ticket keys must be ${TICKET_KEY_BYTES} bytes, got ${keys instanceof Uint8Array ? keys.byteLength : typeof keys}`,
    );
  }
  server.setTicketKeys(Buffer.from(keys.buffer, keys.byteOffset, keys.byteLength));
}

const noopLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

export class CoralProxy {
  readonly #core: ProxyCore;
  readonly #route: RouteConfig;
  readonly #fetcher: Fetcher;
  readonly #limiter: RateLimiter;
  readonly #connector: { connector: SmartConnector; close(): void };
  readonly #closeTimeout: number;
  readonly #reannounceMs: number;
  readonly #connections: ConnectionBudget;
  readonly #connectionLimits: ListenerLimits;
  readonly #keepAliveMs: number;
  readonly #quarantine: MemberQuarantine;
  /** Makes the access records (`onAccess`), or undefined. */
  readonly #access: ExchangeTracker | undefined;
  #server: Server | undefined;
  #tlsServer: TlsServer | undefined;
  #opened: Promise<void> | undefined;
  #closing = false;
  #active = 0;
  #reannounceTimer: TimerHandle | undefined;
  readonly #sockets = new Set<Socket>();
  /** The store's byte budget (disk with a dataDir, else memory) and its evictions since start. */
  readonly #storeBudget: number;
  #storeEvictions = 0;

  /** Usable with any `http.Server`: `createServer(proxy.handler)`. */
  readonly handler: (req: IncomingMessage, res: ServerResponse) => void;

  constructor(components: ProxyComponents, options: ProxyOptions) {
    const clock = components.clock ?? systemClock;
    const log0 = components.logger ?? noopLogger;
    const log = log0.child ? log0.child({ component: 'httpprx' }) : log0;
    const sites = new Map<string, OriginBase>(
      Object.entries(options.sites ?? {}).map(([h, u]) => [
        h.toLowerCase(),
        originBase(new URL(u)),
      ]),
    );
    this.#route = { zones: options.zones ?? [...DEFAULT_ZONES], sites, gate: components.gate };
    const limits = {
      maxObjectBytes: options.maxObjectBytes ?? MAX_OBJECT_BYTES,
      hotObjectMaxBytes: options.hotObjectMaxBytes ?? HOT_OBJECT_MAX_BYTES,
      peerTimeoutMs: options.peerTimeoutMs ?? PEER_TIMEOUT_MS,
      peerFetchingTimeoutMs: options.peerFetchingTimeoutMs ?? PEER_FETCHING_TIMEOUT_MS,
      peerRace: options.peerRace ?? PEER_RACE,
      indexTimeoutMs: options.indexTimeoutMs ?? INDEX_TIMEOUT_MS,
      originTimeoutMs: options.originTimeoutMs ?? ORIGIN_TIMEOUT_MS,
      peerMaxTtlSeconds: options.peerMaxTtlSeconds ?? PEER_MAX_TTL_SECONDS,
      peerVerifyWholeBytes: options.peerVerifyWholeBytes ?? PEER_VERIFY_WHOLE_BYTES,
    };
    this.#closeTimeout = options.closeTimeoutMs ?? CLOSE_TIMEOUT_MS;
    this.#reannounceMs = options.reannounceIntervalMs ?? REANNOUNCE_INTERVAL_MS;
    // Connection time is wall time unless the node's budget says otherwise: a test's manual clock
    // moving hours ahead must not close the keep-alive connections its client holds.
    this.#connections = components.connections ?? new ConnectionBudget();
    this.#connectionLimits = options.connections ?? {};
    // Node's own keep-alive timer (and its Keep-Alive header) agrees with the budget's.
    this.#keepAliveMs = this.#connectionLimits.keepAliveTimeoutMs ?? DEFAULT_KEEPALIVE_TIMEOUT_MS;
    const memBudget = options.memoryBudgetBytes ?? MEMORY_BUDGET_BYTES;
    const hot = new HotCache({ budgetBytes: memBudget, maxObjectBytes: limits.hotObjectMaxBytes });
    const onRemove = (key: string, primary: string, reason: string) => {
      if (reason === 'evict') this.#storeEvictions++;
      hot.delete(key);
      // The last variant of a URL evicted: the fleet should stop asking us for it.
      if (reason === 'evict' && !this.#core.store.has(primary)) {
        void withdraw(this.#core, Buffer.from(primary, 'hex'));
      }
    };
    this.#storeBudget = options.dataDir
      ? (options.diskBudgetBytes ?? DISK_BUDGET_BYTES)
      : memBudget;
    const store = options.dataDir
      ? new DiskStore(
          { onRemove, ...(components.bodyFiles ? { files: components.bodyFiles } : {}) },
          { dir: options.dataDir, budgetBytes: this.#storeBudget },
        )
      : new MemoryStore({ onRemove }, { budgetBytes: memBudget });
    this.#limiter = new RateLimiter(
      { clock },
      {
        perSecond: options.rateLimit?.perSecond ?? RATE_LIMIT_PER_SECOND,
        burst: options.rateLimit?.burst ?? options.rateLimit?.perSecond ?? RATE_LIMIT_BURST,
      },
    );
    const connector = createOriginConnector(
      {
        clock,
        ...(components.resolver ? { resolver: components.resolver } : {}),
        ...(components.dial ? { dial: components.dial } : {}),
      },
      {
        allowPrivateOrigins: options.allowPrivateOrigins ?? false,
        // The operator named the site origins: they may be on a private network without opening
        // every private address to Coralized names.
        privateAllowed: [...sites.values()].map((o) => originKey(o.hostname, o.port)),
        ...(options.hosts ? { hosts: options.hosts } : {}),
        timeoutMs: limits.originTimeoutMs,
        negativeTtlMs: options.negativeTtlMs ?? NEGATIVE_TTL_MS,
        ...(options.originCa ? { originCa: options.originCa } : {}),
      },
    );
    this.#connector = connector;
    // Peers are reached only at verified member addresses (or what the origin policy allows);
    // their bounds come from the clock (racePeers).
    const quarantine = new MemberQuarantine(
      { clock },
      {
        quarantineMs: (options.quarantineSeconds ?? QUARANTINE_SECONDS) * 1000,
        maxMs: (options.quarantineMaxSeconds ?? QUARANTINE_MAX_SECONDS) * 1000,
        suspectMs: (options.suspectSeconds ?? SUSPECT_SECONDS) * 1000,
      },
    );
    this.#quarantine = quarantine;
    const members = components.members ? quarantine.view(components.members) : undefined;
    this.#access = components.onAccess
      ? new ExchangeTracker({ clock, onRecord: components.onAccess }, { cacheName: CACHE_NAME })
      : undefined;
    const peerConnector = new PeerConnector(
      { clock, ...(components.dial ? { dial: components.dial } : {}) },
      {
        allowPrivate: options.allowPrivateOrigins ?? false,
        timeoutMs: Math.max(limits.peerTimeoutMs, limits.peerFetchingTimeoutMs),
      },
    );
    this.#core = {
      clock,
      log,
      metrics: this.#access
        ? withAccessHeads(components.metrics, this.#access)
        : components.metrics,
      index: components.index,
      store,
      hot,
      policy: {
        defaultTtlSeconds: options.defaultTtlSeconds ?? 0,
        heuristicMaxSeconds: options.heuristicMaxSeconds ?? HEURISTIC_CAP_SECONDS,
        negativeTtlSeconds: options.negativeTtlSeconds ?? NEGATIVE_TTL_SECONDS,
        staleOnErrorSeconds: options.staleOnErrorSeconds ?? STALE_ON_ERROR_SECONDS,
      },
      via: `1.1 coral-${options.self.nodeId.slice(0, 12)}`,
      self: { ...options.self },
      zones: this.#route.zones,
      links: {
        tlsPort: undefined,
        followHttpsUpgrade: options.followHttpsUpgrade ?? FOLLOW_HTTPS_UPGRADE,
      },
      members,
      quarantined: (id) => quarantine.quarantined(id),
      audit: undefined,
      peerAuth: components.peerAuth,
      checkOrigin: (url) => {
        const u = new URL(url);
        const port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
        return connector.connector.checkAddressPolicy(u.hostname, port).catch((e: unknown) => {
          throw originError(e);
        });
      },
      origin: new Upstream(
        { connect: connector.connect },
        {
          headersTimeoutMs: limits.originTimeoutMs,
          bodyTimeoutMs: options.originBodyTimeoutMs ?? ORIGIN_BODY_TIMEOUT_MS,
        },
      ),
      peers: new Upstream(
        { connect: peerConnector.undiciConnect() },
        { headersTimeoutMs: 0, bodyTimeoutMs: 0, connections: 8 },
      ),
      peerConnector,
      limits,
      compress: options.compress ?? true,
      optOuts: new OptOuts(
        {
          clock,
          index: components.index,
          members,
          log,
          metrics: components.metrics,
        },
        {
          nodeId: options.self.nodeId,
          recheckMs: options.optOutRecheckMs ?? OPT_OUT_RECHECK_MS,
          lookupTimeoutMs: limits.indexTimeoutMs,
          maxSites: OPT_OUT_MAX_SITES,
        },
      ),
      bandwidth: {
        origin: new FairShare(
          { clock },
          { bytesPerSec: options.bandwidth?.originBytesPerSec ?? 0 },
        ),
        served: new FairShare(
          { clock },
          { bytesPerSec: options.bandwidth?.servedBytesPerSec ?? 0 },
        ),
      },
      admit: components.admit,
      tasks: new Set(),
    };
    // Keyed mode only: there a member's copy is stored and passed on, and reports are signed.
    if (components.members?.recordsAuthenticated && components.peerAuth) {
      const route = this.#route;
      this.#core.audit = new MemberAuditor(
        {
          core: this.#core,
          quarantine,
          members: components.members,
          random: components.random ?? Math.random,
          map: (host, path) => {
            try {
              const name = splitHostHeader(host).name;
              return mapTarget(route, host, name, requestTarget(path, { name })).url;
            } catch {
              return undefined;
            }
          },
          ...(components.onQuarantine ? { onQuarantine: components.onQuarantine } : {}),
        },
        {
          fraction: options.auditFraction ?? 0,
          perMinute: options.auditsPerMinute ?? AUDITS_PER_MINUTE,
          concurrency: options.auditConcurrency ?? AUDIT_CONCURRENCY,
          reportsPerMinute: options.reportsPerMinute ?? REPORTS_PER_MINUTE,
        },
      );
    }
    this.#fetcher = new Fetcher(this.#core);
    this.handler = this.#onRequest;
  }

  /** The SmartConnect origin connector (its `stats()` and `cacheSnapshot()` feed the admin API). */
  get originConnector(): SmartConnector {
    return this.#connector.connector;
  }

  /** Open the store (done by `listen`; call it yourself when mounting `handler` elsewhere). */
  open(): Promise<void> {
    this.#opened ??= (async () => {
      await this.#core.store.open();
      this.#scheduleReannounce();
    })();
    return this.#opened;
  }

  async listen(port: number, host?: string): Promise<{ address: string; port: number }> {
    await this.open();
    // Host is checked by the handler (admission), which answers with the proxy's own error page.
    const server = createServer(
      { keepAliveTimeout: this.#keepAliveMs, requireHostHeader: false },
      this.handler,
    );
    this.#server = server;
    const a = await this.#start(server, 'http', port, host);
    if (this.#core.self.httpPort === 0) this.#core.self.httpPort = a.port;
    // Objects kept on disk from a previous run are announced again right away (sent by the time
    // listen resolves).
    await this.reannounce();
    return { address: a.address, port: a.port };
  }

  /**
   * Start the TLS listener (HTTP/1.1 over TLS, ALPN `http/1.1`) with a certificate for
   * `*.<zone>` and the zone apex. Requests over it are routed like plain ones (the name says
   * which origin); links are rewritten to the one-label https names on `publicPort` (default:
   * the port listened on), and a same-URL http → https redirect is no longer followed inside the
   * proxy but passed on, rewritten. Call `listen` for the plain listener as well (it owns the
   * announced `httpPort`).
   */
  async listenTls(options: TlsListenOptions): Promise<{ address: string; port: number }> {
    if (this.#tlsServer) throw new Error('the TLS listener is already started');
    await this.open();
    const server = createTlsServer(
      {
        cert: options.cert,
        key: options.key,
        ALPNProtocols: ['http/1.1'],
        secureOptions: NO_CLIENT_RENEGOTIATION,
        sessionIdContext: TLS_SESSION_ID_CONTEXT,
        handshakeTimeout: options.handshakeTimeoutMs ?? TLS_HANDSHAKE_TIMEOUT_MS,
        keepAliveTimeout: this.#keepAliveMs,
        requireHostHeader: false,
      },
      this.handler,
    );
    // Set after construction, never as the `ticketKeys` option: Node keeps that option's buffer
    // and sets it again on every `setSecureContext`, undoing later rotations (and the caller's
    // zeroing of it would install all-zero keys).
    if (options.ticketKeys) setTicketKeys(server, options.ticketKeys);
    server.on('tlsClientError', (err: Error & { code?: string }) => {
      this.#core.log.debug({ err: err.message, code: err.code }, 'TLS handshake failed');
    });
    this.#tlsServer = server;
    const a = await this.#start(server, 'https', options.port, options.host);
    this.#core.links.tlsPort = options.publicPort ?? a.port;
    return { address: a.address, port: a.port };
  }

  /**
   * Replace the TLS listener's certificate and key (SIGHUP reload): new handshakes use them,
   * connections already open keep theirs and are not dropped. Throws when the PEM does not parse
   * or the key does not match, and then the old certificate stays in use.
   */
  setTlsCertificate(cert: TlsCertificate): void {
    if (!this.#tlsServer) throw new Error('the TLS listener is not started');
    // `setSecureContext` builds a new context with new random ticket keys: the keys in use are
    // put back, so tickets issued before the reload (and fleet-shared keys) still resume.
    const keys = this.#tlsServer.getTicketKeys();
    try {
      this.#tlsServer.setSecureContext({
        cert: cert.cert,
        key: cert.key,
        secureOptions: NO_CLIENT_RENEGOTIATION,
        // Not kept from the listener's options by `setSecureContext` either.
        sessionIdContext: TLS_SESSION_ID_CONTEXT,
      });
      this.#tlsServer.setTicketKeys(keys);
    } finally {
      keys.fill(0);
    }
  }

  /**
   * Replace the TLS listener's session-ticket keys (48 bytes; copied, the caller may zero its
   * buffer): new handshakes issue and accept tickets under them only, so tickets issued under
   * the previous keys no longer resume (Node holds one key per listener). Kept across
   * `setTlsCertificate`.
   */
  setTlsTicketKeys(keys: Uint8Array): void {
    if (!this.#tlsServer) throw new Error('the TLS listener is not started');
    setTicketKeys(this.#tlsServer, keys);
  }

  /** The TLS listener's public port (links point there), or undefined while TLS is off. */
  get tlsPort(): number | undefined {
    return this.#core.links.tlsPort;
  }

  /**
   * The error pages, CONNECT refusal, connection budget (per-client caps, timeouts, the node's
   * ceiling; accept errors counted) and connection tracking every listener shares.
   */
  async #start(
    server: Server | TlsServer,
    name: 'http' | 'https',
    port: number,
    host?: string,
  ): Promise<AddressInfo> {
    const via = this.#core.via;
    guardHttpServer(
      server,
      this.#connections.listener(name, this.#connectionLimits),
      { logger: this.#core.log },
      { tls: name === 'https' },
    );
    server.on('clientError', (err: Error & { code?: string }, socket) => {
      // A failed TLS handshake (https listener): there is no channel to answer on; with a
      // clientError listener Node leaves closing the socket to us.
      if (/^ERR_(SSL|TLS)_/.test(err.code ?? '')) {
        socket.destroy();
        return;
      }
      const answered = answerClientError(err, socket, via);
      if (answered) this.#core.metrics?.clientError?.(answered.code);
    });
    server.on('connect', (_req, socket) => refuseConnect(socket, via, 'GET, HEAD'));
    server.on('connection', (s: Socket) => {
      this.#sockets.add(s);
      s.on('close', () => this.#sockets.delete(s));
    });
    const listening = once(server, 'listening'); // rejects with the listen error
    server.listen(port, host);
    await listening;
    return server.address() as AddressInfo;
  }

  /** Stop accepting, let in-flight responses finish (bounded), then release everything. */
  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    this.#reannounceTimer?.cancel();
    const deadline = Date.now() + this.#closeTimeout;
    const servers = [this.#server, this.#tlsServer].filter((s) => s !== undefined);
    if (servers.length > 0) {
      const closed = Promise.all(
        servers.map((server) => new Promise<void>((r) => server.close(() => r()))),
      );
      const idle = () => servers.forEach((s) => s.closeIdleConnections());
      idle();
      while (this.#active > 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
        idle();
      }
      servers.forEach((s) => s.closeAllConnections());
      for (const s of this.#sockets) s.destroy();
      await closed;
    }
    // Let fetches and commits in progress finish within the same bound, then cut whatever is
    // left (an unfinished body is never committed) and wait briefly for the tasks to unwind.
    const tasks = this.#core.tasks;
    const settle = (ms: number) =>
      Promise.race([
        Promise.allSettled([...tasks]),
        new Promise((r) => setTimeout(r, Math.max(0, ms)).unref()),
      ]);
    await settle(deadline - Date.now());
    await this.#core.origin.destroy();
    await this.#core.peers.destroy();
    await settle(1_000);
    this.#connector.close();
    if (this.#opened) await this.#opened.catch(() => {});
    await this.#core.store.close();
  }

  /**
   * What the cache holds against its budgets, read from memory (no I/O): `memory` the hot
   * objects kept in memory (`memoryBudgetBytes`; without a dataDir, the whole cache), `disk` the
   * disk store (with a dataDir). `evictions` counts entries dropped since start to stay within the
   * budget (not purges, deletions or replacements).
   */
  cacheStats(): CacheStats {
    const { store, hot } = this.#core;
    if (!(store instanceof DiskStore)) {
      return {
        memory: {
          bytes: store.usedBytes,
          objects: store.count,
          budgetBytes: this.#storeBudget,
          evictions: this.#storeEvictions,
        },
      };
    }
    return {
      memory: {
        bytes: hot.bytes,
        objects: hot.size,
        budgetBytes: hot.budgetBytes,
        evictions: hot.evictions,
      },
      disk: {
        bytes: store.usedBytes,
        objects: store.count,
        budgetBytes: this.#storeBudget,
        evictions: this.#storeEvictions,
      },
    };
  }

  /** Every stored variant (its listing read from the store as it goes). */
  async cacheList(): Promise<CacheListEntry[]> {
    await this.open();
    const out: CacheListEntry[] = [];
    for await (const m of this.#core.store.listing()) {
      const e: CacheListEntry = {
        url: m.url,
        key: m.key,
        status: m.status,
        size: m.size,
        sha256: m.sha256,
        storedAt: m.storedAt,
        expiresAt: m.freshUntil,
        vary: m.vary,
      };
      if (m.contentType) e.contentType = m.contentType;
      out.push(e);
    }
    return out;
  }

  /** Remove every stored variant of `url` and withdraw the announcement (in the background). */
  async purge(url: string): Promise<boolean> {
    const { removed, keyBytes } = await this.#remove(url);
    void this.#withdraw(keyBytes);
    return removed;
  }

  /**
   * {@link purge}, waiting for the withdrawal: it resolves once the index took this node's
   * withdrawal (`withdrawn` false when that failed, which is logged), so members asking the index
   * next no longer find this node holding `url`. The node's one-URL admin purge answers with it.
   */
  async purgeAndWithdraw(url: string): Promise<{ purged: boolean; withdrawn: boolean }> {
    const { removed, keyBytes } = await this.#remove(url);
    return { purged: removed, withdrawn: await this.#withdraw(keyBytes) };
  }

  async #remove(url: string): Promise<{ removed: boolean; keyBytes: Uint8Array }> {
    await this.open();
    const keyBytes = urlKey(normalizeUrl(url));
    const removed = await invalidate(this.#core, Buffer.from(keyBytes).toString('hex'));
    return { removed: removed > 0, keyBytes };
  }

  /**
   * Remove every stored variant whose metadata matches (purge by prefix, by tag...); URLs left
   * with no variant are withdrawn from the index (in the background). Resolves to the number of
   * variants removed.
   */
  async purgeWhere(match: (meta: StoredMeta) => boolean): Promise<number> {
    await this.open();
    const gone = await this.#core.store.deleteWhere(match);
    for (const primary of new Set(gone.map((m) => m.primary))) {
      if (!this.#core.store.has(primary)) void this.#withdraw(Buffer.from(primary, 'hex'));
    }
    return gone.length;
  }

  /**
   * Withdraw an announcement, as a task close() waits for; whether the index took it. Purges do
   * not wait for it (a DSHT put can wait seconds on retries to unreachable members, and a purge's
   * answer must not), except {@link purgeAndWithdraw}; failures are logged by `withdraw`.
   */
  #withdraw(keyBytes: Uint8Array): Promise<boolean> {
    const done = withdraw(this.#core, keyBytes);
    const task: Promise<void> = done.then(() => {
      this.#core.tasks.delete(task);
    });
    this.#core.tasks.add(task);
    return done;
  }

  /**
   * A member reported another for serving a copy the origin disagrees with (the node package
   * checks the report's signature): the accused is audited here — the reported object at once,
   * every copy from it for `suspectSeconds` — and quarantined only on this node's own evidence.
   * Ignored without an audit (open mode).
   */
  memberReported(report: MemberReport, reporter: string): void {
    this.#core.audit?.reported(report, reporter);
  }

  /** Members quarantined here, and suspects (reported by others, audited on every copy). */
  quarantine(): { quarantined: QuarantineEntry[]; suspects: SuspectEntry[] } {
    return this.#quarantine.list();
  }

  /** Origins that sent their clients home (`Coral-Control: redirect-home`), with the end of each. */
  optOuts(): Array<{ site: string; until: number }> {
    return this.#core.optOuts.list();
  }

  /**
   * Body bytes per origin domain since start — fetched from origins and served — with the time
   * flows waited for the bandwidth caps: the `top` domains by bytes, then `(other)`.
   */
  traffic(top = 20): { origin: TrafficShare; served: TrafficShare } {
    const view = (s: FairShare): TrafficShare => ({
      capBytesPerSec: s.bytesPerSec,
      waiting: s.queued,
      domains: s.stats(top),
    });
    return { origin: view(this.#core.bandwidth.origin), served: view(this.#core.bandwidth.served) };
  }

  /** Refresh `complete` announcements of every fresh stored object (run periodically). */
  reannounce(): Promise<number> {
    return reannounceAll(this.#core).catch((e: unknown) => {
      this.#core.log.warn({ err: String(e) }, 're-announcement failed');
      return 0;
    });
  }

  #scheduleReannounce(): void {
    if (this.#closing || this.#reannounceMs <= 0) return;
    this.#reannounceTimer = this.#core.clock.setTimeout(() => {
      void this.reannounce();
      this.#scheduleReannounce();
    }, this.#reannounceMs);
  }

  // ---------------------------------------------------------------------------------------------
  // Requests

  /** The request handler (an arrow, so that `handler` is this very function, not a wrapper). */
  readonly #onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    this.#access?.start(req, res);
    const core = this.#core;
    const client = req.socket.remoteAddress ?? '';
    // One clock read serves the limiter and the fast path.
    const now = core.clock.now();
    if (!this.#limiter.take(client, now)) {
      core.metrics?.rateLimited();
      const err = new ProxyError('CORAL_RATE_LIMITED', `too many requests from ${client}`);
      sendError(res, req.method ?? 'GET', err, core.via, core.metrics, {
        'retry-after': String(this.#limiter.retryAfter(client)),
      });
      return;
    }
    if (this.#opened && !this.#closing && fastHit(core, req, res, now)) return;
    req.on('error', () => {});
    res.on('error', () => {});
    this.#active++;
    res.on('close', () => this.#active--);
    this.#handle(req, res).catch((e: unknown) => {
      core.log.error({ err: String(e), url: req.url }, 'request failed');
      const err =
        e instanceof ProxyError ? e : new ProxyError('CORAL_ORIGIN_UNREACHABLE', String(e));
      sendError(res, req.method ?? 'GET', err, core.via, core.metrics);
    });
  };

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    await this.open();
    const core = this.#core;
    const method = req.method ?? 'GET';
    if (this.#closing) {
      const err = new ProxyError('CORAL_SHUTTING_DOWN', 'proxy is shutting down');
      return sendError(res, method, err, core.via, core.metrics);
    }
    const routed = route(core, this.#route, req, res);
    if (routed.kind === 'refused') {
      if (routed.peerRejected !== undefined) {
        core.metrics?.peerRejected?.(routed.peerRejected);
        core.log.debug(
          { peer: req.socket.remoteAddress, reason: routed.peerRejected },
          'peer request refused: Coral-Peer-Auth did not verify',
        );
      }
      return sendError(res, method, routed.error, core.via, core.metrics, routed.headers);
    }
    const { ctx } = routed;
    const note = noteOf(res);
    if (note) note.originUrl = ctx.url;
    if (routed.designated) {
      core.metrics?.designated?.('taken');
      // 102 Processing at once and then at a beat until the head (../peer/processing.ts): the
      // asker knows its ask was taken, and waits for the origin while the beats keep coming.
      keepProcessing(res, core.clock, processingIntervalMs(core.limits.peerFetchingTimeoutMs));
    }
    if (method !== 'GET' && method !== 'HEAD') return forwardUnsafe(core, ctx);
    // An origin that opted out gets its clients back (Coralized names; a configured site's origin
    // is the operator's own). A member asking for it is told we do not serve it.
    if (ctx.mode === 'coral') {
      const until = await core.optOuts.until(siteOf(ctx.url), ctx.peer);
      if (until > core.clock.now()) {
        return ctx.peer ? this.#fetcher.refuse(ctx, 'the origin opted out') : sendHome(core, ctx);
      }
    }
    return lookup(core, this.#fetcher, ctx);
  }
}
