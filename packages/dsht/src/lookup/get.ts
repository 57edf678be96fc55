/**
 * Coral's get: the local store, then the i3 shortcut (ask the node that answered this key last
 * time), then the walk toward the key level by level, most local first, stopping at the first node
 * holding values. A hit found far down the path leaves a copy at the last node that lacked it, so
 * gets for hot keys spread out too.
 */
import {
  GET_MAX_VALUES,
  PATH_CACHE_MIN_HOPS,
  SHORTCUT_ENTRIES,
  SHORTCUT_TTL_MS,
} from '../constants.js';
import type { Contact } from '../contact.js';
import type { NodeContext } from '../context.js';
import { AbortedError } from '../errors.js';
import { compareDistance, toHex, type Id } from '../id/id.js';
import { toWireValue } from '../store/value-store.js';
import type { GetResult, LookupStats } from '../types.js';
import type { WireValue } from '../wire/messages.js';
import { levelWalk } from './find-node.js';
import { lookup, type LookupEvent, type QueryOutcome, type Visit } from './lookup.js';
import { Shortcuts } from './shortcuts.js';

/** What one GET answer gave a walk. */
export interface GetProbe {
  values: WireValue[];
}

export interface GetOptions {
  signal?: AbortSignal;
  maxValues?: number;
}

type Finished = Extract<LookupEvent<GetProbe>, { type: 'FINISHED' }>;

export class Getter {
  readonly #ctx: NodeContext;
  /** i3 shortcuts: key (hex) → the node that answered it, in insertion order (oldest first). */
  readonly #shortcuts = new Shortcuts<{ contact: Contact; level: number; expiresAt: number }>(
    SHORTCUT_ENTRIES,
  );

  constructor(ctx: NodeContext) {
    this.#ctx = ctx;
  }

  /** Find values for `key`: the local store, then the i3 shortcut, then the walk, level by level. */
  async get(key: Uint8Array, opts: GetOptions = {}): Promise<GetResult> {
    const ctx = this.#ctx;
    const start = ctx.clock.now();
    const max = opts.maxValues ?? GET_MAX_VALUES;
    const done = (records: WireValue[], stats: Omit<LookupStats, 'latencyMs'>): GetResult => {
      const latencyMs = ctx.clock.now() - start;
      ctx.metrics?.lookup('get', stats.hops, latencyMs);
      return { values: records.map((r) => r.value), records, stats: { ...stats, latencyMs } };
    };
    // 1. Local values, most local level first.
    for (let level = ctx.levels - 1; level >= 0; level--) {
      const local = ctx.store.get(level, key, max);
      if (local.length > 0) {
        const now = ctx.clock.now();
        const records = local.map((v) => toWireValue(v, now));
        return done(records, { hops: 0, messages: 0, level, answeredBy: ctx.contact });
      }
    }
    // 2. The i3 shortcut: ask the node that answered last time.
    const hex = toHex(key);
    const sc = this.#shortcuts.get(hex);
    let messages = 0;
    if (sc && sc.expiresAt > ctx.clock.now()) {
      messages++;
      try {
        const r = await ctx.query(
          sc.contact,
          { type: 'GET', level: sc.level, key, max },
          opts.signal,
        );
        if (r.body.type === 'VALUES' && r.body.values.length > 0) {
          return done(r.body.values, {
            hops: 1,
            messages,
            level: sc.level,
            answeredBy: sc.contact,
          });
        }
      } catch (err) {
        if (err instanceof AbortedError) throw err;
      }
      this.#shortcuts.delete(hex);
    } else if (sc) this.#shortcuts.delete(hex);
    // 3. The walk.
    let last: Finished | undefined;
    for await (const e of this.events(key, opts)) {
      if (e.type === 'FINISHED') {
        messages += e.messages;
        last = e;
      }
    }
    const hit = last?.stoppedAt;
    if (!last || !hit) return done([], { hops: 0, messages, level: 0 });
    this.#remember(hex, hit.contact, last.level);
    this.#pathCache(key, last.level, hit, last.visited);
    return done(hit.result.values, {
      hops: hit.hop,
      messages,
      level: last.level,
      answeredBy: hit.contact,
    });
  }

  /**
   * The get walk as a stream of events, level by level (most local first), each level continuing
   * from the closest node the previous one reached. Ends after the first level that returns values.
   */
  async *events(
    key: Uint8Array,
    opts: GetOptions = {},
  ): AsyncGenerator<LookupEvent<GetProbe>, void, undefined> {
    const ctx = this.#ctx;
    const max = opts.maxValues ?? GET_MAX_VALUES;
    let continueFrom: Contact | undefined;
    for (let level = ctx.levels - 1; level >= 0; level--) {
      let finished: Finished | undefined;
      for await (const e of lookup<GetProbe>({
        ...levelWalk(ctx, key, level, continueFrom, opts.signal),
        query: async (c, signal): Promise<QueryOutcome<GetProbe>> => {
          const r = await ctx.query(c, { type: 'GET', level, key, max }, signal);
          if (r.body.type !== 'VALUES') return { contacts: [], result: { values: [] } };
          return {
            contacts: r.body.contacts,
            stop: r.body.values.length > 0,
            result: { values: r.body.values },
          };
        },
      })) {
        yield e;
        if (e.type === 'FINISHED') finished = e;
      }
      if (finished?.stoppedAt) return;
      continueFrom = finished?.visited[0]?.contact;
    }
  }

  /** Forget expired shortcuts (the maintenance sweep). */
  sweep(now: number): void {
    this.#shortcuts.sweep(now);
  }

  #remember(hex: string, contact: Contact, level: number): void {
    const ttl = this.#ctx.options.shortcutTtlMs ?? SHORTCUT_TTL_MS;
    if (ttl <= 0) return;
    this.#shortcuts.set(hex, { contact, level, expiresAt: this.#ctx.clock.now() + ttl });
  }

  /** Copy the found values to the node that pointed the walk at the holder (the last one lacking them). */
  #pathCache(key: Id, level: number, hit: Visit<GetProbe>, visited: Visit<GetProbe>[]): void {
    const min = this.#ctx.options.pathCacheMinHops ?? PATH_CACHE_MIN_HOPS;
    if (min <= 0 || hit.hop < min) return;
    let lacking: Visit<GetProbe> | undefined;
    for (const v of visited) {
      if (v.result.values.length > 0) continue;
      if (compareDistance(v.contact.id, hit.contact.id, key) < 0) continue;
      if (!lacking || compareDistance(v.contact.id, lacking.contact.id, key) < 0) lacking = v;
    }
    if (!lacking) return;
    const target = lacking.contact;
    for (const rec of hit.result.values.slice(0, 2)) {
      // A copy, marked as one: the receiver keeps it apart and it never replaces the original.
      void this.#ctx
        .query(target, {
          type: 'STORE',
          level,
          key,
          value: rec.value,
          ttl: rec.ttl,
          copyOf: rec.publisher,
        })
        .catch(() => undefined);
    }
  }
}
