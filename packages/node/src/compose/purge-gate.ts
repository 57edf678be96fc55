/**
 * The purge gate at start (docs/node.md "Purge"): purges taken while a node was away are applied
 * before it serves or counts as ready. A gated node that joined its fleet waits up to
 * {@link PURGE_STARTUP_MEMBERS_WAIT_MS} for a verified member and pulls the purge log from it
 * before its proxy listens; one that has not joined yet catches up when it joins, and the periodic
 * catch-up keeps trying. /readyz waits for the catch-up up to {@link PURGE_STARTUP_SYNC_MAX_MS}.
 */
import type { Clock } from '@coral/runtime';
import type { Logger } from 'pino';
import type { FleetPurge } from '../purge/fleet-purge.js';
import type { DshtPort } from './ports.js';

/** A joined node waits this long for verified members to pull the purge log from... */
export const PURGE_STARTUP_MEMBERS_WAIT_MS = 5_000;
/** ...and /readyz waits this long for a catch-up that reached a member before it gives up. */
export const PURGE_STARTUP_SYNC_MAX_MS = 30_000;

export interface PurgeGateComponents {
  purges: FleetPurge;
  /** The node's join state (compose/join.ts). */
  join: { readonly joined: boolean; readonly hasOtherMembers: boolean; readonly seed: boolean };
  /** Woken by its contact and round-trip events. */
  dsht: Pick<DshtPort, 'on' | 'off'>;
  /** Verified live members other than this node. */
  otherMembers: () => number;
  stopping: () => boolean;
  clock: Clock;
  logger: Logger;
}

export class PurgeGate {
  readonly #c: PurgeGateComponents;
  #waitOver = false;
  /** The readiness check passed once (it is not taken back). */
  #ready = false;
  #waitTimer: { cancel(): void } | undefined;
  #wake: (() => void) | undefined;

  constructor(components: PurgeGateComponents) {
    this.#c = components;
  }

  /**
   * Whether purges taken while this node was away must be applied before it counts as ready: in
   * keyed mode, for a node that joins a fleet through its bootstrap list (a seed, or a node with
   * no list, is ready on its own and catches up when it meets members).
   */
  get gated(): boolean {
    const { purges, join } = this.#c;
    // A node that took part in a fleet's catch-up before (its log has cursors: a restarted seed
    // too) may have missed purges while it was down; a new node may hold a cache from before.
    return purges.propagating && (purges.log.hasCursors || (join.hasOtherMembers && !join.seed));
  }

  /** The start's catch-up, before the proxy listens (see the module comment). */
  async atStart(): Promise<void> {
    if (!this.gated) return;
    const { clock, logger, purges } = this.#c;
    this.#waitTimer = clock.setTimeout(() => {
      this.#waitOver = true;
      if (!purges.synced) {
        logger.warn(
          { component: 'purge', waitedMs: PURGE_STARTUP_SYNC_MAX_MS },
          'no member answered the purge catch-up: ready without it (it keeps trying)',
        );
      }
    }, PURGE_STARTUP_SYNC_MAX_MS);
    if (this.#c.join.joined) await this.catchUp();
  }

  /**
   * Wait (up to {@link PURGE_STARTUP_MEMBERS_WAIT_MS} on the node's clock) for a verified member,
   * then pull the purges this node has not seen.
   */
  async catchUp(): Promise<void> {
    await this.#waitForMembers(PURGE_STARTUP_MEMBERS_WAIT_MS);
    try {
      await this.#c.purges.sync();
    } catch (err) {
      this.#c.logger.warn({ err, component: 'purge' }, 'purge catch-up failed');
    }
  }

  /** Readiness: the catch-up is done, not needed, or waited for long enough. */
  ready(): boolean {
    this.#ready ||= !this.gated || this.#c.purges.synced || this.#waitOver;
    return this.#ready;
  }

  /** The node stops: no more waiting. */
  stop(): void {
    this.#waitTimer?.cancel();
    this.#wake?.();
  }

  #waitForMembers(ms: number): Promise<void> {
    const { dsht, clock, otherMembers, stopping } = this.#c;
    if (otherMembers() > 0 || stopping()) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const check = () => {
        if (otherMembers() > 0 || stopping()) done();
      };
      const timer = clock.setTimeout(() => done(), ms);
      const done = () => {
        timer.cancel();
        dsht.off('contact', check);
        dsht.off('rtt', check);
        if (this.#wake === done) this.#wake = undefined;
        resolve();
      };
      dsht.on('contact', check);
      dsht.on('rtt', check);
      this.#wake = done;
    });
  }
}
