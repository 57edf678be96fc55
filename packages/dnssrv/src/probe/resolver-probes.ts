/**
 * The cache of resolver RTTs, per /24 (IPv4) or /48 (IPv6), with a TTL. Looking up a resolver
 * never waits: it returns what is known now and, when nothing fresh is known, starts a probe in
 * the background — at most one in flight per prefix and a bounded number overall. An expired
 * result (an RTT or "unreachable") is still returned while its re-probe runs, for up to one more
 * TTL, so a resolver's answers do not all change location bucket (and miss the answer cache) each
 * time its RTT expires, only to change back a moment later. When no re-probe could start (probing
 * off, too many in flight) an expired result is not used.
 *
 * A probe is a TCP connection from this node to an address a datagram claimed as its source, so
 * probes are bounded overall, not only per prefix: a stranger rotating (spoofed) source prefixes
 * must not make the node connect to arbitrary hosts at a high rate. At most `maxPerSecond` (20)
 * start per second on average and `maxInFlight` (32) run at once; a lookup that may not start one
 * answers "unknown" and creates no row. Addresses that cannot be a resolver (unspecified,
 * multicast, 240.0.0.0/4, broadcast) are never probed.
 */
import { type Clock, systemClock } from '@coral/runtime';
import { TokenBucket } from '../limits/token-bucket.js';
import { parseIp, prefixKey } from '../net/ip.js';
import type { Prober } from './prober.js';

export const DEFAULT_PROBE_TTL_MS = 10 * 60_000;
export const DEFAULT_PROBE_FAILURE_TTL_MS = 60_000;
export const DEFAULT_PROBE_MAX_IN_FLIGHT = 32;
export const DEFAULT_PROBE_MAX_PER_SECOND = 20;
export const DEFAULT_PROBE_MAX_ENTRIES = 10_000;

/** One row of the probe cache, as the admin API shows it. */
export interface ProbeEntry {
  /** The prefix this result stands for (`203.0.113.0/24`). */
  prefix: string;
  /** The resolver address that was probed. */
  target: string;
  /** RTT in ms; null = unreachable; undefined = never measured yet. */
  rttMs?: number | null;
  measuredAt?: number;
  expiresAt?: number;
  inFlight: boolean;
}

export interface ResolverProbesOptions {
  /** How long a measured RTT stays valid (default 10 min). */
  ttlMs?: number;
  /** How long "unreachable" stays valid (default 1 min). */
  failureTtlMs?: number;
  /** Probes in flight at once, overall (default 32). */
  maxInFlight?: number;
  /** Probes started per second, overall, on average (default 20; burst the same). */
  maxPerSecond?: number;
  /** Prefixes remembered (oldest dropped first; default 10,000). */
  maxEntries?: number;
  /** Set false to never probe (lookups then only return what `record()` put in). */
  enabled?: boolean;
}

interface Row {
  target: string;
  rttMs?: number | null;
  measuredAt?: number;
  expiresAt?: number;
  inFlight: boolean;
}

export class ResolverProbes {
  readonly #prober: Prober | undefined;
  readonly #clock: Clock;
  readonly #rows = new Map<string, Row>();
  readonly #ttl: number;
  readonly #failureTtl: number;
  readonly #maxInFlight: number;
  readonly #maxEntries: number;
  readonly #enabled: boolean;
  readonly #abort = new AbortController();
  readonly #bucket: TokenBucket;
  #inFlight = 0;
  /** Bumped whenever a result lands, so callers can key caches on the probe state. */
  generation = 0;
  /** Counters. */
  readonly counters = {
    started: 0,
    measured: 0,
    unreachable: 0,
    skippedBusy: 0,
    skippedRate: 0,
    skippedTarget: 0,
  };

