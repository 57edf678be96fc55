/**
 * The DNS server of a node with `workers: N` (N ≥ 2), as the owner (the main thread) sees it: N
 * worker threads (worker-main.ts), each a `DnsServer` on the node's DNS port with `reusePort`, the
 * kernel spreading resolvers over them. It is the node's `DnsPort`, in place of the one server of
 * a single-threaded node.
 *
 * The owner keeps what must be one: the DSHT and its directory, the ACME TXT values. It takes a
 * snapshot of the directory (`snapshotDirectory`) every `publishIntervalMs` (1 s) and pushes it to
 * every worker when it changed (a worker that starts gets the latest in its `workerData`); the
 * same for the ACME values. So a worker's answers follow the membership within about a second, and
 * every worker answers from the same state; a DSHT member event (`changed()`) pushes within 50 ms. A worker's hint walk (`hinted`) is a request to the
 * owner, answered from the DSHT. The workers' counters come back in their reports: DNS answers
 * and rate-limited answers into the node's counters, queries per worker into
 * `coral_worker_dns_queries_total{worker}`, `stats()` summed over the workers.
 */
import { Worker } from 'node:worker_threads';
import {
  sameSnapshot,
  snapshotDirectory,
  type Decision,
  type DirectorySnapshot,
  type DnsStats,
  type NodeDirectory,
  type ProbeEntry,
} from '@coral/dnssrv';
import type { Clock, TimerHandle } from '@coral/runtime';
import type { CoralConfig } from '../config/schema.js';
import type { WorkerMetricsSink } from '../metrics/metrics.js';
import type { DnsPort } from '../compose/ports.js';
import {
  decodeDecisions,
  decodeProbes,
  sumTrees,
  type ChallengeEntry,
  type NumberTree,
  type ReadyMessage,
  type WorkerData,
} from './protocol.js';
import {
  type CommandOutcome,
  type SupervisorLogger,
  WorkerSupervisor,
  type WorkerSupervisorOptions,
} from './supervisor.js';

/** packages/node/dist/workers/worker-main.js (the same path from src/workers under vitest). */
export const WORKER_ENTRY = new URL('../../dist/workers/worker-main.js', import.meta.url);
export const DEFAULT_PUBLISH_INTERVAL_MS = 1_000;
/** After a membership event, the push waits this long for the events that come with it. */
export const CHANGE_PUBLISH_DELAY_MS = 50;
/** Decisions the merged view keeps (one worker's ring). */
const DECISIONS_KEPT = 256;
/** A worker's V8 old-space cap: a heap overflow ends that worker (restarted), not the node. */
export const WORKER_MAX_OLD_GENERATION_MB = 512;

export interface DnsWorkersComponents {
  /** The node's directory (the DSHT's): snapshotted for the workers, asked for hints. */
  directory: NodeDirectory;
  /** The node's ACME TXT values (`InMemoryChallengeStore.list()`). */
  challenges?: { list(): ChallengeEntry[] };
  clock: Clock;
  logger: SupervisorLogger;
  metrics?: WorkerMetricsSink;
  /** Start a worker thread (default: `worker-main.js` with `data` as its workerData). */
  spawn?: (data: WorkerData) => Worker;
}

export interface DnsWorkersOptions {
  config: CoralConfig;
  /** Worker threads (default `config.workers`). */
  count?: number;
  publishIntervalMs?: number;
  restart?: WorkerSupervisorOptions['restart'];
  readyTimeoutMs?: number;
}

/** One worker as the admin API and the tests see it. */
export interface DnsWorkerState {
  worker: number;
  ready: boolean;
  restarts: number;
  threadId: number | undefined;
  /** Queries this worker's current thread received (from its last report). */
  queries: { udp: number; tcp: number };
}

export class DnsWorkers implements DnsPort {
  readonly #c: DnsWorkersComponents;
  readonly #config: CoralConfig;
  readonly #publishIntervalMs: number;
  readonly #supervisor: WorkerSupervisor;
  #snapshot: DirectorySnapshot;
  #seq = 0;
  #challenges: ChallengeEntry[] = [];
  #challengesText = '[]';
  #timer: TimerHandle | undefined;
  #soon: TimerHandle | undefined;
  #listen: { host: string; port: number } | undefined;
  /** The last stats each worker reported (its current thread's). */
  readonly #stats = new Map<number, NumberTree>();
  #closed = false;

