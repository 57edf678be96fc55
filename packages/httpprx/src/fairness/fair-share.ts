/**
 * A node-wide bandwidth cap shared max-min fairly between origin domains: one token bucket for the
 * node (`bytesPerSec`, refilled on the injected clock, holding at most `burstBytes`), handed out by
 * start-time fair queuing over the domains that are waiting (see `#tag`). Every waiting
 * domain gets the same share whatever its number of connections; a domain that wants less than
 * its share takes what it wants and the rest goes to the others (work conserving), so the
 * result is the max-min fair allocation — what nginx's `limit_rate` does per connection, shared
 * across a node's connections per domain.
 *
 * A flow asks before (or right after) moving each chunk (`take`) and waits for the grant while
 * its stream is paused: nothing is buffered on its behalf beyond the one chunk in hand. With no
 * cap (`bytesPerSec` 0) `take` never waits and only counts.
 *
 * Accounting (`stats`): bytes and time spent waiting, per domain, for at most `maxDomains`
 * domains (the smallest folded into `other` when a new one comes), reported as the top N and
 * `other` so metric labels stay bounded.
 */
import type { Clock, TimerHandle } from '@coral/runtime';

/** Domains tracked individually in the statistics. */
export const FAIR_MAX_DOMAINS = 1024;
/** Label of everything not reported by name (parenthesized: no host name looks like it). */
export const OTHER_DOMAIN = '(other)';

export interface FairShareOptions {
  /** The cap (bytes per second); 0 = unlimited (count only). */
  bytesPerSec: number;
  /** Bucket size: bytes that may go at once after a quiet spell. Default: a tenth of a second, at least 64 KiB. */
  burstBytes?: number;
  /** Default `FAIR_MAX_DOMAINS`. */
  maxDomains?: number;
}

export interface DomainTraffic {
  domain: string;
  bytes: number;
  /** Sum over the flows of the time they waited for a grant (ms). */
  throttledMs: number;
}

interface Waiter {
  bytes: number;
  /** Start tag (virtual bytes). */
  tag: number;
  since: number;
  resolve: () => void;
}

interface DomainQueue {
  waiters: Waiter[];
  /** Finish tag of the domain's last request. */
  finish: number;
}

export class FairShare {
  readonly #clock: Clock;
  readonly #rate: number;
  readonly #burst: number;
  readonly #maxDomains: number;
  #tokens: number;
  #refilledAt: number;
  /** Virtual time: the start tag of the request granted last. */
  #virtual = 0;
  readonly #queues = new Map<string, DomainQueue>();
  /** Domains with requests waiting. */
  readonly #active = new Set<string>();
  #queued = 0;
  #timer: TimerHandle | undefined;
  readonly #stats = new Map<string, { bytes: number; throttledMs: number }>();
  readonly #other = { bytes: 0, throttledMs: 0 };

  constructor(components: { clock: Clock }, options: FairShareOptions) {
    this.#clock = components.clock;
    this.#rate = Math.max(0, options.bytesPerSec);
    this.#burst = options.burstBytes ?? Math.max(64 * 1024, Math.floor(this.#rate / 10));
    this.#maxDomains = options.maxDomains ?? FAIR_MAX_DOMAINS;
    this.#tokens = this.#burst;
    this.#refilledAt = this.#clock.now();
  }

  /** The cap (bytes per second), 0 when unlimited. */
  get bytesPerSec(): number {
    return this.#rate;
  }

  /** Requests waiting for a grant (tests drive the clock until every flow waits). */
  get queued(): number {
    return this.#queued;
  }

  /**
   * `bytes` of `domain` want to move: undefined when they may now, else a promise resolved when
   * they may (the caller keeps its stream paused meanwhile). Counted either way.
   */
  take(domain: string, bytes: number): Promise<void> | undefined {
    if (this.#rate === 0) {
      this.#count(domain, bytes, 0);
      return undefined;
    }
    if (this.#queued === 0) {
      this.#refill();
      if (this.#tokens >= bytes) {
        this.#tokens -= bytes;
        this.#tag(domain, bytes);
        this.#count(domain, bytes, 0);
        return undefined;
      }
    }
    return new Promise<void>((resolve) => {
      const tag = this.#tag(domain, bytes);
      this.#queues.get(domain)!.waiters.push({ bytes, tag, since: this.#clock.now(), resolve });
      this.#active.add(domain);
      this.#queued++;
      this.#run();
    });
  }

