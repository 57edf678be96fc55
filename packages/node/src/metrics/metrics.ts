/**
 * Prometheus metrics of one node (prom-client), with one facet per component: the proxy, the DNS
 * server and the DSHT each receive the small recording interface they were written against, and
 * never see prom-client. Each node has its own registry, so several nodes can live in one process
 * (tests) without their counters mixing. The metrics are defined by area — http.ts (the proxy),
 * dns.ts, dsht.ts, fleet.ts (purges, member trust, fleet keys), process.ts (storage, heap,
 * connections, descriptors, workers) — all in this one registry.
 */
import type { BudgetEvents, BudgetStats } from '@coral/connguard';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { dnsMetrics, type DnsMetricsSink } from './dns.js';
import {
  dshtMetrics,
  type DshtMetricsSink,
  type IndexMetricsSink,
  type MemberEvent,
  type MembershipSource,
} from './dsht.js';
import { fleetMetrics, type PurgeMetricsSink, type TrustSource } from './fleet.js';
import type { Readings } from './history.js';
import { httpMetrics, type ProxyMetricsSink, type TrafficMetricsSink } from './http.js';
import type { ListenAddress, MonotonicClock, ResponseTimer } from './latency.js';
import { OUTCOMES, outcomeOf, type Outcome } from './outcome.js';
import {
  processMetrics,
  workerMetrics,
  type StorageMetricsSink,
  type WorkerMetricsSink,
} from './process.js';
import { rateLimitedCounter, type Reader } from './registry.js';
import type { SpaceSaving } from './top-k.js';

export type { DnsMetricsSink } from './dns.js';
export {
  MEMBER_EVENTS,
  type DshtMetricsSink,
  type IndexMetricsSink,
  type MemberEvent,
  type MembershipSource,
} from './dsht.js';
export { DSHT_DROP_REASONS, type PurgeMetricsSink, type TrustSource } from './fleet.js';
export {
  HOT_URL_CAPACITY,
  HOT_URL_MAX_LENGTH,
  HTTP_DURATION_BUCKETS,
  type ProxyMetricsSink,
  type TrafficMetricsSink,
} from './http.js';
export type { StorageMetricsSink, WorkerMetricsSink } from './process.js';
export { OUTCOMES, outcomeOf, type Outcome };

export interface CoralMetricsOptions {
  /** Also export the process metrics of prom-client (CPU, memory, event loop); default true. */
  defaultMetrics?: boolean;
  /** Metric name prefix; default `coral_`. */
  prefix?: string;
  /** URLs the hottest-URL sketch monitors (default {@link HOT_URL_CAPACITY}). */
  hotUrlCapacity?: number;
  /** The clock response times are read from (ms, monotonic); default `performance`. */
  monotonic?: MonotonicClock;
}

export const DEFAULT_METRICS_PREFIX = 'coral_';

export class CoralMetrics {
  readonly registry: Registry;
  readonly proxy: ProxyMetricsSink;
  readonly dns: DnsMetricsSink;
  readonly dsht: DshtMetricsSink;
  readonly index: IndexMetricsSink;
  readonly storage: StorageMetricsSink;
  readonly purge: PurgeMetricsSink;
  /** A heap trim (runtime/heap-trim.ts) ran and released this many bytes of RSS. */
  readonly heapTrimmed: (releasedBytes: number) => void;
  /** Connection budgets (@coral/connguard): refusals, closes and failed accepts per listener. */
  readonly connections: Required<BudgetEvents>;
  /**
   * A failure the node survived where it used to die (a timer's EMFILE, ENOMEM...): counted by
   * where it happened and its code.
   */
  readonly resourceError: (source: string, code: string) => void;
  /** The descriptor limits in effect (after the node raised the soft one). */
  readonly descriptorLimits: (soft: number, hard: number) => void;
  /** A node-to-node admin request refused (peer/requests.ts), by reason. */
  readonly peerRefused: (reason: string) => void;
  readonly traffic: TrafficMetricsSink;
  /** A failure-detection event about a member (suspect, dead, left, alive again). */
  readonly memberEvent: (event: MemberEvent) => void;
  /** A quarantine report sent to a member (trust/member-reports.ts): ok or failed. */
  readonly reportSent: (outcome: 'ok' | 'failed') => void;
  /** The worker threads (`workers` ≥ 2): restarts, and what the workers count and report. */
  readonly workers: WorkerMetricsSink;
  /** The URLs clients ask this node's proxy for most (peers' requests are not counted). */
  readonly hotUrls: SpaceSaving<string>;
  /** Where the membership gauge reads from (the node's DSHT), once it runs. */
  readonly bindMembership: (source: MembershipSource) => void;
  /** Where the quarantine gauge reads from (the proxy's audit), once it runs. */
  readonly bindQuarantine: (counts: () => { quarantined: number; suspects: number }) => void;
  /** Where the connection gauges read from (the node's connection budget). */
  readonly bindConnections: (stats: () => BudgetStats) => void;
  /** Where the fleet-trust metrics read from (the node's DSHT and keyring), once it runs. */
  readonly bindTrust: (source: TrustSource) => void;
  readonly #timer: ResponseTimer;
  /** Reads the counters the dashboard shows (see {@link read}). */
  readonly #readers: Reader[];

