/**
 * SmartConnect: connect to an origin by racing all of its addresses, and remember the winner.
 *
 * Following the SmartConnect seed, section by section:
 * - resolve the name into every IPv4 and IPv6 address (one resolution; the address policy filters
 *   it before any attempt, and only addresses that passed are dialled);
 * - start a TCP connection to every address at once (IPv6 first, the seed's slight IPv6 bias), keep
 *   the first that connects and abort the others;
 * - cache `host:port → address, connect time` (16 entries, 600 s, oldest displaced first);
 * - a cached address is tried alone; if it has not connected within twice its recorded connect
 *   time (never less than `floorMs`), a new resolution and full race start in parallel while the
 *   cached attempt keeps going; whichever connects first is used and cached. A cached address
 *   that fails is evicted, and the race starts at once;
 * - a name with no address fails with `EADDRNOTAVAIL`; the bounded variant (`timeoutMs`) with
 *   `ETIMEDOUT`.
 *
 * Time is an injected `Clock` and connecting an injected `dial`, so tests drive the thresholds and
 * timeouts by hand and can prove that no connection attempt was made.
 */
import net from 'node:net';
import tls from 'node:tls';
import type { ConnectionOptions } from 'node:tls';

import { systemClock } from '@coral/runtime';
import type { Clock, TimerHandle } from '@coral/runtime';
import type { buildConnector } from 'undici';

import { filterAddresses } from './address-policy.js';
import {
  ConnectAbortedError,
  InvalidOriginError,
  OriginAddressUnavailableError,
  OriginConnectError,
  OriginForbiddenError,
  OriginNegativelyCachedError,
  OriginResolveError,
  OriginTimeoutError,
  OriginUnreachableError,
} from './errors.js';
import { NegativeCache } from './negative-cache.js';
import { HostsResolver, SystemResolver, assertValidHost, normalizeHost } from './resolver.js';
import type { HostsMap, ResolvedAddress, Resolver } from './resolver.js';

/** Entries in the winner cache (seed: SMART_CONN_CACHE_SIZE; 0 disables the cache). */
export const DEFAULT_CACHE_SIZE = 16;
/** Age at which a cached winner is forgotten, ms (seed: SMART_CONN_CACHE_TIME, 600 s). */
export const DEFAULT_CACHE_TTL_MS = 600_000;
/**
 * Lower bound on the "twice the recorded connect time" wait before a cached address gets company,
 * ms (seed: SMART_CONN_MIN_TIMEOUT). 100 ms absorbs ordinary jitter on a path that connected in a
 * few ms without letting a dead cached address delay the race noticeably.
 */
export const DEFAULT_FLOOR_MS = 100;
/** Connect (and TLS handshake) bound used by {@link SmartConnector.undiciConnect}, like undici's own. */
export const DEFAULT_UNDICI_CONNECT_TIMEOUT_MS = 10_000;
/** Negative caching of failures is off unless `negativeTtlMs` is set (recommended: 5000). */
export const DEFAULT_CONNECT_NEGATIVE_TTL_MS = 0;

/** What `dial` is asked to connect to: always an IP literal that passed the address policy. */
export interface DialTarget {
  address: string;
  family: 4 | 6;
  port: number;
}

/**
 * Open one TCP connection. Must resolve with the connected socket, reject on failure, and, when
 * `signal` aborts before that, destroy its socket and reject.
 */
export type Dial = (target: DialTarget, signal: AbortSignal) => Promise<net.Socket>;

export interface SmartConnectorComponents {
  clock?: Clock;
  /** Name resolution (default: {@link SystemResolver}); the `hosts` option is overlaid on it. */
  resolver?: Resolver;
  /** Connection opening (default: {@link netDial}, `net.connect` to the IP literal). */
  dial?: Dial;
}