  /** Take `bytes` only if they may go at once (the fast path, which cannot wait). */
  tryTake(domain: string, bytes: number): boolean {
    if (this.#rate > 0) {
      if (this.#queued > 0) return false;
      this.#refill();
      if (this.#tokens < bytes) return false;
    }
    void this.take(domain, bytes);
    return true;
  }

  /**
   * Start-time fair queuing (Goyal, Vin & Cheng): a request starts at the later of the virtual
   * time and its domain's last finish, and finishes `bytes` later; the smallest start goes
   * first. A domain that always has a request waiting (one flow or many) advances its tags at
   * the rate it is served, so every such domain is served equally; an idle domain comes back at
   * the virtual time, with no credit saved up.
   */
  #tag(domain: string, bytes: number): number {
    let q = this.#queues.get(domain);
    if (!q) {
      if (this.#queues.size >= 4 * this.#maxDomains) this.#prune();
      this.#queues.set(domain, (q = { waiters: [], finish: 0 }));
    }
    const start = Math.max(this.#virtual, q.finish);
    q.finish = start + bytes;
    return start;
  }

  /** Forget idle domains whose tags are behind the virtual time (they would start there anyway). */
  #prune(): void {
    for (const [d, q] of this.#queues) {
      if (q.waiters.length === 0 && q.finish <= this.#virtual) this.#queues.delete(d);
    }
  }

  #refill(): void {
    const now = this.#clock.now();
    if (now > this.#refilledAt) {
      this.#tokens = Math.min(
        this.#burst,
        this.#tokens + ((now - this.#refilledAt) * this.#rate) / 1000,
      );
    }
    this.#refilledAt = now;
  }

  /** Grant what the bucket pays for, smallest start tag first; arm a timer for the rest. */
  #run(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#refill();
    const now = this.#clock.now();
    while (this.#queued > 0) {
      let next: DomainQueue | undefined;
      let nextDomain = '';
      for (const d of this.#active) {
        const q = this.#queues.get(d)!;
        const head = q.waiters[0]!;
        if (!next || head.tag < next.waiters[0]!.tag) {
          next = q;
          nextDomain = d;
        }
      }
      const head = next!.waiters[0]!;
      if (head.bytes > this.#tokens) {
        // A request larger than the bucket waits until the bucket is full and then goes
        // (tokens go negative), so any chunk size gets through.
        const need = Math.min(head.bytes, this.#burst) - this.#tokens;
        if (need > 0) {
          const ms = Math.max(1, Math.ceil((need * 1000) / this.#rate));
          this.#timer = this.#clock.setTimeout(() => this.#run(), ms);
          return;
        }
      }
      this.#tokens -= head.bytes;
      this.#virtual = Math.max(this.#virtual, head.tag);
      next!.waiters.shift();
      if (next!.waiters.length === 0) this.#active.delete(nextDomain);
      this.#queued--;
      this.#count(nextDomain, head.bytes, now - head.since);
      head.resolve();
    }
  }

  #count(domain: string, bytes: number, waitedMs: number): void {
    let s = this.#stats.get(domain);
    if (!s) {
      if (this.#stats.size >= this.#maxDomains) this.#foldSmallest();
      this.#stats.set(domain, (s = { bytes: 0, throttledMs: 0 }));
    }
    s.bytes += bytes;
    s.throttledMs += waitedMs;
  }

  #foldSmallest(): void {
    let min: string | undefined;
    let minBytes = Infinity;
    for (const [d, s] of this.#stats) {
      if (s.bytes < minBytes) {
        min = d;
        minBytes = s.bytes;
      }
    }
    if (min === undefined) return;
    const s = this.#stats.get(min)!;
    this.#other.bytes += s.bytes;
    this.#other.throttledMs += s.throttledMs;
    this.#stats.delete(min);
  }

  /** Bytes and waiting time of one domain (0 when unknown or folded into `other`). */
  domain(domain: string): DomainTraffic {
    const s = this.#stats.get(domain);
    return { domain, bytes: s?.bytes ?? 0, throttledMs: s?.throttledMs ?? 0 };
  }

  /** The `top` domains by bytes, then `other` (everything else), since start. */
  stats(top = 20): DomainTraffic[] {
    const all = [...this.#stats].map(([domain, s]) => ({ domain, ...s }));
    all.sort((a, b) => b.bytes - a.bytes || (a.domain < b.domain ? -1 : 1));
    const other = { domain: OTHER_DOMAIN, ...this.#other };
    for (const d of all.slice(top)) {
      other.bytes += d.bytes;
      other.throttledMs += d.throttledMs;
    }
    return [...all.slice(0, top), other];
  }
}