  constructor(options: CoralMetricsOptions = {}) {
    const p = options.prefix ?? DEFAULT_METRICS_PREFIX;
    const area = { p, registers: [(this.registry = new Registry())] };
    if (options.defaultMetrics ?? true)
      collectDefaultMetrics({ register: this.registry, prefix: p });

    const rateLimited = rateLimitedCounter(area);
    const processArea = processMetrics(area);
    const dnsArea = dnsMetrics(area, rateLimited);
    const dshtArea = dshtMetrics(area);
    const fleetArea = fleetMetrics(area);
    const httpArea = httpMetrics(area, {
      rateLimited,
      resourceError: processArea.resourceError,
      memberReport: fleetArea.memberReport,
      ...(options.hotUrlCapacity !== undefined ? { hotUrlCapacity: options.hotUrlCapacity } : {}),
      ...(options.monotonic ? { monotonic: options.monotonic } : {}),
    });

    ({
      storage: this.storage,
      heapTrimmed: this.heapTrimmed,
      connections: this.connections,
      bindConnections: this.bindConnections,
      descriptorLimits: this.descriptorLimits,
      resourceError: this.resourceError,
    } = processArea);
    this.workers = workerMetrics(area, { answers: dnsArea.answers, rateLimited });
    this.dns = dnsArea.dns;
    ({
      dsht: this.dsht,
      index: this.index,
      memberEvent: this.memberEvent,
      bindMembership: this.bindMembership,
    } = dshtArea);
    ({
      purge: this.purge,
      peerRefused: this.peerRefused,
      reportSent: this.reportSent,
      bindQuarantine: this.bindQuarantine,
      bindTrust: this.bindTrust,
    } = fleetArea);
    ({ proxy: this.proxy, traffic: this.traffic, hotUrls: this.hotUrls } = httpArea);
    this.#timer = httpArea.timer;
    this.#readers = [...httpArea.readers, ...dnsArea.readers];
  }

  /**
   * The counters the dashboard shows, summed over the labels it does not show, from the same
   * prom-client objects `/metrics` exposes: `requests.<cache_status>` (coral_http_requests_total),
   * `sent.client` / `sent.peer` (coral_http_response_bytes_total), `received.origin` and
   * `received.peer` (coral_origin_fetch_bytes_total, coral_peer_fetch_bytes_total),
   * `fetches.origin.<outcome>`, `fetches.peer.<outcome>`, `dns.<method>` (coral_dns_answers_total)
   * and `rateLimited.<service>`; plus `outcome.hit|peer|miss|error`, the requests grouped by
   * {@link outcomeOf}.
   */
  async read(): Promise<Readings> {
    const parts = await Promise.all(this.#readers.map((r) => r()));
    const out = Object.assign({}, ...parts) as Readings;
    for (const o of OUTCOMES) out[`outcome.${o}`] = 0;
    for (const [k, v] of Object.entries(out)) {
      if (k.startsWith('requests.')) out[`outcome.${outcomeOf(k.slice(9))}`]! += v;
    }
    return out;
  }

  /**
   * Time the responses of the proxy's servers listening at `listening` (its http and https
   * listeners), for the response-time histograms; until {@link close}.
   */
  timeProxy(listening: readonly ListenAddress[]): void {
    this.#timer.watch(listening);
  }

  /** Stop observing the proxy's servers. */
  close(): void {
    this.#timer.stop();
  }

  /** The Prometheus text exposition of every metric. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
