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
  MEMBER_DISCOVERY_BELOW,
  MEMBER_DISCOVERY_MS,
  PERSIST_INTERVAL_MS,
  REFRESH_CHECK_MS,
} from '../constants.js';
import type { Contact } from '../contact.js';
import type { NodeContext } from '../context.js';
import { publishHints } from '../directory/hint-walks.js';
import { idEquals, randomIdInBucket, toHex } from '../id/id.js';
import { findNode } from '../lookup/find-node.js';

export interface MaintenanceComponents {
  /** Forget what expired besides the store's values (the i3 shortcuts of the get and the put). */
  sweep(now: number): void;
}

export class Maintenance {
  readonly #ctx: NodeContext;
  readonly #sweep: (now: number) => void;
  #timers: TimerHandle[] = [];
  /** The pending isolation check (armed by `wakeIsolationCheck`), if any. */
  #isolationTimer: TimerHandle | undefined;

  constructor(ctx: NodeContext, components: MaintenanceComponents) {
    this.#ctx = ctx;
    this.#sweep = (now) => components.sweep(now);
  }

  /**
   * Start the timers: expiry sweep, bucket refresh, hint refresh (`options.hints`), member
   * discovery (unless `options.discovery` is false: while fewer than `below` verified live members
   * are known, every `intervalMs`; see `discover`), and with a database the periodic write.
   */
  start(): void {
    const ctx = this.#ctx;
    this.#every(EXPIRY_SWEEP_MS, () => {
      ctx.store.sweep();
      this.#sweep(ctx.clock.now());
      this.#timers = this.#timers.slice(-8);
    });
    this.#every(REFRESH_CHECK_MS, () => this.refreshStale());
    if (ctx.options.hints) {
      this.#every(HINT_REFRESH_MS, () => void publishHints(ctx).catch(() => undefined));
    }
    const d = ctx.options.discovery;
    if (d !== false) {
      const below = d?.below ?? MEMBER_DISCOVERY_BELOW;
      const isMember = (hex: string): boolean => ctx.peers.member(hex) !== undefined;
      this.#every(d?.intervalMs ?? MEMBER_DISCOVERY_MS, () => {
        const members = ctx.peers.registry.liveContacts();
        if (members.length < below) void this.discover(members, isMember);
      });
    }
    const persistence = ctx.persistence;
    if (persistence) {
      this.#every(ctx.options.persistIntervalMs ?? PERSIST_INTERVAL_MS, () => {
        if (ctx.peers.contactsDirty) ctx.saveContacts();
        void persistence
          .flush()
          .catch((err: unknown) => ctx.logger.warn({ err }, 'persist failed'));
      });
    }
  }

  stop(): void {
    for (const t of this.#timers) t.cancel();
    this.#timers = [];
    this.#isolationTimer?.cancel();
    this.#isolationTimer = undefined;
  }

  /**
   * Keyed mode: judge isolation every ISOLATION_CHECK_MS from now while the authenticator is still
   * judging (datagrams under key ids this node lacks, lately, and no authenticated one since); the
   * authenticator calls this on a datagram under an unknown key id. A node hearing only its
   * fleet's keys — every node, nearly always — runs no isolation timer.
   */
  wakeIsolationCheck(): void {
    const ctx = this.#ctx;
    if (this.#isolationTimer || !ctx.keyring || !ctx.running) return;
    const check = (): boolean => {
      const auth = ctx.rpc.auth;
      auth.evaluate();
      return auth.judging;
    };
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
