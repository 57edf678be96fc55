/**
 * Errors thrown by the clustering module. Each has a stable `code` (never reused), listed in
 * docs/dsht-clustering.md. Network input (advertisements) is never thrown on: bad entries are
 * dropped and counted instead, so a hostile peer cannot crash the receive path.
 */
export class ClusterError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'ClusterError';
    this.code = code;
  }
}

/** Invalid `ClusterManager` / `RttEstimator` options (thresholds, windows, margins, ...). */
export const ERR_CLUSTER_OPTIONS = 'DSHT_ERR_CLUSTER_OPTIONS';
/** An RTT sample that is not a finite number ≥ 0, or an empty peer id. */
export const ERR_BAD_RTT = 'DSHT_ERR_BAD_RTT';
/** A level outside 0..levels-1 passed to a query such as `clusterOf(level)`. */
export const ERR_BAD_LEVEL = 'DSHT_ERR_BAD_LEVEL';

/** Every code thrown by the cluster module. */
export const CLUSTER_ERROR_CODES = [ERR_CLUSTER_OPTIONS, ERR_BAD_RTT, ERR_BAD_LEVEL] as const;