export interface SmartConnectorOptions {
  /** Winner-cache entries (default {@link DEFAULT_CACHE_SIZE}; 0 disables caching). */
  cacheSize?: number;
  /** Winner-cache entry lifetime in ms (default {@link DEFAULT_CACHE_TTL_MS}). */
  cacheTtlMs?: number;
  /** Floor of the cached-address patience in ms (default {@link DEFAULT_FLOOR_MS}). */
  floorMs?: number;
  /**
   * Bound on a whole `connect()` (resolution included), ms. Absent: unbounded, like `connect(2)`
   * (each attempt then ends at the kernel's own SYN retry limit). Overridable per call.
   */
  timeoutMs?: number;
  /** Allow origins on loopback, private, link-local... addresses (default false). */
  allowPrivate?: boolean;
  /**
   * Origins (`host:port`, `[v6]:port` for IPv6 literals; host as normalized) whose addresses may
   * be private even without `allowPrivate`: origins the operator named, such as site-mode
   * origins on a campus network. Everything else keeps the policy.
   */
  privateAllowed?: readonly string[];
  /** Hosts-file overrides that win over the resolver: `{ 'origin.test': ['127.0.0.1'] }`. */
  hosts?: HostsMap;
  /**
   * Remember a failed `connect(host, port)` for this many ms and fail repeats at once with
   * `CORAL_ORIGIN_NEGATIVE_CACHED` (default {@link DEFAULT_CONNECT_NEGATIVE_TTL_MS} = off).
   */
  negativeTtlMs?: number;
}

export interface ConnectOptions {
  signal?: AbortSignal;
  /** Overrides the connector's `timeoutMs` for this call. */
  timeoutMs?: number;
}

export interface CacheSnapshotEntry {
  /** `host:port` (`[v6]:port` for IPv6 literal hosts). */
  key: string;
  address: string;
  family: 4 | 6;
  /** Connect time recorded when the address won, ms. */
  connectMs: number;
  /** Time since it was cached, ms. */
  ageMs: number;
}

/** Options for {@link SmartConnector.undiciConnect}. */
export interface UndiciConnectOptions {
  /** Bound on TCP connect + TLS handshake, ms (default: the connector's `timeoutMs`, else 10 s). */
  timeoutMs?: number;
  /** Extra `tls.connect` options for https origins (`ca`, `rejectUnauthorized`, ...). */
  tls?: Omit<ConnectionOptions, 'socket' | 'host' | 'port'>;
  /** TCP keep-alive initial delay, ms (default 60 s, as undici); 0 disables keep-alive. */
  keepAliveInitialDelayMs?: number;
}

/** Counters since construction, for metrics and the admin API. */
export interface ConnectStats {
  /** `connect()` calls that passed input validation. */
  connects: number;
  /** Calls that started from a cached winner. */
  cacheHits: number;
  /** Cached attempts that connected within their patience (no race needed). */
  cacheWins: number;
  /** Full races started (resolution + dial of every address). */
  races: number;
  /** Races started because a cached address was too slow. */
  slowCacheRaces: number;
  /** Cached entries evicted because their address failed. */
  evictions: number;
  /** Connection attempts made (every dial). */
  dials: number;
  /** Resolved addresses the policy refused (never dialled). */
  refusedAddresses: number;
  /** Calls that failed, by error code. */
  failures: Record<string, number>;
}

/** The undici `connect` option type (`buildConnector.connector`, unchanged from undici 7 to 8). */
export type UndiciConnector = buildConnector.connector;

interface CacheEntry {
  address: string;
  family: 4 | 6;
  connectMs: number;
  storedAt: number;
}

/** The default dial: `net.connect` to an IP literal (no name lookup can happen here). */
export const netDial: Dial = (target, signal) =>
  new Promise<net.Socket>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const socket = net.connect({ host: target.address, port: target.port, family: target.family });
    const cleanup = (): void => {
      signal.removeEventListener('abort', onAbort);
      socket.off('connect', onConnect);
      socket.off('error', onError);
    };
    const onAbort = (): void => {
      cleanup();
      socket.destroy();
      reject(signal.reason);
    };
    const onConnect = (): void => {
      cleanup();
      resolve(socket);
    };
    const onError = (err: Error): void => {
      cleanup();
      socket.destroy();
      reject(err);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    socket.once('connect', onConnect);
    socket.once('error', onError);
  });

/** The key of an origin in the winner cache and in `privateAllowed`: `host:port`, `[v6]:port`. */
export function originKey(host: string, port: number): string {
  return cacheKey(normalizeHost(host), port);
}

