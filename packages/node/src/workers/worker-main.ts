/**
 * The entry of one worker thread of a node (`workers: N`, N ≥ 2): the DNS server on the node's DNS
 * port with `reusePort`, answering from a replica of the owner's directory (the owner pushes each
 * change), its hint walks asked of the owner, its ACME TXT values the owner's, its counters
 * reported to the owner once a second. Started by the owner (workers/dns-workers.ts) with the
 * `workerData` of protocol.ts; anything else is a protocol error and the thread exits.
 *
 * It logs through pino to its own stdout, which Node.js forwards to the main thread's, with a
 * `worker` field on every line.
 */
import { parentPort, workerData } from 'node:worker_threads';
import {
  DnsServer,
  ReplicaNodeDirectory,
  type ChallengeStore,
  type DnsMetrics,
} from '@coral/dnssrv';
import { systemClock } from '@coral/runtime';
import type { CoralConfig } from '../config/schema.js';
import { dnsServerOptions } from '../compose/dns-options.js';
import { WorkerError } from '../errors.js';
import { componentLogger, createLogger } from '../logging/logger.js';
import { WorkerChannel } from './channel.js';
import { decodeHintResult, decodeWorkerData, type ChallengeEntry } from './protocol.js';

/** How often a worker reports its counters to the owner. */
export const REPORT_INTERVAL_MS = 1_000;

/**
 * The owner's ACME TXT values, as last pushed. Expiry is the owner's (on its clock): it pushes the
 * list again when a value expires, as when one is set or removed.
 */
class ReplicaChallenges implements ChallengeStore {
  #entries: ChallengeEntry[] = [];
  set(entries: ChallengeEntry[]): void {
    this.#entries = entries;
  }
  txt(zone: string): readonly string[] {
    return this.#entries.filter((e) => e.zone === zone).map((e) => e.value);
  }
}

/** DNS answers counted here and reported to the owner, which owns /metrics. */
class ReportedDnsMetrics implements DnsMetrics {
  readonly answers = new Map<string, number>();
  rateLimitedCount = 0;
  answer(method: string, rcode: string | number): void {
    const key = `${method.slice(0, 64)}\0${String(rcode).slice(0, 64)}`;
    this.answers.set(key, (this.answers.get(key) ?? 0) + 1);
  }
  rateLimited(): void {
    this.rateLimitedCount++;
  }
  /** What was counted since the last call, as the report's fields; then zero. */
  take(): { answers: [string, string, number][]; rateLimited: number } {
    const answers = [...this.answers].map(([k, n]): [string, string, number] => {
      const [method, rcode] = k.split('\0') as [string, string];
      return [method, rcode, n];
    });
    const rateLimited = this.rateLimitedCount;
    this.answers.clear();
    this.rateLimitedCount = 0;
    return { answers, rateLimited };
  }
}

async function main(): Promise<void> {
  if (!parentPort) throw new WorkerError('CORAL_ERR_WORKER_START', 'not a worker thread');
  const data = decodeWorkerData(workerData);
  const config = data.config as unknown as CoralConfig;
  const root = createLogger({ level: config.log.level, base: { worker: data.index } });
  const logger = componentLogger(root, 'worker');
  const port = parentPort;
  const channel = new WorkerChannel({ port, clock: systemClock, logger });

  const directory = new ReplicaNodeDirectory(
    {
      hinted: async (target, count) =>
        decodeHintResult(
          await channel.request({
            op: 'hinted',
            target: target.subnet ? { ip: target.ip, subnet: target.subnet } : { ip: target.ip },
            count: Math.max(1, Math.min(count, 1024)),
          }),
        ),
    },
    data.snapshot,
  );
  const challenges = new ReplicaChallenges();
  challenges.set(data.challenges);
  const metrics = new ReportedDnsMetrics();
  const workers = Math.max(1, config.workers);
  const options = dnsServerOptions(config);
  // One client's flows can land on any worker: each worker takes its share of the node's rate.
  const rate = config.dns.rateLimitPerSecond;
  options.rrl = { responsesPerSecond: rate > 0 ? Math.max(1, Math.ceil(rate / workers)) : 0 };
  const dns = new DnsServer({ directory, challenges, metrics, logger: root }, options);

  let lastStats = '';
  let timer: NodeJS.Timeout | undefined;
  const report = (): void => {
    const taken = metrics.take();
    const stats = dns.stats() as unknown as Record<string, unknown>;
    const text = JSON.stringify(stats);
    if (taken.answers.length === 0 && taken.rateLimited === 0 && text === lastStats) return;
    lastStats = text;
    channel.send({ type: 'report', ...taken, stats: stats as never });
  };
  const tick = (): void => {
    report();
    timer = setTimeout(tick, REPORT_INTERVAL_MS);
    timer.unref();
  };

  channel.handle({
    directory: (_seq, snapshot) => directory.update(snapshot),
    challenges: (entries) => challenges.set(entries),
    command: async (c) => {
      switch (c.command) {
        case 'stats':
          return dns.stats();
        case 'decisions':
          return dns.recentDecisions();
        case 'probes':
          return dns.probeCache();
        case 'reload':
          // The DNS server has nothing of its own to re-read: the configuration, the keys and the
          // lists are the owner's, whose new directory and challenges arrive as messages.
          return { reloaded: [] };
        case 'drain': {
          if (timer) clearTimeout(timer);
          await dns.close();
          report();
          logger.info({}, 'worker drained');
          // Answer first, then let the thread end: the port stops holding it after this turn.
          setImmediate(() => channel.close());
          return dns.stats();
        }
      }
    },
  });

  if (!data.dns) throw new WorkerError('CORAL_ERR_WORKER_START', 'no DNS address to listen on');
  const listening = await dns.listen({ port: data.dns.port, host: data.dns.host, reusePort: true });
  tick();
  channel.send({ type: 'ready', dns: listening });
}

// An error here ends the thread: the owner sees its exit (and the error) and restarts it.
await main();
