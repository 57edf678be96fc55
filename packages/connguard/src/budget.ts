/**
 * Connection budgets: the pure accounting behind every listener of a node (nginx's `limit_conn`,
 * `client_header_timeout` and `client_body_timeout`; an overload manager's ceiling), on an
 * injected clock. A `ConnectionBudget` is node-wide and holds the ceiling; each listener gets a
 * `ListenerBudget` with its own per-client caps and timeouts; each accepted socket is admitted as
 * a `GuardedConnection` or refused. The bindings in `bind/` drive it from `net.Server` and
 * `http.Server` events; nothing here touches a socket except through the hooks it is given.
 *
 * A connection is either *waiting* (no request in progress: just accepted, between keep-alive
 * requests, or still sending its head) or *busy* (a request is being served). Only waiting
 * connections run timers and only they can be shed:
 *
 * - **idle**: accepted and nothing read for `idleTimeoutMs` → closed (`idle-timeout`);
 *   after a response, nothing read for `keepAliveTimeoutMs` → closed (`keepalive-timeout`);
 * - **head**: bytes arrived but the head is not complete `headerTimeoutMs` after the wait began →
 *   closed (`header-timeout`). The deadline is fixed when the wait begins, so a trickle of bytes
 *   (slowloris) does not move it;
 * - **body**: a body the server is reading got no byte for `bodyTimeoutMs` → closed
 *   (`body-timeout`); time the server itself does not read (backpressure) does not count;
 * - **caps**: a new connection is refused when its client (`perAddress`) or its network
 *   (`perPrefix`) already holds its share on this listener;
 * - **full**: when the listener's own cap (`maxConnections`) or the node-wide ceiling is reached,
 *   the connection that has been waiting longest is closed to make room (`shed`), oldest first;
 *   only when none is waiting is the new one refused (`listener-full`, `ceiling`).
 */
import { systemClock, type Clock, type TimerHandle } from '@coral/runtime';
import { clientKeys, type ClientKeys, type FamilyBits } from './address.js';
import {
  DEFAULT_ADDRESS_BITS,
  DEFAULT_BODY_TIMEOUT_MS,
  DEFAULT_HEADER_TIMEOUT_MS,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_KEEPALIVE_TIMEOUT_MS,
  DEFAULT_PER_ADDRESS,
  DEFAULT_PER_PREFIX,
  DEFAULT_PREFIX_BITS,
} from './constants.js';
import {
  ConnGuardError,
  CONNGUARD_ERR_DUPLICATE_LISTENER,
  CONNGUARD_ERR_OPTIONS,
} from './errors.js';

/** Why a new connection was refused (closed at once, before it is served). */
export const REFUSAL_REASONS = ['per-address', 'per-prefix', 'listener-full', 'ceiling'] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];
/** Why an admitted connection was closed by its budget. */
export const CLOSE_REASONS = [
  'idle-timeout',
  'keepalive-timeout',
  'header-timeout',
  'body-timeout',
  'shed',
] as const;
export type CloseReason = (typeof CLOSE_REASONS)[number];

/** One listener's limits; every one optional, 0 turns a cap or a timeout off. */
export interface ListenerLimits {
  /** Connections per client (IPv4 address, IPv6 /64). Default {@link DEFAULT_PER_ADDRESS}. */
  perAddress?: number;
  /** Connections per network (IPv4 /24, IPv6 /56). Default {@link DEFAULT_PER_PREFIX}. */
  perPrefix?: number;
  /** This listener's own cap; when reached its longest-waiting connection is shed. Default 0 (none). */
  maxConnections?: number;
  /** Whether its connections count toward the node-wide ceiling (default true). */
  countsTowardCeiling?: boolean;
  /** Default {@link DEFAULT_IDLE_TIMEOUT_MS}. */
  idleTimeoutMs?: number;
  /** Default {@link DEFAULT_KEEPALIVE_TIMEOUT_MS}. */
  keepAliveTimeoutMs?: number;
  /** Default {@link DEFAULT_HEADER_TIMEOUT_MS}. */
  headerTimeoutMs?: number;
  /** Default {@link DEFAULT_BODY_TIMEOUT_MS}. */
  bodyTimeoutMs?: number;
  /** What one client is (default {@link DEFAULT_ADDRESS_BITS}: /32, /64). */
  addressBits?: FamilyBits;
  /** What one network is (default {@link DEFAULT_PREFIX_BITS}: /24, /56). */
  prefixBits?: FamilyBits;
}

