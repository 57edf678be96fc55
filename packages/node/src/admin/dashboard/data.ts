/**
 * The dashboard's data: `GET /v1/dashboard` answers {@link DashboardView}. It keeps the sample ring
 * (metrics/history.ts) and the observer of the proxy's responses (metrics/traffic.ts) running
 * while the admin API listens. Every number comes from the same prom-client counters `/metrics`
 * exposes (CoralMetrics.read), so the page and a Prometheus scrape agree.
 */
import type { Clock } from '@coral/runtime';
import type { Decision } from '@coral/dnssrv';
import { MetricsHistory, type HistoryColumns, type Readings } from '../../metrics/history.js';
import type { CoralMetrics } from '../../metrics/metrics.js';
import { ProxyTrafficObserver, type ProxyTrafficOptions } from '../../metrics/traffic.js';
import type { AdminBackend, NodeInfoView, ReadinessView } from '../backend.js';
import type { FleetView } from './fleet.js';

export interface DashboardOptions {
  /** Time between history samples (default metrics/history.ts HISTORY_INTERVAL_MS). */
  sampleIntervalMs?: number;
  /** Samples kept (default metrics/history.ts HISTORY_CAPACITY). */
  samples?: number;
  /** Hottest URLs listed (default {@link DASHBOARD_HOT_URLS}). */
  hotUrls?: number;
  /** Recent DNS answers listed (default {@link DASHBOARD_RECENT_DNS}). */
  recentDns?: number;
  /** The proxy to observe (bytes sent, hottest URLs); absent: nothing is observed. */
  proxy?: ProxyTrafficOptions;
}

export const DASHBOARD_HOT_URLS = 20;
export const DASHBOARD_RECENT_DNS = 12;

export interface DashboardTotals {
  /** Proxy responses by Cache-Status outcome (hit, miss, peer, stale, error, ...). */
  requests: Record<string, number>;
  /** The same, grouped by where the bytes came from (metrics.ts outcomeOf). */
  outcomes: Record<string, number>;
  /** Bytes written to clients and to peer nodes; body bytes received from origins and peers. */
  bytes: { toClients: number; toPeers: number; fromOrigin: number; fromPeers: number };
  /** Share of the bytes sent to clients that did not come from an origin (null before any). */
  offload: number | null;
  /** DNS answers by the method that located the client (view, ecs, rtt, hint, random, ...). */
  dns: Record<string, number>;
  fetches: { origin: Record<string, number>; peer: Record<string, number> };
  rateLimited: Record<string, number>;
}

export interface DashboardView {
  /** Clock time of this answer (ms); `totals` were read at this moment. */
  now: number;
  node: NodeInfoView;
  readiness: ReadinessView;
  sampleIntervalMs: number;
  /** Samples the node keeps (the page keeps as many). */
  samples: number;
  totals: DashboardTotals;
  /** Samples of the cumulative counters (keys as CoralMetrics.read), after `since` when given. */
  history: HistoryColumns;
  fleet: FleetView;
  hotUrls: {
    /** URLs the sketch monitors; a URL asked for more than total/capacity times is among them. */
    capacity: number;
    /** Client requests counted (with a Coralized or site URL). */
    total: number;
    items: { url: string; count: number; error: number }[];
  };
  dnsRecent: Decision[];
}

/** Keys of `prefix.<label>` readings, as a record by label. */
function group(r: Readings, prefix: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(r)) {
    if (k.startsWith(prefix + '.')) out[k.slice(prefix.length + 1)] = v;
  }
  return out;
}

/** Origin offload: the share of bytes sent to clients that were not fetched from an origin. */
export function offload(toClients: number, fromOrigin: number): number | null {
  if (!(toClients > 0)) return null;
  return Math.min(1, Math.max(0, 1 - fromOrigin / toClients));
}

export function totalsOf(r: Readings): DashboardTotals {
  const toClients = r['sent.client'] ?? 0;
  const fromOrigin = r['received.origin'] ?? 0;
  return {
    requests: group(r, 'requests'),
    outcomes: group(r, 'outcome'),
    bytes: {
      toClients,
      toPeers: r['sent.peer'] ?? 0,
      fromOrigin,
      fromPeers: r['received.peer'] ?? 0,
    },
    offload: offload(toClients, fromOrigin),
    dns: group(r, 'dns'),
    fetches: { origin: group(r, 'fetches.origin'), peer: group(r, 'fetches.peer') },
    rateLimited: group(r, 'rateLimited'),
  };
}

export class DashboardData {
  readonly #backend: AdminBackend;
  readonly #metrics: CoralMetrics;
  readonly #clock: Clock;
  readonly #history: MetricsHistory;
  readonly #traffic: ProxyTrafficObserver | undefined;
  readonly #hotUrls: number;
  readonly #recentDns: number;

  constructor(
    components: {
      backend: AdminBackend;
      metrics: CoralMetrics;
      clock: Clock;
      onError?: (err: unknown) => void;
    },
    options: DashboardOptions = {},
  ) {
    this.#backend = components.backend;
    this.#metrics = components.metrics;
    this.#clock = components.clock;
    this.#history = new MetricsHistory(
      {
        clock: components.clock,
        read: () => components.metrics.read(),
        ...(components.onError ? { onError: components.onError } : {}),
      },
      {
        ...(options.sampleIntervalMs ? { intervalMs: options.sampleIntervalMs } : {}),
        ...(options.samples ? { capacity: options.samples } : {}),
      },
    );
    this.#traffic = options.proxy
      ? new ProxyTrafficObserver({ sink: components.metrics.traffic }, options.proxy)
      : undefined;
    this.#hotUrls = options.hotUrls ?? DASHBOARD_HOT_URLS;
    this.#recentDns = options.recentDns ?? DASHBOARD_RECENT_DNS;
  }

  get history(): MetricsHistory {
    return this.#history;
  }

  start(): Promise<void> {
    this.#traffic?.start();
    return this.#history.start();
  }

  stop(): void {
    this.#traffic?.stop();
    this.#history.stop();
  }

  async view(since?: number): Promise<DashboardView> {
    const now = this.#clock.now();
    const readings = await this.#metrics.read();
    const hot = this.#metrics.hotUrls;
    const decisions = await this.#backend.dnsDecisions();
    return {
      now,
      node: this.#backend.info(),
      readiness: this.#backend.readiness(),
      sampleIntervalMs: this.#history.intervalMs,
      samples: this.#history.capacity,
      totals: totalsOf(readings),
      history: this.#history.columns(since),
      fleet: this.#backend.fleet(),
      hotUrls: {
        capacity: hot.capacity,
        total: hot.total,
        items: hot.top(this.#hotUrls).map((h) => ({ url: h.item, count: h.count, error: h.error })),
      },
      dnsRecent: decisions.slice(-this.#recentDns).reverse(),
    };
  }
}