  constructor(components: { prober?: Prober; clock?: Clock }, options: ResolverProbesOptions = {}) {
    this.#prober = components.prober;
    this.#clock = components.clock ?? systemClock;
    this.#ttl = options.ttlMs ?? DEFAULT_PROBE_TTL_MS;
    this.#failureTtl = options.failureTtlMs ?? DEFAULT_PROBE_FAILURE_TTL_MS;
    this.#maxInFlight = options.maxInFlight ?? DEFAULT_PROBE_MAX_IN_FLIGHT;
    this.#maxEntries = options.maxEntries ?? DEFAULT_PROBE_MAX_ENTRIES;
    this.#enabled = (options.enabled ?? true) && this.#prober !== undefined;
    this.#bucket = new TokenBucket(
      this.#clock,
      options.maxPerSecond ?? DEFAULT_PROBE_MAX_PER_SECOND,
    );
  }

  /** The prefix key a resolver address falls in. */
  static keyOf(ip: Uint8Array): string {
    return prefixKey(ip, ip.length === 4 ? 24 : 48);
  }

  /**
   * RTT known for the resolver `ip` (its prefix): a number, null (unreachable), or undefined
   * (unknown). Starts a background probe when nothing fresh is known. Never waits.
   */
  lookup(ip: string, key?: string): number | null | undefined {
    let k = key;
    if (k === undefined) {
      const bytes = parseIp(ip);
      if (!bytes) return undefined;
      k = ResolverProbes.keyOf(bytes);
    }
    const row = this.#rows.get(k);
    const now = this.#clock.now();
    if (row?.expiresAt !== undefined && row.expiresAt > now) return row.rttMs;
    if (!row?.inFlight) this.#start(k, ip, row);
    // Stale while re-probing (only then: probing off, busy or closed means unknown), and for one
    // more TTL at most. (`#start` marks an existing row in flight; a new row has no result yet.)
    if (row?.inFlight && row.expiresAt !== undefined && row.measuredAt !== undefined) {
      if (now < row.expiresAt + (row.expiresAt - row.measuredAt)) return row.rttMs;
    }
    return undefined;
  }

  /** Put a result in by hand (tests, or RTTs learnt elsewhere). */
  record(key: string, target: string, rttMs: number | null): void {
    const now = this.#clock.now();
    const row = this.#rows.get(key) ?? { target, inFlight: false };
    row.target = target;
    row.rttMs = rttMs;
    row.measuredAt = now;
    row.expiresAt = now + (rttMs === null ? this.#failureTtl : this.#ttl);
    this.#rows.delete(key);
    this.#rows.set(key, row);
    this.#trim();
    this.generation++;
  }

  entries(): ProbeEntry[] {
    return [...this.#rows.entries()].map(([prefix, r]) => ({
      prefix,
      target: r.target,
      ...(r.rttMs !== undefined ? { rttMs: r.rttMs } : {}),
      ...(r.measuredAt !== undefined ? { measuredAt: r.measuredAt } : {}),
      ...(r.expiresAt !== undefined ? { expiresAt: r.expiresAt } : {}),
      inFlight: r.inFlight,
    }));
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Abort every probe in flight (on server close). */
  close(): void {
    this.#abort.abort();
  }

  #start(key: string, ip: string, existing: Row | undefined): void {
    if (!this.#enabled || this.#abort.signal.aborted) return;
    if (this.#inFlight >= this.#maxInFlight) {
      this.counters.skippedBusy++;
      return;
    }
    if (!probeable(ip)) {
      this.counters.skippedTarget++;
      return;
    }
    if (!this.#bucket.take()) {
      this.counters.skippedRate++;
      return;
    }
    const row = existing ?? { target: ip, inFlight: false };
    row.target = ip;
    row.inFlight = true;
    if (!existing) {
      this.#rows.set(key, row);
      this.#trim();
    }
    this.#inFlight++;
    this.counters.started++;
    const done = (rtt: number | null) => {
      this.#inFlight--;
      row.inFlight = false;
      if (this.#abort.signal.aborted) return;
      if (rtt === null) this.counters.unreachable++;
      else this.counters.measured++;
      if (this.#rows.get(key) === row) this.record(key, ip, rtt);
    };
    let p: Promise<number | null>;
    try {
      p = this.#prober!.probe(ip, { signal: this.#abort.signal });
    } catch {
      p = Promise.resolve(null);
    }
    p.then(done, () => done(null));
  }

  #trim(): void {
    while (this.#rows.size > this.#maxEntries) {
      const oldest = this.#rows.keys().next().value as string;
      this.#rows.delete(oldest);
    }
  }
}

/** Can `ip` be a resolver we may connect to? Not unspecified, multicast, reserved or broadcast. */
function probeable(ip: string): boolean {
  const b = parseIp(ip);
  if (!b) return false;
  if (b.length === 4) return b[0] !== 0 && b[0]! < 224;
  if (b[0] === 0xff) return false; // multicast
  return b.some((x) => x !== 0); // :: is unspecified
}
