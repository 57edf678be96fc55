/**
 * ACME DNS-01 challenges (RFC 8555 §8.4): the TXT records at `_acme-challenge.<zone>` that prove
 * control of the zone to a certificate authority. The DNS server reads them from a
 * {@link ChallengeStore} on every query (never from its answer cache), so a value set or removed
 * is answered at once.
 *
 * A wildcard certificate for `*.nyud.net` plus the apex `nyud.net` needs two values at the same
 * name at once (one authorization each), and several orders may overlap: the store holds a set
 * of values per zone, each with its own lifetime, so a client that forgets to clean up does not
 * leave records behind forever.
 *
 * ```ts
 * const challenges = new InMemoryChallengeStore({ clock });
 * const server = new DnsServer({ directory, challenges }, { zones: ['nyud.net'] });
 * challenges.set('nyud.net', 'gfj9Xq...Rg85nM'); // the key authorization digest (base64url)
 * // dig _acme-challenge.nyud.net TXT → "gfj9Xq...Rg85nM"
 * challenges.remove('nyud.net', 'gfj9Xq...Rg85nM');
 * ```
 *
 * The node wires the admin API and the CLI to `set`/`remove` and propagates them to the fleet
 * (any nameserver of the zone may be asked by the CA).
 */
import { type Clock, systemClock } from '@coral/runtime';
import { normalizeZone } from '@coral/names';
import { DnsChallengeError } from '../errors.js';

/** Where the DNS server finds the TXT values of `_acme-challenge.<zone>`. */
export interface ChallengeStore {
  /**
   * The values to answer now for `_acme-challenge.<zone>` (`zone` lowercase, no trailing dot, as
   * configured on the server), oldest first; empty for none. Called on every such query: keep it
   * cheap and synchronous.
   */
  txt(zone: string): readonly string[];
}

/** How long a value stays unless removed (10 min: an ACME order's validation takes seconds). */
export const DEFAULT_CHALLENGE_TTL_MS = 10 * 60_000;
/** Longest lifetime a value may be given. */
export const MAX_CHALLENGE_TTL_MS = 24 * 3_600_000;
/** Values per zone at once. */
export const DEFAULT_MAX_CHALLENGES_PER_ZONE = 16;
/** Longest value: one TXT character-string (RFC 1035 §3.3). */
export const MAX_CHALLENGE_VALUE_LENGTH = 255;

export interface InMemoryChallengeStoreOptions {
  /** Lifetime of a value set without one (default 10 min). */
  defaultTtlMs?: number;
  /** Values kept per zone (default 16); setting one more fails with DNS_ERR_CHALLENGE. */
  maxPerZone?: number;
}

export interface ChallengeEntry {
  zone: string;
  value: string;
  /** Clock time at which the value stops being answered. */
  expiresAt: number;
}

const PRINTABLE = /^[\x20-\x7e]+$/;

/** A {@link ChallengeStore} in memory, with `set`, `remove` and lifetimes on an injected clock. */
export class InMemoryChallengeStore implements ChallengeStore {
  readonly #clock: Clock;
  readonly #defaultTtlMs: number;
  readonly #maxPerZone: number;
  /** zone → value → expiresAt (insertion order = oldest first). */
  readonly #zones = new Map<string, Map<string, number>>();

  constructor(components: { clock?: Clock } = {}, options: InMemoryChallengeStoreOptions = {}) {
    this.#clock = components.clock ?? systemClock;
    this.#defaultTtlMs = checkTtl(options.defaultTtlMs ?? DEFAULT_CHALLENGE_TTL_MS);
    const max = options.maxPerZone ?? DEFAULT_MAX_CHALLENGES_PER_ZONE;
    if (!Number.isInteger(max) || max < 1) {
      throw new DnsChallengeError(`maxPerZone must be an integer ≥ 1, got ${max}`);
    }
    this.#maxPerZone = max;
  }

  /**
   * Publish `value` at `_acme-challenge.<zone>` for `ttlMs` (default 10 min). Setting a value
   * that is already there renews its lifetime. Throws DNS_ERR_CHALLENGE for a zone that is not a
   * DNS name, a value that is not 1–255 printable ASCII characters, a lifetime out of range, or
   * a zone that already holds `maxPerZone` values.
   */
  set(zone: string, value: string, opts: { ttlMs?: number } = {}): ChallengeEntry {
    const z = zoneOf(zone);
    if (
      typeof value !== 'string' ||
      value.length > MAX_CHALLENGE_VALUE_LENGTH ||
      !PRINTABLE.test(value)
    ) {
      throw new DnsChallengeError(
        `challenge value must be 1–${MAX_CHALLENGE_VALUE_LENGTH} printable ASCII characters`,
      );
    }
    const ttlMs = checkTtl(opts.ttlMs ?? this.#defaultTtlMs);
    const values = this.#live(z);
    if (!values.has(value) && values.size >= this.#maxPerZone) {
      throw new DnsChallengeError(
        `zone ${z} already holds ${values.size} challenge values (the most allowed)`,
      );
    }
    const expiresAt = this.#clock.now() + ttlMs;
    values.delete(value); // renewed values move to the end: oldest first stays true
    values.set(value, expiresAt);
    this.#zones.set(z, values);
    return { zone: z, value, expiresAt };
  }

  /** Remove one value, or every value of the zone when `value` is omitted. Returns how many went. */
  remove(zone: string, value?: string): number {
    const z = zoneOf(zone);
    const values = this.#live(z);
    let removed = 0;
    if (value === undefined) {
      removed = values.size;
      values.clear();
    } else if (values.delete(value)) {
      removed = 1;
    }
    if (values.size === 0) this.#zones.delete(z);
    return removed;
  }

  txt(zone: string): readonly string[] {
    const values = this.#zones.get(zone);
    if (!values) return [];
    return [...this.#live(zone).keys()];
  }

  /** Every live value, for the admin API. */
  list(): ChallengeEntry[] {
    const out: ChallengeEntry[] = [];
    for (const zone of [...this.#zones.keys()]) {
      for (const [value, expiresAt] of this.#live(zone)) out.push({ zone, value, expiresAt });
    }
    return out;
  }

  /** The zone's values with the expired ones dropped (the map is created when missing). */
  #live(zone: string): Map<string, number> {
    const values = this.#zones.get(zone) ?? new Map<string, number>();
    const now = this.#clock.now();
    for (const [v, expiresAt] of values) if (expiresAt <= now) values.delete(v);
    if (values.size === 0) this.#zones.delete(zone);
    return values;
  }
}

function zoneOf(zone: string): string {
  try {
    return normalizeZone(zone);
  } catch (err) {
    throw new DnsChallengeError(`zone ${JSON.stringify(zone)} is not a DNS name`, { cause: err });
  }
}

function checkTtl(ttlMs: number): number {
  if (!Number.isInteger(ttlMs) || ttlMs < 1 || ttlMs > MAX_CHALLENGE_TTL_MS) {
    throw new DnsChallengeError(
      `challenge lifetime must be an integer 1..${MAX_CHALLENGE_TTL_MS} ms, got ${ttlMs}`,
    );
  }
  return ttlMs;
}