  constructor(components: DnsWorkersComponents, options: DnsWorkersOptions) {
    this.#c = components;
    this.#config = options.config;
    this.#publishIntervalMs = options.publishIntervalMs ?? DEFAULT_PUBLISH_INTERVAL_MS;
    this.#snapshot = snapshotDirectory(components.directory);
    this.#readChallenges();
    const spawn =
      components.spawn ??
      ((data: WorkerData) =>
        new Worker(WORKER_ENTRY, {
          workerData: data,
          resourceLimits: { maxOldGenerationSizeMb: WORKER_MAX_OLD_GENERATION_MB },
        }));
    this.#supervisor = new WorkerSupervisor(
      {
        spawn: (index, first) =>
          spawn({
            index,
            config: this.#config,
            snapshot: this.#snapshot,
            challenges: this.#challenges,
            dns: first?.dns ?? this.#listen ?? null,
          }),
        clock: components.clock,
        logger: components.logger,
        restarted: (index) => components.metrics?.restarted(index),
        onRequest: async (_index, req) =>
          components.directory.hinted(req.target, req.count, {
            signal: AbortSignal.timeout(2_000),
          }),
        onReport: (index, report) => this.#onReport(index, report),
        onReady: (index) => this.#stats.delete(index),
      },
      {
        count: options.count ?? options.config.workers,
        ...(options.restart ? { restart: options.restart } : {}),
        ...(options.readyTimeoutMs !== undefined ? { readyTimeoutMs: options.readyTimeoutMs } : {}),
      },
    );
  }

  /** Start the workers on `port` (0: the port worker 0 gets) and `host`. */
  async listen(opts: { port: number; host: string }): Promise<{ host: string; port: number }> {
    this.#listen = { host: opts.host, port: opts.port };
    await this.#supervisor.start();
    const first = this.#supervisor.first as ReadyMessage;
    this.#listen = first.dns ?? this.#listen;
    this.#schedule();
    return this.#listen;
  }

  #schedule(): void {
    if (this.#closed) return;
    this.#timer = this.#c.clock.setTimeout(() => {
      this.publish();
      this.#schedule();
    }, this.#publishIntervalMs);
  }

  /**
   * The membership may have changed (a member dead, gone, back; a contact learned): push within
   * {@link CHANGE_PUBLISH_DELAY_MS}, one push for a burst of events, not at the next tick of the
   * timer. The node calls it on the DSHT's member events.
   */
  changed(): void {
    if (this.#soon || this.#closed) return;
    this.#soon = this.#c.clock.setTimeout(() => {
      this.#soon = undefined;
      this.publish();
    }, CHANGE_PUBLISH_DELAY_MS);
  }

  /** Push the directory and the ACME values to every worker if they changed (also on a timer). */
  publish(): void {
    const snap = snapshotDirectory(this.#c.directory);
    if (!sameSnapshot(this.#snapshot, snap)) {
      this.#snapshot = snap;
      this.#supervisor.broadcast({ type: 'directory', seq: ++this.#seq, snapshot: snap });
    }
    if (this.#readChallenges()) {
      this.#supervisor.broadcast({ type: 'challenges', entries: this.#challenges });
    }
  }

  /** Re-read the ACME values; whether they changed. */
  #readChallenges(): boolean {
    const list = this.#c.challenges?.list() ?? [];
    const text = JSON.stringify(list.map((e) => [e.zone, e.value]));
    if (text === this.#challengesText) return false;
    this.#challengesText = text;
    this.#challenges = list.map((e) => ({ zone: e.zone, value: e.value, expiresAt: e.expiresAt }));
    return true;
  }

  #onReport(
    index: number,
    report: {
      answers: [string, string, number][];
      rateLimited: number;
      stats?: NumberTree | undefined;
    },
  ): void {
    const m = this.#c.metrics;
    for (const [method, rcode, n] of report.answers) if (n > 0) m?.dnsAnswers(method, rcode, n);
    if (report.rateLimited > 0) m?.dnsRateLimited(report.rateLimited);
    if (!report.stats) return;
    const prev = queriesOf(this.#stats.get(index));
    const now = queriesOf(report.stats);
    for (const t of ['udp', 'tcp'] as const) {
      if (now[t] > prev[t]) m?.dnsQueries(index, t, now[t] - prev[t]);
    }
    this.#stats.set(index, report.stats);
  }

  /** Each worker: ready, restarts, queries received. */
  workerStates(): DnsWorkerState[] {
    return this.#supervisor.workers().map((w) => ({
      ...w,
      queries: queriesOf(this.#stats.get(w.worker)),
    }));
  }

  /** Ask every worker for its stats now (fresher than the last reports). */
  async refreshStats(): Promise<void> {
    const out = await this.#supervisor.fanOut({ type: 'command', command: 'stats' });
    for (const o of out) {
      if (o.ok)
        this.#onReport(o.worker, { answers: [], rateLimited: 0, stats: o.value as NumberTree });
    }
  }

  /** End worker `index` as a crash would: it is restarted (and counted) like one. */
  kill(index: number): Promise<void> {
    return this.#supervisor.kill(index);
  }

  /** SIGHUP: every worker reloads. */
  reload(): Promise<CommandOutcome[]> {
    this.publish();
    return this.#supervisor.reload();
  }

  /** The DNS server's counters, summed over the workers (their last reports). */
  stats(): DnsStats {
    let sum: NumberTree = {};
    for (const s of this.#stats.values()) sum = sumTrees(sum, s);
    return sum as unknown as DnsStats;
  }

  /**
   * The most recent decisions of every worker (each keeps its own ring of 256), merged in time
   * order, the last 256; a worker that does not answer is left out.
   */
  async recentDecisions(): Promise<Decision[]> {
    const out: Decision[] = [];
    for (const o of await this.#supervisor.fanOut({ type: 'command', command: 'decisions' })) {
      if (o.ok) out.push(...decodeDecisions(o.value));
    }
    return out.sort((a, b) => a.at - b.at).slice(-DECISIONS_KEPT);
  }

  /** Every worker's resolver probe cache (each worker probes the resolvers it answers). */
  async probeCache(): Promise<ProbeEntry[]> {
    const out: ProbeEntry[] = [];
    for (const o of await this.#supervisor.fanOut({ type: 'command', command: 'probes' })) {
      if (o.ok) out.push(...decodeProbes(o.value));
    }
    return out;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#timer?.cancel();
    this.#soon?.cancel();
    const out = await this.#supervisor.stop(this.#config.shutdownGraceMs);
    const failed = out.filter((o) => !o.ok);
    this.#c.logger.info(
      { drained: out.length - failed.length, ...(failed.length > 0 ? { failed } : {}) },
      'DNS workers drained',
    );
  }
}

function queriesOf(t: NumberTree | undefined): { udp: number; tcp: number } {
  const q = t?.queries;
  if (typeof q !== 'object') return { udp: 0, tcp: 0 };
  return {
    udp: typeof q.udp === 'number' ? q.udp : 0,
    tcp: typeof q.tcp === 'number' ? q.tcp : 0,
  };
}
