/**
 * The process's metrics: its databases found corrupt at start, heap trims, client connections
 * (budgets' refusals and closes, failed accepts, open connections and the ceiling, read at each
 * scrape), the descriptor limit, failures survived, and the worker threads.
 */
import type { BudgetEvents, BudgetStats } from '@coral/connguard';
import { CLOSE_REASONS, REFUSAL_REASONS } from '@coral/connguard';
import { Counter, Gauge } from 'prom-client';
import { label, type MetricArea } from './registry.js';

/** What the node's start-up records about its databases. */
export interface StorageMetricsSink {
  /** A database found corrupt at start was moved aside and the node started with it empty. */
  corruptStore(store: 'dsht' | 'cache' | 'purge'): void;
}

/** What a node's worker threads add (workers/): their restarts and their reported counters. */
export interface WorkerMetricsSink {
  /** Worker `worker` exited and is being started again. */
  restarted(worker: number): void;
  /** `n` DNS answers a worker sent (the same counter as the main thread's DNS answers). */
  dnsAnswers(method: string, rcode: string, n: number): void;
  /** `n` DNS answers a worker's rate limit dropped or slipped. */
  dnsRateLimited(n: number): void;
  /** `n` more DNS queries received by `worker` over `transport`. */
  dnsQueries(worker: number, transport: 'udp' | 'tcp', n: number): void;
}

export function processMetrics(m: MetricArea): {
  storage: StorageMetricsSink;
  heapTrimmed: (releasedBytes: number) => void;
  connections: Required<BudgetEvents>;
  bindConnections: (stats: () => BudgetStats) => void;
  descriptorLimits: (soft: number, hard: number) => void;
  resourceError: (source: string, code: string) => void;
} {
  const { p, registers } = m;
  const corrupt = new Counter({
    name: `${p}store_corruptions_total`,
    help: 'Databases found corrupt at start, moved aside and started empty, by store (dsht, cache, purge)',
    labelNames: ['store'],
    registers,
  });
  // Both series exist from the start, so a dashboard or alert sees 0 rather than no data.
  for (const store of ['dsht', 'cache', 'purge']) corrupt.inc({ store }, 0);
  const heapTrims = new Counter({
    name: `${p}heap_trims_total`,
    help: 'Trims of the C heap (glibc malloc_trim) after a busy spell, giving free pages back to the system',
    registers,
  });
  const heapTrimmed = new Counter({
    name: `${p}heap_trim_released_bytes_total`,
    help: 'Resident memory the heap trims gave back to the system',
    registers,
  });
  const refused = new Counter({
    name: `${p}connections_refused_total`,
    help: 'Connections closed on arrival by a connection budget, by listener and reason (per-address, per-prefix, listener-full, ceiling)',
    labelNames: ['listener', 'reason'],
    registers,
  });
  const closedConns = new Counter({
    name: `${p}connections_closed_total`,
    help: 'Admitted connections a connection budget closed, by listener and reason (idle-timeout, keepalive-timeout, header-timeout, body-timeout, shed)',
    labelNames: ['listener', 'reason'],
    registers,
  });
  const acceptErrors = new Counter({
    name: `${p}accept_errors_total`,
    help: 'Accepts that failed (EMFILE, ENFILE, ENOMEM...) on a listener that went on listening, by listener and code',
    labelNames: ['listener', 'code'],
    registers,
  });
  let budget: (() => BudgetStats) | undefined;
  new Gauge({
    name: `${p}connections_open`,
    help: 'Client connections open, by listener',
    labelNames: ['listener'],
    registers,
    collect() {
      const b = budget?.();
      this.reset();
      for (const [listener, l] of Object.entries(b?.listeners ?? {}))
        this.set({ listener }, l.open);
    },
  });
  new Gauge({
    name: `${p}connections_ceiling`,
    help: 'The node-wide ceiling on client connections (from the descriptor limit, less a reserve)',
    registers,
    collect() {
      this.set(budget?.()?.ceiling ?? 0);
    },
  });
  const fdLimit = new Gauge({
    name: `${p}descriptor_limit`,
    help: 'The open-file limit in effect (RLIMIT_NOFILE), soft and hard',
    labelNames: ['kind'],
    registers,
  });
  const resourceErrors = new Counter({
    name: `${p}resource_errors_total`,
    help: 'Failures the node survived (a timer or a background task hit EMFILE, ENFILE, ENOMEM...), by source and code',
    labelNames: ['source', 'code'],
    registers,
  });
  // Both sets exist from the start for the proxy's listener, so alerts see 0 rather than no data.
  for (const reason of REFUSAL_REASONS) refused.inc({ listener: 'http', reason }, 0);
  for (const reason of CLOSE_REASONS) closedConns.inc({ listener: 'http', reason }, 0);

  return {
    storage: { corruptStore: (store) => corrupt.inc({ store }) },
    heapTrimmed: (bytes) => {
      heapTrims.inc();
      heapTrimmed.inc(bytes);
    },
    connections: {
      refused: (listener, reason) => refused.inc({ listener, reason }),
      closed: (listener, reason) => closedConns.inc({ listener, reason }),
      acceptError: (listener, code) => acceptErrors.inc({ listener, code }),
    },
    bindConnections: (stats) => {
      budget = stats;
    },
    descriptorLimits: (soft, hard) => {
      fdLimit.set({ kind: 'soft' }, soft);
      fdLimit.set({ kind: 'hard' }, hard);
    },
    resourceError: (source, code) => resourceErrors.inc({ source, code }),
  };
}

/** The worker threads' metrics; their DNS answers and rate-limited go to the node's counters. */
export function workerMetrics(
  m: MetricArea,
  dns: { answers: Counter<'method' | 'rcode'>; rateLimited: Counter<'service'> },
): WorkerMetricsSink {
  const { p, registers } = m;
  const restarts = new Counter({
    name: `${p}workers_restarts_total`,
    help: 'Worker threads that exited and were started again, by worker',
    labelNames: ['worker'],
    registers,
  });
  const queries = new Counter({
    name: `${p}worker_dns_queries_total`,
    help: 'DNS queries received by each worker thread, by transport',
    labelNames: ['worker', 'transport'],
    registers,
  });
  return {
    restarted: (worker) => restarts.inc({ worker: String(worker) }),
    dnsAnswers: (method, rcode, n) =>
      dns.answers.inc({ method: label(method), rcode: label(rcode) }, n),
    dnsRateLimited: (n) => dns.rateLimited.inc({ service: 'dns' }, n),
    dnsQueries: (worker, transport, n) => queries.inc({ worker: String(worker), transport }, n),
  };
}
