/**
 * The proxy's per-origin-domain traffic, its cache's use of its budgets and its opt-out and
 * purge-at-commit events as Prometheus metrics, registered on the node's registry next to the
 * others (metrics.ts) by the proxy's wiring (compose/services.ts).
 *
 * The cache gauges and its eviction counter are read from `CoralProxy.cacheStats()` at each
 * scrape (figures the proxy keeps in memory anyway), never updated per request.
 *
 * The domain counters are read from `CoralProxy.traffic()` at each scrape: the top
 * {@link TRAFFIC_TOP_DOMAINS} domains by bytes and `(other)` for the rest, so a label set stays
 * bounded however many origins a node serves. The sum over all labels of a metric is monotonic;
 * a domain that leaves the top moves its bytes into `(other)`.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { CacheTierStats, CoralProxy, ProxyMetrics } from '@coral/httpprx';
import { DEFAULT_METRICS_PREFIX } from './metrics.js';

/** Domains reported by name per metric. */
export const TRAFFIC_TOP_DOMAINS = 20;

type TrafficSource = Pick<CoralProxy, 'traffic'> & Partial<Pick<CoralProxy, 'cacheStats'>>;
type Events = Pick<ProxyMetrics, 'optOut' | 'commitRefused'>;

/** Registries already holding these metrics: a proxy built again (a store reopened) rebinds. */
const bound = new WeakMap<Registry, { source: () => TrafficSource | undefined; events: Events }>();

/**
 * Register the per-domain metrics of `proxy` (once per registry; a later call rebinds them to
 * its proxy); returns the event callbacks for its `metrics`.
 */
export function registerProxyTraffic(
  registry: Registry,
  proxy: () => TrafficSource | undefined,
  prefix = DEFAULT_METRICS_PREFIX,
): Events {
  const known = bound.get(registry);
  if (known) {
    known.source = proxy;
    return known.events;
  }
  const state: { source: () => TrafficSource | undefined; events: Events } = {
    source: proxy,
    events: {},
  };
  bound.set(registry, state);
  const registers = [registry];
  const perDomain = (
    name: string,
    help: string,
    read: (t: ReturnType<TrafficSource['traffic']>) => Array<{ domain: string; value: number }>,
  ) =>
    new Counter({
      name: `${prefix}${name}`,
      help,
      labelNames: ['domain'],
      registers,
      collect() {
        const p = state.source();
        this.reset();
        if (!p) return;
        for (const { domain, value } of read(p.traffic(TRAFFIC_TOP_DOMAINS))) {
          this.inc({ domain }, value);
        }
      },
    });
  perDomain(
    'origin_domain_bytes_total',
    'Body bytes fetched from origins, by origin domain (top 20 and (other))',
    (t) => t.origin.domains.map((d) => ({ domain: d.domain, value: d.bytes })),
  );
  perDomain(
    'served_domain_bytes_total',
    'Body bytes served to clients and peers, by origin domain (top 20 and (other))',
    (t) => t.served.domains.map((d) => ({ domain: d.domain, value: d.bytes })),
  );
  perDomain(
    'origin_domain_throttled_seconds_total',
    'Time origin fetches waited for the origin bandwidth cap, summed over fetches, by domain',
    (t) => t.origin.domains.map((d) => ({ domain: d.domain, value: d.throttledMs / 1000 })),
  );
  perDomain(
    'served_domain_throttled_seconds_total',
    'Time responses waited for the served bandwidth cap, summed over responses, by domain',
    (t) => t.served.domains.map((d) => ({ domain: d.domain, value: d.throttledMs / 1000 })),
  );
  new Gauge({
    name: `${prefix}bandwidth_cap_bytes_per_second`,
    help: 'The node-wide bandwidth caps (0: unlimited), by direction (origin, served)',
    labelNames: ['direction'],
    registers,
    collect() {
      const t = state.source()?.traffic(0);
      this.set({ direction: 'origin' }, t?.origin.capBytesPerSec ?? 0);
      this.set({ direction: 'served' }, t?.served.capBytesPerSec ?? 0);
    },
  });
  // The cache against its budgets, by tier: memory (hot objects) and disk.
  const tiers = (): Array<CacheTierStats & { tier: string }> => {
    const c = state.source()?.cacheStats?.();
    if (!c) return [];
    return [{ tier: 'memory', ...c.memory }, ...(c.disk ? [{ tier: 'disk', ...c.disk }] : [])];
  };
  const perTier = (name: string, help: string, read: (t: CacheTierStats) => number) =>
    new Gauge({
      name: `${prefix}${name}`,
      help,
      labelNames: ['tier'],
      registers,
      collect() {
        this.reset();
        for (const t of tiers()) this.set({ tier: t.tier }, read(t));
      },
    });
  perTier(
    'cache_bytes',
    'Bytes the cache holds against its budget, by tier (memory: hot objects with their prepared headers; disk: stored bodies)',
    (t) => t.bytes,
  );
  perTier('cache_objects', 'Stored responses (variants) in the cache, by tier', (t) => t.objects);
  perTier(
    'cache_budget_bytes',
    'The byte budget of each cache tier (proxy.memoryBudgetBytes, proxy.diskBudgetBytes)',
    (t) => t.budgetBytes,
  );
  new Counter({
    name: `${prefix}cache_evictions_total`,
    help: 'Stored responses dropped to stay within the budget (least recently used first), by tier; not purges or replacements',
    labelNames: ['tier'],
    registers,
    collect() {
      this.reset();
      for (const t of tiers()) this.inc({ tier: t.tier }, t.evictions);
    },
  });
  const optOut = new Counter({
    name: `${prefix}origin_opt_out_total`,
    help: 'Coral-Control: redirect-home — recorded (an origin fetch here carried it), learned (from a member, through the index), redirected (a client sent home)',
    labelNames: ['event'],
    registers,
  });
  for (const event of ['recorded', 'learned', 'redirected']) optOut.inc({ event }, 0);
  const refused = new Counter({
    name: `${prefix}commits_refused_total`,
    help: 'Fetched responses not stored because a purge matching them was applied while they were fetched',
    registers,
  });
  state.events = { optOut: (event) => optOut.inc({ event }), commitRefused: () => refused.inc() };
  return state.events;
}
