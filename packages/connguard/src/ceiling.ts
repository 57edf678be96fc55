/**
 * The node-wide connection ceiling, from the descriptor limit in effect: the limit less a reserve
 * for what the node opens itself (origin and peer connections, the DSHT's and DNS's sockets, the
 * cache's files and databases, the admin API), capped where memory rather than descriptors bounds
 * the count. HAProxy derives its maxconn from the limit the same way.
 */
import { ConnGuardError, CONNGUARD_ERR_OPTIONS } from './errors.js';
import { DEFAULT_CEILING_MAX, DEFAULT_RESERVE_FRACTION, DEFAULT_RESERVE_MIN } from './constants.js';

export interface CeilingOptions {
  /** Fraction of the limit kept back (default {@link DEFAULT_RESERVE_FRACTION}). */
  reserveFraction?: number;
  /** Descriptors kept back at least (default {@link DEFAULT_RESERVE_MIN}). */
  reserveMin?: number;
  /** The derived ceiling stops here (default {@link DEFAULT_CEILING_MAX}). */
  max?: number;
}

export interface Ceiling {
  /** The descriptor limit it was derived from. */
  limit: number;
  /** Descriptors kept back from client connections. */
  reserve: number;
  /** Client connections the node holds at most, every listener together. */
  ceiling: number;
}

/**
 * The ceiling for a descriptor limit: `limit − reserve` (at most `max`), where the reserve is
 * `max(reserveMin, reserveFraction × limit)` but never more than half of a small limit, so that a
 * node started with 256 descriptors still takes 128 clients.
 */
export function connectionCeiling(limit: number, options: CeilingOptions = {}): Ceiling {
  const fraction = options.reserveFraction ?? DEFAULT_RESERVE_FRACTION;
  const min = options.reserveMin ?? DEFAULT_RESERVE_MIN;
  const max = options.max ?? DEFAULT_CEILING_MAX;
  if (!Number.isInteger(limit) || limit < 2) {
    throw new ConnGuardError(CONNGUARD_ERR_OPTIONS, `descriptor limit must be ≥ 2, got ${limit}`);
  }
  if (!(fraction >= 0 && fraction < 1) || !(Number.isInteger(min) && min >= 0)) {
    throw new ConnGuardError(
      CONNGUARD_ERR_OPTIONS,
      'reserve must be a fraction in [0, 1) and a count ≥ 0',
    );
  }
  if (!(Number.isInteger(max) && max >= 1)) {
    throw new ConnGuardError(CONNGUARD_ERR_OPTIONS, `ceiling max must be ≥ 1, got ${max}`);
  }
  const reserve = Math.min(Math.max(min, Math.ceil(limit * fraction)), Math.floor(limit / 2));
  return { limit, reserve, ceiling: Math.min(max, limit - reserve) };
}
