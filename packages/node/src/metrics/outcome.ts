/** How the metrics (metrics.ts, latency.ts) and the dashboard group Cache-Status outcomes: where the response's bytes came from. */
export type Outcome = 'hit' | 'peer' | 'miss' | 'error';
export const OUTCOMES: readonly Outcome[] = ['hit', 'peer', 'miss', 'error'];

/**
 * `hit`: served from this node's cache (hit, stale, revalidated); `peer`: fetched from another
 * node; `error`: an error answer; `miss`: everything else (went to the origin: miss, uri-miss,
 * request, bypass, ...).
 */
export function outcomeOf(cacheStatus: string): Outcome {
  switch (cacheStatus) {
    case 'hit':
    case 'stale':
    case 'revalidated':
      return 'hit';
    case 'peer':
      return 'peer';
    case 'error':
      return 'error';
    default:
      return 'miss';
  }
}
