/**
 * What every metrics area (http.ts, dns.ts, dsht.ts, fleet.ts, process.ts) shares: the node's one
 * registry and metric name prefix, label values kept short, and the dashboard's readings of a
 * counter. CoralMetrics (metrics.ts) makes one {@link MetricArea} and hands it to each area.
 */
import { Counter, type Registry } from 'prom-client';
import type { Readings } from './history.js';

/** Where an area registers its metrics: the node's registry, under the node's prefix. */
export interface MetricArea {
  /** The metric name prefix (`coral_`). */
  readonly p: string;
  readonly registers: Registry[];
}

/** Reads what the dashboard samples of a counter (see CoralMetrics.read). */
export type Reader = () => Promise<Readings>;

/** Keep label values short and printable so a misbehaving caller cannot explode cardinality. */
export function label(v: string | number): string {
  const s = String(v);
  return s.length > 48 ? s.slice(0, 48) : s;
}

/** A counter's values summed over the labels the dashboard does not show (`by`: the one it does). */
export function sum(c: Counter, prefix: string, by?: string): Reader {
  return async () => {
    const out: Readings = {};
    for (const v of (await c.get()).values) {
      const key = by ? `${prefix}.${String(v.labels[by])}` : prefix;
      out[key] = (out[key] ?? 0) + v.value;
    }
    return out;
  };
}

/** Requests or queries a rate limit dropped, by service: the proxy's, DNS's and the workers'. */
export function rateLimitedCounter({ p, registers }: MetricArea): Counter<'service'> {
  return new Counter({
    name: `${p}rate_limited_total`,
    help: 'Requests or queries dropped by a rate limit, by service',
    labelNames: ['service'],
    registers,
  });
}