export type ResolvedLimits = Required<ListenerLimits>;

/** What the budget may do to the socket behind a connection. */
export interface ConnectionHooks {
  /** Close it now (destroy the socket). The budget has already let go of it. */
  close(reason: CloseReason): void;
  /** Bytes received on it so far (`socket.bytesRead`). */
  bytesRead(): number;
}

/** Observers of every refusal and close (metrics), by listener name. */
export interface BudgetEvents {
  refused?(listener: string, reason: RefusalReason): void;
  closed?(listener: string, reason: CloseReason): void;
  /** An accept failed (EMFILE, ENFILE, ENOMEM...): counted, the listener goes on. */
  acceptError?(listener: string, code: string): void;
}

export interface ListenerCounters {
  admitted: number;
  refused: Record<RefusalReason, number>;
  closed: Record<CloseReason, number>;
  acceptErrors: number;
}

export interface ListenerStats {
  open: number;
  waiting: number;
  limits: ResolvedLimits;
  counters: ListenerCounters;
}

export interface BudgetStats {
  /** The node-wide ceiling (0: none). */
  ceiling: number;
  /** Connections counted toward it. */
  open: number;
  /** Of those, waiting (sheddable). */
  waiting: number;
  listeners: Record<string, ListenerStats>;
}

/** What listeners share: the ceiling, the count toward it and the node-wide waiting order. */
interface Pool {
  clock: Clock;
  events: BudgetEvents;
  ceiling: number;
  open: number;
  /** Counted connections waiting, longest-waiting first (insertion order). */
  waiting: Set<GuardedConnection>;
}

const zeroCounts = <K extends string>(keys: readonly K[]): Record<K, number> =>
  Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;

function resolveLimits(name: string, l: ListenerLimits): ResolvedLimits {
  const r: ResolvedLimits = {
    perAddress: l.perAddress ?? DEFAULT_PER_ADDRESS,
    perPrefix: l.perPrefix ?? DEFAULT_PER_PREFIX,
    maxConnections: l.maxConnections ?? 0,
    countsTowardCeiling: l.countsTowardCeiling ?? true,
    idleTimeoutMs: l.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
    keepAliveTimeoutMs: l.keepAliveTimeoutMs ?? DEFAULT_KEEPALIVE_TIMEOUT_MS,
    headerTimeoutMs: l.headerTimeoutMs ?? DEFAULT_HEADER_TIMEOUT_MS,
    bodyTimeoutMs: l.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS,
    addressBits: { ...(l.addressBits ?? DEFAULT_ADDRESS_BITS) },
    prefixBits: { ...(l.prefixBits ?? DEFAULT_PREFIX_BITS) },
  };
  const counts = [
    'perAddress',
    'perPrefix',
    'maxConnections',
    'idleTimeoutMs',
    'keepAliveTimeoutMs',
    'headerTimeoutMs',
    'bodyTimeoutMs',
  ] as const;
  for (const k of counts) {
    if (!Number.isSafeInteger(r[k]) || r[k] < 0) {
      throw new ConnGuardError(
        CONNGUARD_ERR_OPTIONS,
        `listener ${name}: ${k} must be an integer ≥ 0 (0: off), got ${r[k]}`,
      );
    }
  }
  for (const k of ['addressBits', 'prefixBits'] as const) {
    const { ipv4, ipv6 } = r[k];
    if (
      !Number.isInteger(ipv4) ||
      ipv4 < 0 ||
      ipv4 > 32 ||
      !Number.isInteger(ipv6) ||
      ipv6 < 0 ||
      ipv6 > 128
    ) {
      throw new ConnGuardError(
        CONNGUARD_ERR_OPTIONS,
        `listener ${name}: ${k} must be 0-32 (ipv4) and 0-128 (ipv6)`,
      );
    }
  }
  return r;
}

