/** Checks of numeric options; each failure is a `DNS_ERR_CONFIG` naming the option. */
import { DnsConfigError } from '../errors.js';

/** An integer in [min, max]. */
export function intIn(name: string, v: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (!Number.isInteger(v) || v < min || v > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `in ${min}..${max}`;
    throw new DnsConfigError(`${name} must be an integer ${range}, got ${v}`);
  }
  return v;
}

export function positiveInt(name: string, v: number): number {
  return intIn(name, v, 1);
}

export function nonNegativeInt(name: string, v: number): number {
  return intIn(name, v, 0);
}

/** A finite number ≥ 0 (rates may be fractional: 0.5 a second). */
export function nonNegative(name: string, v: number): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
    throw new DnsConfigError(`${name} must be a number ≥ 0, got ${v}`);
  }
  return v;
}

type Check = (name: string, v: number) => number;
const prefix4: Check = (n, v) => intIn(n, v, 0, 32);
const prefix6: Check = (n, v) => intIn(n, v, 0, 128);

/** The limits of each option group: option name → check. */
const LIMITS: Record<string, Record<string, Check>> = {
  answerCache: { maxEntries: positiveInt, maxBytes: positiveInt },
  tcp: {
    idleTimeoutMs: positiveInt,
    maxMessageBytes: (n, v) => intIn(n, v, 12, 65_535),
    maxConnections: positiveInt,
    maxConnectionsPerSource: positiveInt,
    maxQueriesPerConnection: positiveInt,
    ipv4PrefixLength: prefix4,
    ipv6PrefixLength: prefix6,
  },
  hints: {
    ttlMs: nonNegativeInt,
    negativeTtlMs: nonNegativeInt,
    walksPerSecond: nonNegative,
    maxInFlight: nonNegativeInt,
    walkTimeoutMs: positiveInt,
    maxEntries: positiveInt,
  },
  probe: {
    ttlMs: nonNegativeInt,
    failureTtlMs: nonNegativeInt,
    maxInFlight: nonNegativeInt,
    maxPerSecond: nonNegative,
    timeoutMs: positiveInt,
    port: (n, v) => intIn(n, v, 1, 65_535),
  },
  rrl: {
    responsesPerSecond: nonNegative,
    nxdomainsPerSecond: nonNegative,
    nodataPerSecond: nonNegative,
    errorsPerSecond: nonNegative,
    slip: nonNegativeInt,
    ipv4PrefixLength: prefix4,
    ipv6PrefixLength: prefix6,
    maxAccounts: positiveInt,
  },
};

/**
 * Check the numeric limits of the server's option groups (`tcp`, `hints`, `probe`, `rrl`,
 * `answerCache`) and `hintTimeoutMs`; absent options are not checked (their defaults apply).
 */
export function checkLimits(options: Record<string, unknown>): void {
  for (const [group, checks] of Object.entries(LIMITS)) {
    const given = options[group] as Record<string, unknown> | undefined;
    if (given === undefined) continue;
    for (const [key, check] of Object.entries(checks)) {
      const v = given[key];
      if (v !== undefined) check(`${group}.${key}`, v as number);
    }
  }
  if (options.hintTimeoutMs !== undefined) {
    nonNegativeInt('hintTimeoutMs', options.hintTimeoutMs as number);
  }
}
