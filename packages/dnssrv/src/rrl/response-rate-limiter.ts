/**
 * Response rate limiting in the manner of BIND's RRL: an open UDP server is an amplification
 * target, so identical responses to one client prefix are limited. Accounts are keyed by
 * (client prefix, response kind, name), the name being what the caller says makes responses
 * "identical". The DNS server passes, as BIND does:
 * - answers for a fixed name (apex, nameservers): the qname and type;
 * - synthesized answers (every Coralized name under a zone, like a wildcard): `*.<zone>` for all
 *   names and types, so rotating names does not reset the budget;
 * - NODATA and NXDOMAIN: the zone;
 * - errors (REFUSED, FORMERR, NOTIMP, BADVERS): all together.
 * Each account is a token bucket refilled at the configured rate (burst = one second's worth).
 * Over the limit, a response is dropped, except every `slip`-th which goes out as a tiny
 * truncated (TC) answer with no records, so a real client behind a spoofed flood can still
 * retry over TCP. TCP is never limited (the handshake proves the address).
 */
import { type Clock, systemClock } from '@coral/runtime';
import { type Cidr, cidrContains, maskBytes } from '../net/ip.js';

export const DEFAULT_RRL_RESPONSES_PER_SECOND = 20;
export const DEFAULT_RRL_SLIP = 2;
export const DEFAULT_RRL_IPV4_PREFIX = 24;
export const DEFAULT_RRL_IPV6_PREFIX = 56;
export const DEFAULT_RRL_MAX_ACCOUNTS = 100_000;

export interface RrlOptions {
  /** Identical answers per second per client prefix; 0 disables RRL (default 20). */
  responsesPerSecond?: number;
  /** NXDOMAIN answers per second per prefix and zone (default = responsesPerSecond). */
  nxdomainsPerSecond?: number;
  /** NODATA (NOERROR, no answer) per second per prefix and zone (default = responsesPerSecond). */
  nodataPerSecond?: number;
  /** Error answers (REFUSED, FORMERR, NOTIMP, BADVERS) per second per prefix (default = responsesPerSecond). */
  errorsPerSecond?: number;
  /** Every slip-th limited response is sent truncated instead of dropped; 0 = drop all (default 2). */
  slip?: number;
  /** Client prefix length for IPv4 (default 24) and IPv6 (default 56). */
  ipv4PrefixLength?: number;
  ipv6PrefixLength?: number;
  /** Clients never limited (CIDRs, parsed by the server). */
  exempt?: Cidr[];
  /** Accounts kept (oldest dropped first; default 100,000). */
  maxAccounts?: number;
}

export type RrlKind = 'answer' | 'nodata' | 'nxdomain' | 'error';
export type RrlVerdict = 'send' | 'drop' | 'slip';

interface Account {
  tokens: number;
  at: number;
  limited: number;
}

export class ResponseRateLimiter {
  readonly #clock: Clock;
  readonly #rates: Record<RrlKind, number>;
  readonly #slip: number;
  readonly #v4: number;
  readonly #v6: number;
  readonly #exempt: Cidr[];
  readonly #max: number;
  readonly #accounts = new Map<string, Account>();
  readonly counters = { allowed: 0, dropped: 0, slipped: 0, exempt: 0 };

  constructor(components: { clock?: Clock }, options: RrlOptions = {}) {
    this.#clock = components.clock ?? systemClock;
    const rps = options.responsesPerSecond ?? DEFAULT_RRL_RESPONSES_PER_SECOND;
    this.#rates = {
      answer: rps,
      nodata: options.nodataPerSecond ?? rps,
      nxdomain: options.nxdomainsPerSecond ?? rps,
      error: options.errorsPerSecond ?? rps,
    };
    this.#slip = options.slip ?? DEFAULT_RRL_SLIP;
    this.#v4 = options.ipv4PrefixLength ?? DEFAULT_RRL_IPV4_PREFIX;
    this.#v6 = options.ipv6PrefixLength ?? DEFAULT_RRL_IPV6_PREFIX;
    this.#exempt = options.exempt ?? [];
    this.#max = options.maxAccounts ?? DEFAULT_RRL_MAX_ACCOUNTS;
  }

  get enabled(): boolean {
    const r = this.#rates;
    return r.answer > 0 || r.nodata > 0 || r.nxdomain > 0 || r.error > 0;
  }

  /** Decide for one UDP response to `client` (address bytes). */
  check(client: Uint8Array, kind: RrlKind, name: string): RrlVerdict {
    const rate = this.#rates[kind];
    if (rate <= 0) return 'send';
    for (const c of this.#exempt) {
      if (cidrContains(c, client)) {
        this.counters.exempt++;
        return 'send';
      }
    }
    const prefix = maskBytes(client, client.length === 4 ? this.#v4 : this.#v6);
    const key = `${prefix.join('.')}|${kind}|${name}`;
    const now = this.#clock.now();
    let acc = this.#accounts.get(key);
    if (!acc) {
      acc = { tokens: rate, at: now, limited: 0 };
      this.#accounts.set(key, acc);
      if (this.#accounts.size > this.#max) {
        this.#accounts.delete(this.#accounts.keys().next().value as string);
      }
    } else if (now > acc.at) {
      acc.tokens = Math.min(rate, acc.tokens + ((now - acc.at) / 1000) * rate);
      acc.at = now;
    }
    if (acc.tokens >= 1) {
      acc.tokens -= 1;
      this.counters.allowed++;
      return 'send';
    }
    acc.limited++;
    if (this.#slip > 0 && acc.limited % this.#slip === 0) {
      this.counters.slipped++;
      return 'slip';
    }
    this.counters.dropped++;
    return 'drop';
  }

  get accounts(): number {
    return this.#accounts.size;
  }
}
