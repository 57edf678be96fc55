/**
 * Prometheus metrics of one node (prom-client), with one facet per component: the proxy, the DNS
 * server and the DSHT each receive the small recording interface they were written against, and
 * never see prom-client. Each node has its own registry, so several nodes can live in one process
 * (tests) without their counters mixing.
 */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** What the proxy records (the shape @coral/httpprx takes as its `metrics` component). */
export interface ProxyMetricsSink {
  request(cacheStatus: string, method: string, status: number): void;
  originFetch(bytes: number, ok: boolean): void;
  peerFetch(bytes: number, ok: boolean): void;
  rateLimited(): void;
}

/** What the DNS server records (the shape @coral/dnssrv takes as its `metrics` component). */
export interface DnsMetricsSink {
  answer(method: string, rcode: string | number): void;
  rateLimited(): void;
}

/** What the DSHT records (the shape @coral/dsht takes as its `metrics` component). */
export interface DshtMetricsSink {
  rpc(type: string, outcome: string): void;
  lookup(kind: string, hops: number, latencyMs: number): void;
}

/** What the DSHT content index adapter records. */
export interface IndexMetricsSink {
  /** A cold miss claimed as `fetching`: `won` goes to the origin, `lost` joins another node. */
  claim(outcome: 'won' | 'lost'): void;
  /** A value under a URL key that is not a valid holder record. */
  invalidValue(): void;
}

/** What the node's start-up records about its databases. */
export interface StorageMetricsSink {
  /** A database found corrupt at start was moved aside and the node started with it empty. */
  corruptStore(store: 'dsht' | 'cache'): void;
}

export interface CoralMetricsOptions {
  /** Also export the process metrics of prom-client (CPU, memory, event loop); default true. */
  defaultMetrics?: boolean;
  /** Metric name prefix; default `coral_`. */
  prefix?: string;
}

export const DEFAULT_METRICS_PREFIX = 'coral_';

/** Keep label values short and printable so a misbehaving caller cannot explode cardinality. */
function label(v: string | number): string {
  const s = String(v);
  return s.length > 48 ? s.slice(0, 48) : s;
}

export class CoralMetrics {
  readonly registry: Registry;
  readonly proxy: ProxyMetricsSink;
  readonly dns: DnsMetricsSink;
  readonly dsht: DshtMetricsSink;
  readonly index: IndexMetricsSink;
  readonly storage: StorageMetricsSink;

  constructor(options: CoralMetricsOptions = {}) {
    const p = options.prefix ?? DEFAULT_METRICS_PREFIX;
    const registers = [(this.registry = new Registry())];
    if (options.defaultMetrics ?? true)
      collectDefaultMetrics({ register: this.registry, prefix: p });

    const requests = new Counter({
      name: `${p}http_requests_total`,
      help: 'Proxy responses by Cache-Status outcome, method and status code',
      labelNames: ['cache_status', 'method', 'status'],
      registers,
    });
    const originFetches = new Counter({
      name: `${p}origin_fetches_total`,
      help: 'Fetches from origin servers by outcome',
      labelNames: ['outcome'],
      registers,
    });
    const originBytes = new Counter({
      name: `${p}origin_fetch_bytes_total`,
      help: 'Body bytes received from origin servers',
      registers,
    });
    const peerFetches = new Counter({
      name: `${p}peer_fetches_total`,
      help: 'Fetches from peer proxies by outcome',
      labelNames: ['outcome'],
      registers,
    });
    const peerBytes = new Counter({
      name: `${p}peer_fetch_bytes_total`,
      help: 'Body bytes received from peer proxies',
      registers,
    });
    const rateLimited = new Counter({
      name: `${p}rate_limited_total`,
      help: 'Requests or queries dropped by a rate limit, by service',
      labelNames: ['service'],
      registers,
    });
    const rpcs = new Counter({
      name: `${p}dsht_rpcs_total`,
      help: 'DSHT RPCs by message type and outcome',
      labelNames: ['type', 'outcome'],
      registers,
    });
    const hops = new Histogram({
      name: `${p}dsht_lookup_hops`,
      help: 'Hops per DSHT lookup, by kind (get, put, find_node)',
      labelNames: ['kind'],
      buckets: [0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20],
      registers,
    });
    const latency = new Histogram({
      name: `${p}dsht_lookup_latency_seconds`,
      help: 'DSHT lookup latency in seconds, by kind',
      labelNames: ['kind'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    const answers = new Counter({
      name: `${p}dns_answers_total`,
      help: 'DNS answers by the method that located the client, and rcode',
      labelNames: ['method', 'rcode'],
      registers,
    });

    const claims = new Counter({
      name: `${p}index_claims_total`,
      help: 'Cold misses claimed in the index, by outcome (won: fetch from origin, lost: join a peer)',
      labelNames: ['outcome'],
      registers,
    });
    const invalid = new Counter({
      name: `${p}index_invalid_values_total`,
      help: 'Values under URL keys that were not valid holder records (skipped)',
      registers,
    });
    const corrupt = new Counter({
      name: `${p}store_corruptions_total`,
      help: 'Databases found corrupt at start, moved aside and started empty, by store (dsht, cache)',
      labelNames: ['store'],
      registers,
    });
    // Both series exist from the start, so a dashboard or alert sees 0 rather than no data.
    for (const store of ['dsht', 'cache']) corrupt.inc({ store }, 0);
    this.storage = { corruptStore: (store) => corrupt.inc({ store }) };

    this.index = {
      claim: (outcome) => claims.inc({ outcome }),
      invalidValue: () => invalid.inc(),
    };

    this.proxy = {
      request: (cacheStatus, method, status) =>
        requests.inc({ cache_status: label(cacheStatus), method: label(method), status }),
      originFetch: (bytes, ok) => {
        originFetches.inc({ outcome: ok ? 'ok' : 'error' });
        if (bytes > 0) originBytes.inc(bytes);
      },
      peerFetch: (bytes, ok) => {
        peerFetches.inc({ outcome: ok ? 'ok' : 'error' });
        if (bytes > 0) peerBytes.inc(bytes);
      },
      rateLimited: () => rateLimited.inc({ service: 'proxy' }),
    };
    this.dns = {
      answer: (method, rcode) => answers.inc({ method: label(method), rcode: label(rcode) }),
      rateLimited: () => rateLimited.inc({ service: 'dns' }),
    };
    this.dsht = {
      rpc: (type, outcome) => rpcs.inc({ type: label(type), outcome: label(outcome) }),
      lookup: (kind, n, ms) => {
        hops.observe({ kind: label(kind) }, n);
        latency.observe({ kind: label(kind) }, ms / 1000);
      },
    };
  }

  /** The Prometheus text exposition of every metric. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
