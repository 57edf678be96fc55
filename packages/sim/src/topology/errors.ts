/**
 * Errors thrown while building a simulated topology. Stable codes, listed in
 * docs/dsht-clustering.md. A bad topology file reports every problem found at once.
 */
export class TopologyError extends Error {
  readonly code: string;
  /** Every problem found (the message joins the first few). */
  readonly problems: readonly string[];
  constructor(code: string, problems: readonly string[]) {
    const shown = problems.slice(0, 10).join('; ');
    const more = problems.length > 10 ? ` (and ${problems.length - 10} more)` : '';
    super(`${shown}${more}`);
    this.name = 'TopologyError';
    this.code = code;
    this.problems = problems;
  }
}

/** Invalid options of a topology generator (counts, ranges, jitter). */
export const ERR_TOPOLOGY_OPTIONS = 'DSHT_ERR_TOPOLOGY_OPTIONS';
/** A topology file (JSON RTT matrix) that does not parse or does not validate. */
export const ERR_TOPOLOGY_MATRIX = 'DSHT_ERR_TOPOLOGY_MATRIX';
/** A latency was asked for an address that is not a node of the topology. */
export const ERR_TOPOLOGY_UNKNOWN_IP = 'DSHT_ERR_TOPOLOGY_UNKNOWN_IP';

export const TOPOLOGY_ERROR_CODES = [
  ERR_TOPOLOGY_OPTIONS,
  ERR_TOPOLOGY_MATRIX,
  ERR_TOPOLOGY_UNKNOWN_IP,
] as const;
