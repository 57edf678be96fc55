/**
 * A running node's periodic work, each task on its own timer of the injected clock: expire values
 * and i3 shortcuts, refresh buckets nobody looked up for a while, meet the members of a small
 * fleet (member discovery), judge isolation (keyed mode, only while datagrams under unknown key
 * ids come in),
 * republish locality hints (when enabled) and write dirty state to the database (when there is
 * one). A task that throws is logged and runs again at its next tick; nothing runs once the node
 * stops.
 */
import type { TimerHandle } from '@coral/runtime';
import {
  DISCOVERY_PINGS,
  EXPIRY_SWEEP_MS,
  ID_BYTES,
  HINT_REFRESH_MS,
  ISOLATION_CHECK_MS,
  PERSIST_INTERVAL_MS,
  REFRESH_CHECK_MS,
} from '../constants.js';
import type { Contact } from '../contact.js';
import type { NodeContext } from '../context.js';
import { publishHints } from '../directory/hint-walks.js';
import { idEquals, randomIdInBucket, toHex } from '../id/id.js';
import { findNode } from '../lookup/find-node.js';

export interface MaintenanceJobs {
  /** Forget what expired besides the store's values (the i3 shortcuts). */
  sweep(now: number): void;
  /**
   * Keyed mode: re-judge isolation; true while there is still something to judge (datagrams under
   * key ids this node lacks, lately, and no authenticated one since), so the check runs again.
   */
  checkIsolation?: () => boolean;
  /** With a database: write what changed. */
  persist?(): void;
  /**
   * Member discovery (`DshtOptions.discovery`): the number of verified live members now; while it
   * is below `below`, a lookup of a random id every `intervalMs` makes round trips with members
   * the node has not met (see `discover`).
   */
  discovery?: {
    intervalMs: number;
    below: number;
    /** The verified live members' contacts. */
    members(): Contact[];
    /** Is this id (hex) a verified member already? */
    isMember: (hex: string) => boolean;
  };
}

export class Maintenance {
  readonly #ctx: NodeContext;
  readonly #jobs: MaintenanceJobs;
  #timers: TimerHandle[] = [];
  /** The pending isolation check (armed by `wakeIsolationCheck`), if any. */
  #isolationTimer: TimerHandle | undefined;

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
    if (ctx.options.hints) {
      this.#every(HINT_REFRESH_MS, () => void publishHints(ctx).catch(() => undefined));
    }
    const d = jobs.discovery;
    if (d) {
      this.#every(d.intervalMs, () => {
        const members = d.members();
        if (members.length < d.below) void this.discover(members, d.isMember);
      });
    }
    if (jobs.persist) {
      this.#every(ctx.options.persistIntervalMs ?? PERSIST_INTERVAL_MS, () => jobs.persist?.());
    }
  }

  stop(): void {
    for (const t of this.#timers) t.cancel();
    this.#timers = [];
    this.#isolationTimer?.cancel();
    this.#isolationTimer = undefined;
  }

  /**
   * Keyed mode: judge isolation every ISOLATION_CHECK_MS from now while `checkIsolation` says there
   * is something to judge (the authenticator calls this on a datagram under an unknown key id).
   * A node hearing only its fleet's keys — every node, nearly always — runs no isolation timer.
   */
  wakeIsolationCheck(): void {
    const ctx = this.#ctx;
    const check = this.#jobs.checkIsolation;
    if (this.#isolationTimer || !check || !ctx.running) return;
    const tick = (): void => {
      this.#isolationTimer = undefined;
      if (!ctx.running) return;
      let again = false;
      try {
        again = check();
      } catch (err) {
        ctx.logger.warn({ err }, 'periodic task failed');
      }
      if (again) this.#isolationTimer = ctx.clock.setTimeout(tick, ISOLATION_CHECK_MS);
    };
    this.#isolationTimer = ctx.clock.setTimeout(tick, ISOLATION_CHECK_MS);
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

  /**
   * Meet members this node has not: ask a random member for the contacts nearest a random id (one
   * FIND_NODE), and ping each it names that is not a member here yet (at most DISCOVERY_PINGS):
   * the ping's round trip (authenticated, in keyed mode) makes it one. With no member yet, a
   * lookup of a random id. In a fleet smaller than the bound every node soon knows every other,
   * so all of them choose a URL's designated fetcher from the same membership (bucket refresh
   * alone left nodes of a 20-node fleet knowing 16 of the others minutes after the start).
   */
  async discover(members: Contact[], isMember: (hex: string) => boolean): Promise<void> {
    const ctx = this.#ctx;
    // A uniform id: the answer comes from anywhere in the id space, not only near this node.
    const target = ctx.random.bytes(new Uint8Array(ID_BYTES));
    // A member that does not answer is failure detection's business; here it only ends the round.
    const missed = (err: unknown) => {
      ctx.logger.debug({ err: String(err) }, 'member discovery: no answer');
      return undefined;
    };
    if (members.length === 0) {
      await findNode(ctx, target, { level: 0, count: ctx.table(0).k }).catch(missed);
      return;
    }
    const via = members[ctx.random.int(members.length)]!;
    const r = await ctx.query(via, { type: 'FIND_NODE', level: 0, target }).catch(missed);
    if (r?.body.type !== 'NODES') return;
    let pings = 0;
    for (const c of r.body.contacts) {
      if (pings >= DISCOVERY_PINGS || !ctx.running) break;
      if (idEquals(c.id, ctx.id) || isMember(toHex(c.id))) continue;
      pings++;
      void ctx.query(c, { type: 'PING' }).catch(missed);
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