/**
 * The node-wide budget: every listener of the node registers with it, and together they hold at
 * most `ceiling` connections (those with `countsTowardCeiling`).
 */
export class ConnectionBudget {
  readonly #pool: Pool;
  readonly #listeners = new Map<string, ListenerBudget>();

  constructor(
    components: { clock?: Clock; events?: BudgetEvents } = {},
    options: { ceiling?: number } = {},
  ) {
    const ceiling = options.ceiling ?? 0;
    if (!Number.isSafeInteger(ceiling) || ceiling < 0) {
      throw new ConnGuardError(
        CONNGUARD_ERR_OPTIONS,
        `ceiling must be an integer ≥ 0 (0: none), got ${ceiling}`,
      );
    }
    this.#pool = {
      clock: components.clock ?? systemClock,
      events: components.events ?? {},
      ceiling: ceiling === 0 ? Infinity : ceiling,
      open: 0,
      waiting: new Set(),
    };
  }

  /** The ceiling (0 when there is none). */
  get ceiling(): number {
    return Number.isFinite(this.#pool.ceiling) ? this.#pool.ceiling : 0;
  }

  /** Connections counted toward the ceiling. */
  get open(): number {
    return this.#pool.open;
  }

  /** A listener's budget; names are unique (they label the metrics). */
  listener(name: string, limits: ListenerLimits = {}): ListenerBudget {
    if (this.#listeners.has(name)) {
      throw new ConnGuardError(
        CONNGUARD_ERR_DUPLICATE_LISTENER,
        `listener ${name} is already registered`,
      );
    }
    const l = new ListenerBudget(name, resolveLimits(name, limits), this.#pool);
    this.#listeners.set(name, l);
    return l;
  }

  /** The listener registered as `name`. */
  get(name: string): ListenerBudget | undefined {
    return this.#listeners.get(name);
  }

  stats(): BudgetStats {
    const listeners: Record<string, ListenerStats> = {};
    for (const [name, l] of this.#listeners) listeners[name] = l.stats();
    return {
      ceiling: this.ceiling,
      open: this.#pool.open,
      waiting: this.#pool.waiting.size,
      listeners,
    };
  }
}

/** One listener's share: its caps per client and network, its timeouts, its counters. */
export class ListenerBudget {
  readonly name: string;
  readonly limits: ResolvedLimits;
  readonly counters: ListenerCounters = {
    admitted: 0,
    refused: zeroCounts(REFUSAL_REASONS),
    closed: zeroCounts(CLOSE_REASONS),
    acceptErrors: 0,
  };
  readonly #pool: Pool;
  readonly #byClient = new Map<string, number>();
  readonly #byNetwork = new Map<string, number>();
  /** This listener's waiting connections, longest-waiting first. */
  readonly #waiting = new Set<GuardedConnection>();
  /** Every open connection, oldest first. */
  readonly #all = new Set<GuardedConnection>();

  /** @internal Use {@link ConnectionBudget.listener}. */
  constructor(name: string, limits: ResolvedLimits, pool: Pool) {
    this.name = name;
    this.limits = limits;
    this.#pool = pool;
  }

  get open(): number {
    return this.#all.size;
  }

  /** The open connections, oldest first. */
  connections(): GuardedConnection[] {
    return [...this.#all];
  }

  /** Connections open from the client of `remote` (its address, its /64). */
  openFrom(remote: string): number {
    return this.#byClient.get(this.#keys(remote).client) ?? 0;
  }

  stats(): ListenerStats {
    const c = this.counters;
    return {
      open: this.#all.size,
      waiting: this.#waiting.size,
      limits: { ...this.limits },
      counters: { ...c, refused: { ...c.refused }, closed: { ...c.closed } },
    };
  }

  /**
   * A socket was accepted from `remote`: its connection, or undefined when it is refused (counted;
   * the caller closes the socket). Admitting may shed the longest-waiting connection elsewhere.
   */
  admit(remote: string | undefined, hooks: ConnectionHooks): GuardedConnection | undefined {
    const keys = this.#keys(remote);
    const l = this.limits;
    if (l.perAddress > 0 && (this.#byClient.get(keys.client) ?? 0) >= l.perAddress) {
      return this.#refuse('per-address');
    }
    if (l.perPrefix > 0 && (this.#byNetwork.get(keys.network) ?? 0) >= l.perPrefix) {
      return this.#refuse('per-prefix');
    }
    if (l.maxConnections > 0 && this.#all.size >= l.maxConnections) {
      const victim = first(this.#waiting);
      if (!victim) return this.#refuse('listener-full');
      victim.expire('shed');
    }
    const pool = this.#pool;
    if (l.countsTowardCeiling && pool.open >= pool.ceiling) {
      const victim = first(pool.waiting);
      if (!victim) return this.#refuse('ceiling');
      victim.expire('shed');
    }
    this.counters.admitted++;
    if (l.countsTowardCeiling) pool.open++;
    bump(this.#byClient, keys.client, 1);
    bump(this.#byNetwork, keys.network, 1);
    const conn: GuardedConnection = new GuardedConnection(this, keys, hooks, {
      pool,
      waiting: this.#waiting,
      release: () => {
        this.#all.delete(conn);
        if (l.countsTowardCeiling) pool.open--;
        bump(this.#byClient, keys.client, -1);
        bump(this.#byNetwork, keys.network, -1);
      },
    });
    this.#all.add(conn);
    return conn;
  }

  /** An accept on this listener failed (EMFILE, ENFILE, ...): counted; the listener goes on. */
  acceptError(code: string): void {
    this.counters.acceptErrors++;
    this.#pool.events.acceptError?.(this.name, code);
  }

  /** @internal A connection closed by its budget. */
  closed(reason: CloseReason): void {
    this.counters.closed[reason]++;
    this.#pool.events.closed?.(this.name, reason);
  }

  #refuse(reason: RefusalReason): undefined {
    this.counters.refused[reason]++;
    this.#pool.events.refused?.(this.name, reason);
    return undefined;
  }

  #keys(remote: string | undefined): ClientKeys {
    return clientKeys(remote, this.limits.addressBits, this.limits.prefixBits);
  }
}

function first<T>(set: Set<T>): T | undefined {
  for (const x of set) return x;
  return undefined;
}

function bump(map: Map<string, number>, key: string, by: number): void {
  const n = (map.get(key) ?? 0) + by;
  if (n > 0) map.set(key, n);
  else map.delete(key);
}

interface Membership {
  pool: Pool;
  waiting: Set<GuardedConnection>;
  release(): void;
}

/** One admitted connection: its state (waiting or busy), its timers, its place in the order. */
export class GuardedConnection {
  readonly listener: ListenerBudget;
  readonly keys: ClientKeys;
  readonly #hooks: ConnectionHooks;
  readonly #m: Membership;
  #bytesRead: () => number;
  #state: 'waiting' | 'busy' | 'closed' = 'waiting';
  /** Requests in progress (pipelined DNS queries count one each). */
  #active = 0;
  #served = false;
  #waitStart = 0;
  #mark = 0;
  #timer: TimerHandle | undefined;
  #body: TimerHandle | undefined;

  /** @internal Use {@link ListenerBudget.admit}. */
  constructor(listener: ListenerBudget, keys: ClientKeys, hooks: ConnectionHooks, m: Membership) {
    this.listener = listener;
    this.keys = keys;
    this.#hooks = hooks;
    this.#m = m;
    this.#bytesRead = () => hooks.bytesRead();
    this.#wait();
  }

  /** Bytes received on it so far (what its timers look at). */
  get bytesRead(): number {
    return this.#bytesRead();
  }

  /** Waiting (no request in progress), busy, or closed. */
  get state(): 'waiting' | 'busy' | 'closed' {
    return this.#state;
  }

  /** A request's head is complete (an HTTP request, a DNS query): no timer runs until `end()`. */
  begin(): void {
    if (this.#state === 'closed') return;
    this.#active++;
    if (this.#state === 'waiting') {
      this.#unwait();
      this.#state = 'busy';
    }
  }

  /** A request was answered; with none left in progress, the wait for the next one begins. */
  end(): void {
    if (this.#state !== 'busy') return;
    this.#active = Math.max(0, this.#active - 1);
    if (this.#active > 0) return;
    this.#served = true;
    this.#stopBody();
    this.#wait();
  }

  /**
   * Count bytes from another source from now on (a TLS connection: the decrypted bytes once the
   * handshake is done, so that a handshake alone does not look like a request begun).
   */
  track(bytesRead: () => number): void {
    this.#bytesRead = bytesRead;
    if (this.#state === 'waiting') this.#mark = bytesRead();
  }

  /**
   * The server reads a request body: closed when no byte arrives for `bodyTimeoutMs` while
   * `reading()` says the server wants more (false: it is not reading, the gap is its own).
   * Ends with `end()` or `bodyDone()`.
   */
  body(reading: () => boolean): void {
    const ms = this.listener.limits.bodyTimeoutMs;
    if (ms === 0 || this.#state !== 'busy') return;
    this.#stopBody();
    let mark = this.#bytesRead();
    const check = (): void => {
      if (this.#state !== 'busy') return;
      const n = this.#bytesRead();
      if (n > mark || !reading()) {
        mark = n;
        this.#body = this.#m.pool.clock.setTimeout(check, ms);
      } else {
        this.expire('body-timeout');
      }
    };
    this.#body = this.#m.pool.clock.setTimeout(check, ms);
  }

  /** The body was read to its end. */
  bodyDone(): void {
    this.#stopBody();
  }

  /** The socket closed: let go of its slot (idempotent). */
  release(): void {
    if (this.#state === 'closed') return;
    this.#unwait();
    this.#stopBody();
    this.#state = 'closed';
    this.#m.release();
  }

  /** @internal Close it for `reason`: counted, released, then the socket is closed. */
  expire(reason: CloseReason): void {
    if (this.#state === 'closed') return;
    this.release();
    this.listener.closed(reason);
    this.#hooks.close(reason);
  }

  #wait(): void {
    const { pool, waiting } = this.#m;
    const l = this.listener.limits;
    this.#state = 'waiting';
    this.#waitStart = pool.clock.now();
    this.#mark = this.#bytesRead();
    waiting.add(this);
    if (l.countsTowardCeiling) pool.waiting.add(this);
    const idleMs = this.#served ? l.keepAliveTimeoutMs : l.idleTimeoutMs;
    const idleReason = this.#served ? 'keepalive-timeout' : 'idle-timeout';
    const onHeadDeadline = (): void => this.expire('header-timeout');
    const onIdle = (): void => {
      this.#timer = undefined;
      if (this.#state !== 'waiting') return;
      if (this.#bytesRead() <= this.#mark) {
        this.expire(idleReason);
        return;
      }
      // A request has begun: it has until the head deadline, fixed when the wait began.
      if (l.headerTimeoutMs === 0) return;
      const left = this.#waitStart + l.headerTimeoutMs - pool.clock.now();
      if (left <= 0) onHeadDeadline();
      else this.#timer = pool.clock.setTimeout(onHeadDeadline, left);
    };
    if (idleMs > 0) this.#timer = pool.clock.setTimeout(onIdle, idleMs);
    else if (l.headerTimeoutMs > 0)
      this.#timer = pool.clock.setTimeout(onHeadDeadline, l.headerTimeoutMs);
  }

  #unwait(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#m.waiting.delete(this);
    this.#m.pool.waiting.delete(this);
  }

  #stopBody(): void {
    this.#body?.cancel();
    this.#body = undefined;
  }
}