function cacheKey(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

function validPort(port: unknown): port is number {
  return typeof port === 'number' && Number.isInteger(port) && port >= 1 && port <= 65_535;
}

function nonNegative(name: string, v: number | undefined): void {
  if (v !== undefined && !(Number.isFinite(v) && v >= 0)) {
    throw new RangeError(`SmartConnector option ${name} must be a finite number >= 0, got ${v}`);
  }
}

/** IPv6 before IPv4 (stable within a family): the seed's slight bias towards IPv6. */
function raceOrder(list: readonly ResolvedAddress[]): ResolvedAddress[] {
  return [...list.filter((a) => a.family === 6), ...list.filter((a) => a.family === 4)];
}

export class SmartConnector {
  readonly #clock: Clock;
  readonly #resolver: Resolver;
  readonly #dial: Dial;
  readonly cacheSize: number;
  readonly cacheTtlMs: number;
  readonly floorMs: number;
  readonly timeoutMs: number | undefined;
  readonly allowPrivate: boolean;
  readonly #privateAllowed: ReadonlySet<string>;
  /** Insertion order = age order: the first key is the oldest, displaced first. */
  readonly #cache = new Map<string, CacheEntry>();
  readonly #negative: NegativeCache<unknown> | undefined;
  readonly #stats: ConnectStats = {
    connects: 0,
    cacheHits: 0,
    cacheWins: 0,
    races: 0,
    slowCacheRaces: 0,
    evictions: 0,
    dials: 0,
    refusedAddresses: 0,
    failures: {},
  };

  constructor(components: SmartConnectorComponents = {}, options: SmartConnectorOptions = {}) {
    this.#clock = components.clock ?? systemClock;
    this.#resolver = new HostsResolver(
      { fallback: components.resolver ?? new SystemResolver() },
      options.hosts === undefined ? {} : { hosts: options.hosts },
    );
    this.#dial = components.dial ?? netDial;
    this.cacheSize = options.cacheSize ?? DEFAULT_CACHE_SIZE;
    this.cacheTtlMs = options.cacheTtlMs ?? DEFAULT_CACHE_TTL_MS;
    this.floorMs = options.floorMs ?? DEFAULT_FLOOR_MS;
    this.timeoutMs = options.timeoutMs;
    this.allowPrivate = options.allowPrivate ?? false;
    this.#privateAllowed = new Set(options.privateAllowed ?? []);
    if (!Number.isInteger(this.cacheSize) || this.cacheSize < 0) {
      throw new RangeError(`SmartConnector option cacheSize must be an integer >= 0`);
    }
    nonNegative('cacheTtlMs', this.cacheTtlMs);
    nonNegative('floorMs', this.floorMs);
    nonNegative('timeoutMs', this.timeoutMs);
    const negTtl = options.negativeTtlMs ?? DEFAULT_CONNECT_NEGATIVE_TTL_MS;
    nonNegative('negativeTtlMs', negTtl);
    this.#negative =
      negTtl > 0 ? new NegativeCache({ clock: this.#clock }, { ttlMs: negTtl }) : undefined;
  }

  /**
   * Connect to `host:port` (a DNS name or an IP literal) and resolve with the connected socket.
   * Rejects with an {@link OriginConnectError}: `EADDRNOTAVAIL`, `ETIMEDOUT`,
   * `CORAL_ORIGIN_FORBIDDEN`, `CORAL_ORIGIN_UNREACHABLE`, `CORAL_ORIGIN_DNS_FAILED`,
   * `CORAL_INVALID_ORIGIN`, `CORAL_ORIGIN_NEGATIVE_CACHED` or `ABORT_ERR`.
   */
  async connect(host: string, port: number, opts: ConnectOptions = {}): Promise<net.Socket> {
    assertValidHost(host);
    if (!validPort(port)) {
      throw new InvalidOriginError(`invalid origin port ${JSON.stringify(port)}`);
    }
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    nonNegative('timeoutMs', timeoutMs);
    const h = normalizeHost(host);
    const key = cacheKey(h, port);
    if (opts.signal?.aborted) throw new ConnectAbortedError(h, port, opts.signal.reason);
    this.#stats.connects++;
    const remembered = this.#negative?.get(key);
    if (remembered)
      throw new OriginNegativelyCachedError(key, remembered.error, remembered.retryAfterMs);
    try {
      return await this.#connect(h, port, key, opts.signal, timeoutMs);
    } catch (err) {
      const code = err instanceof OriginConnectError ? err.code : 'UNKNOWN';
      this.#stats.failures[code] = (this.#stats.failures[code] ?? 0) + 1;
      if (this.#negative && !(err instanceof ConnectAbortedError)) this.#negative.set(key, err);
      throw err;
    }
  }

  /**
   * Would a connection to `host:port` pass the address policy? Rejects with
   * {@link OriginForbiddenError} when the name resolves only to refused addresses (the same check,
   * the same resolver and hosts map as `connect`), with {@link InvalidOriginError} for an invalid
   * host or port; resolves otherwise — also when the name does not resolve or the lookup outlasts
   * `timeoutMs`: that refuses nothing here, and a connection would fail on its own. A winner
   * cached from an earlier connection passed the policy when it was dialled: no lookup then.
   * For a caller about to have someone else fetch the origin (a fleet member) on its behalf.
   */
  async checkAddressPolicy(
    host: string,
    port: number,
    opts: { timeoutMs?: number } = {},
  ): Promise<void> {
    assertValidHost(host);
    if (!validPort(port)) {
      throw new InvalidOriginError(`invalid origin port ${JSON.stringify(port)}`);
    }
    const h = normalizeHost(host);
    const key = cacheKey(h, port);
    if (this.#cacheGet(key)) return;
    const ac = new AbortController();
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    let timer: TimerHandle | undefined;
    const expired = new Promise<undefined>((resolve) => {
      if (timeoutMs !== undefined) {
        timer = this.#clock.setTimeout(() => {
          ac.abort(new OriginTimeoutError(h, port, timeoutMs));
          resolve(undefined);
        }, timeoutMs);
      }
    });
    let addrs: readonly ResolvedAddress[] | undefined;
    try {
      addrs = await Promise.race([
        // A name that does not resolve is not refused here: the fetch's own connect fails on it
        // and reports it (CORAL_ORIGIN_DNS_FAILED), so the error is not lost.
        this.#resolver.resolve(h, { signal: ac.signal }).catch(() => undefined),
        expired,
      ]);
    } finally {
      timer?.cancel();
    }
    if (!addrs || addrs.length === 0) return;
    const { allowed, refused } = filterAddresses(addrs, {
      allowPrivate: this.allowPrivate || this.#privateAllowed.has(key),
    });
    if (allowed.length === 0) {
      this.#stats.refusedAddresses += refused.length;
      throw new OriginForbiddenError(h, port, refused);
    }
  }

  /**
   * An undici `connect` option (the `buildConnector` contract, the same in undici 7 and 8):
   * `new Agent({ connect: connector.undiciConnect() })`. http origins get the raced TCP socket;
   * https origins get `tls.connect` over it with SNI set to the origin's name and ALPN `http/1.1`.
   */
  undiciConnect(options: UndiciConnectOptions = {}): UndiciConnector {
    const timeoutMs = options.timeoutMs ?? this.timeoutMs ?? DEFAULT_UNDICI_CONNECT_TIMEOUT_MS;
    nonNegative('timeoutMs', timeoutMs);
    const keepAliveMs = options.keepAliveInitialDelayMs ?? 60_000;
    const clock = this.#clock;
    return (opts, callback) => {
      let cb: typeof callback | null = callback;
      const done = (err: Error | null, socket?: net.Socket): void => {
        if (!cb) {
          socket?.destroy();
          return;
        }
        const c = cb;
        cb = null;
        if (err) c(err, null);
        else c(null, socket!);
      };
      const https = opts.protocol === 'https:';
      if (!https && opts.protocol !== 'http:') {
        done(
          new InvalidOriginError(`unsupported origin protocol ${JSON.stringify(opts.protocol)}`),
        );
        return;
      }
      const port = opts.port ? Number(opts.port) : https ? 443 : 80;
      const hostname = opts.hostname;
      const started = clock.now();
      const upgrade = (socket: net.Socket): void => {
        const literal = net.isIP(normalizeHost(hostname)) !== 0;
        const servername = opts.servername || (literal ? undefined : normalizeHost(hostname));
        const tlsSocket = tls.connect({
          ...options.tls,
          socket,
          ...(servername === undefined ? {} : { servername }),
          ALPNProtocols: ['http/1.1'],
        });
        const left = Math.max(0, timeoutMs - (clock.now() - started));
        const timer = clock.setTimeout(() => {
          tlsSocket.destroy();
          done(new OriginTimeoutError(hostname, port, timeoutMs));
        }, left);
        tlsSocket.once('secureConnect', () => {
          timer.cancel();
          done(null, tlsSocket);
        });
        tlsSocket.once('error', (err: Error) => {
          timer.cancel();
          tlsSocket.destroy();
          done(err);
        });
      };
      if (opts.httpSocket) {
        // undici passes an existing socket only to upgrade it to TLS (e.g. through a CONNECT proxy).
        if (https) upgrade(opts.httpSocket);
        else done(new InvalidOriginError('httpSocket can only be upgraded to TLS'));
        return;
      }
      this.connect(hostname, port, { timeoutMs }).then(
        (socket) => {
          socket.setNoDelay(true);
          if (keepAliveMs > 0) socket.setKeepAlive(true, keepAliveMs);
          if (https) upgrade(socket);
          else done(null, socket);
        },
        (err: Error) => done(err),
      );
    };
  }

  /** The winner cache, oldest first (expired entries are dropped, not shown). */
  cacheSnapshot(): CacheSnapshotEntry[] {
    const now = this.#clock.now();
    const out: CacheSnapshotEntry[] = [];
    for (const [key, e] of this.#cache) {
      if (now - e.storedAt >= this.cacheTtlMs) {
        this.#cache.delete(key);
        continue;
      }
      out.push({
        key,
        address: e.address,
        family: e.family,
        connectMs: e.connectMs,
        ageMs: now - e.storedAt,
      });
    }
    return out;
  }

  /** A copy of the counters. */
  stats(): ConnectStats {
    return { ...this.#stats, failures: { ...this.#stats.failures } };
  }

  /** Forget the cached winner of `host:port` (and any remembered failure). */
  forget(host: string, port: number): void {
    const key = cacheKey(normalizeHost(host), port);
    this.#cache.delete(key);
    this.#negative?.delete(key);
  }

  #cacheGet(key: string): CacheEntry | undefined {
    const e = this.#cache.get(key);
    if (e && this.#clock.now() - e.storedAt >= this.cacheTtlMs) {
      this.#cache.delete(key);
      return undefined;
    }
    return e;
  }

  #cacheSet(key: string, addr: ResolvedAddress, connectMs: number): void {
    if (this.cacheSize === 0) return;
    this.#cache.delete(key);
    this.#cache.set(key, {
      address: addr.address,
      family: addr.family,
      connectMs,
      storedAt: this.#clock.now(),
    });
    while (this.#cache.size > this.cacheSize) {
      const oldest = this.#cache.keys().next();
      if (oldest.done) break;
      this.#cache.delete(oldest.value);
    }
  }

  #evict(key: string, address: string): void {
    if (this.#cache.get(key)?.address === address) {
      this.#cache.delete(key);
      this.#stats.evictions++;
    }
  }

  /**
   * One connect: the cached attempt (if any), the race (now, after the patience timer, or when
   * the cached attempt fails), the bound and the caller's signal, settled exactly once.
   */
  #connect(
    host: string,
    port: number,
    key: string,
    signal: AbortSignal | undefined,
    timeoutMs: number | undefined,
  ): Promise<net.Socket> {
    return new Promise<net.Socket>((resolve, reject) => {
      const all = new AbortController(); // aborted once settled: stops every loser and the lookup
      const timers: TimerHandle[] = [];
      const failures: Array<{ address: string; error: unknown }> = [];
      const dialled = new Set<string>();
      let settled = false;
      let pending = 0;
      let race: 'idle' | 'resolving' | 'done' = 'idle';
      let raceError: unknown;

      const finish = (): void => {
        settled = true;
        for (const t of timers) t.cancel();
        signal?.removeEventListener('abort', onAbort);
      };
      const fail = (err: unknown): void => {
        if (settled) return;
        finish();
        all.abort(err);
        reject(err);
      };
      const onAbort = (): void => fail(new ConnectAbortedError(host, port, signal?.reason));

      const win = (
        socket: net.Socket,
        addr: ResolvedAddress,
        ms: number,
        cached: boolean,
      ): void => {
        if (settled) {
          socket.destroy();
          return;
        }
        finish();
        all.abort(new ConnectAbortedError(host, port, 'another address connected first'));
        // A cached address that connected within its patience keeps its entry (and its age);
        // any other winner, including a slow cached one, is (re)cached with its connect time.
        if (!cached || race !== 'idle') this.#cacheSet(key, addr, ms);
        else this.#stats.cacheWins++;
        resolve(socket);
      };

      const exhausted = (): void => {
        if (settled || pending > 0 || race === 'resolving') return;
        if (race === 'idle') {
          startRace();
          return;
        }
        fail(raceError ?? new OriginUnreachableError(host, port, failures));
      };

      const dial = (addr: ResolvedAddress, cached: boolean): void => {
        pending++;
        this.#stats.dials++;
        dialled.add(addr.address);
        const started = this.#clock.now();
        Promise.resolve()
          .then(() => this.#dial({ address: addr.address, family: addr.family, port }, all.signal))
          .then(
            (socket) => {
              pending--;
              win(socket, addr, this.#clock.now() - started, cached);
            },
            (error: unknown) => {
              pending--;
              if (settled) return;
              failures.push({ address: addr.address, error });
              if (cached) this.#evict(key, addr.address);
              exhausted();
            },
          );
      };

      const startRace = (): void => {
        if (settled || race !== 'idle') return;
        race = 'resolving';
        this.#stats.races++;
        Promise.resolve()
          .then(() => this.#resolver.resolve(host, { signal: all.signal }))
          .then(
            (addrs) => {
              if (settled) return;
              race = 'done';
              if (addrs.length === 0) {
                raceError = new OriginAddressUnavailableError(host, port);
              } else {
                // The one and only policy check; only what passed it is ever dialled.
                const { allowed, refused } = filterAddresses(addrs, {
                  allowPrivate: this.allowPrivate || this.#privateAllowed.has(key),
                });
                this.#stats.refusedAddresses += refused.length;
                if (allowed.length === 0) raceError = new OriginForbiddenError(host, port, refused);
                for (const a of raceOrder(allowed)) if (!dialled.has(a.address)) dial(a, false);
              }
              exhausted();
            },
            (err: unknown) => {
              if (settled) return;
              race = 'done';
              // Resolvers do not know the port; the error the caller sees names host and port.
              if (err instanceof OriginAddressUnavailableError) {
                raceError = new OriginAddressUnavailableError(host, port, err.cause);
              } else if (err instanceof OriginResolveError) {
                raceError = new OriginResolveError(host, port, err.cause);
              } else {
                raceError =
                  err instanceof OriginConnectError ? err : new OriginResolveError(host, port, err);
              }
              exhausted();
            },
          );
      };

      if (signal) signal.addEventListener('abort', onAbort, { once: true });
      if (timeoutMs !== undefined) {
        timers.push(
          this.#clock.setTimeout(
            () => fail(new OriginTimeoutError(host, port, timeoutMs)),
            timeoutMs,
          ),
        );
      }
      const cached = this.#cacheGet(key);
      if (cached) {
        this.#stats.cacheHits++;
        dial({ address: cached.address, family: cached.family }, true);
        const patience = Math.max(2 * cached.connectMs, this.floorMs);
        timers.push(
          this.#clock.setTimeout(() => {
            if (race === 'idle' && !settled) this.#stats.slowCacheRaces++;
            startRace();
          }, patience),
        );
      } else {
        startRace();
      }
    });
  }
}
