/**
 * A running node's periodic work, each task on its own timer of the injected clock: expire values
 * and i3 shortcuts, refresh buckets nobody looked up for a while, judge isolation (keyed mode),
 * republish locality hints (when enabled) and write dirty state to the database (when there is
 * one). A task that throws is logged and runs again at its next tick; nothing runs once the node
 * stops.
 */
import type { TimerHandle } from '@coral/testkit';
import {
  EXPIRY_SWEEP_MS,
  HINT_REFRESH_MS,
  ISOLATION_CHECK_MS,
  PERSIST_INTERVAL_MS,
  REFRESH_CHECK_MS,
} from '../constants.js';
import type { NodeContext } from '../context.js';
import { publishHints } from '../directory/hint-walks.js';
import { randomIdInBucket } from '../id/id.js';
import { findNode } from '../lookup/find-node.js';

export interface MaintenanceJobs {
  /** Forget what expired besides the store's values (the i3 shortcuts). */
  sweep(now: number): void;
  /** Keyed mode: re-judge isolation. */
  checkIsolation?(): void;
  /** With a database: write what changed. */
  persist?(): void;
}

export class Maintenance {
  readonly #ctx: NodeContext;
  readonly #jobs: MaintenanceJobs;
  #timers: TimerHandle[] = [];

  constructor(ctx: NodeContext, jobs: MaintenanceJobs) {
    this.#ctx = ctx;
    this.#jobs = jobs;
  }

  start(): void {
    const ctx = this.#ctx;
    const jobs = this.#jobs;
    this.#every(EXPIRY_SWEEP_MS, () => {
      ctx.store.sweep();
      jobs.sweep(ctx.clock.now());
      this.#timers = this.#timers.slice(-8);
    });
    this.#every(REFRESH_CHECK_MS, () => this.refreshStale());
    if (jobs.checkIsolation) this.#every(ISOLATION_CHECK_MS, () => jobs.checkIsolation?.());
    if (ctx.options.hints) {
      this.#every(HINT_REFRESH_MS, () => void publishHints(ctx).catch(() => undefined));
    }
    if (jobs.persist) {
      this.#every(ctx.options.persistIntervalMs ?? PERSIST_INTERVAL_MS, () => jobs.persist?.());
    }
  }

  stop(): void {
    for (const t of this.#timers) t.cancel();
    this.#timers = [];
  }

  /** Look up a random id in every bucket that has seen no lookup for BUCKET_REFRESH_MS. */
  refreshStale(): void {
    const ctx = this.#ctx;
    for (const table of ctx.tables()) {
      for (const b of table.staleBuckets()) {
        table.touchBucket(b);
        void findNode(ctx, randomIdInBucket(ctx.id, b, ctx.random), { level: table.level }).catch(
          () => undefined,
        );
      }
    }
  }

  #every(ms: number, fn: () => void): void {
    const ctx = this.#ctx;
    const tick = (): void => {
      if (!ctx.running) return;
      try {
        fn();
      } catch (err) {
        ctx.logger.warn({ err }, 'periodic task failed');
      }
      this.#timers.push(ctx.clock.setTimeout(tick, ms));
    };
    this.#timers.push(ctx.clock.setTimeout(tick, ms));
  }
}
