/**
 * Coral's sloppy put, in every level this node runs, most local first, each level continuing from
 * where the previous one stopped. Forward phase: walk toward the key with STORE_PROBE, stopping at
 * the closest node or the first one both full and loaded. Reverse phase: STORE at the closest
 * visited node that can accept, the next one out when it refuses. A cluster level where the key is
 * already loaded is skipped: it holds plenty of copies.
 */
import {
  MAX_TTL_SECONDS,
  MAX_VALUE_BYTES,
  PUT_REVERSE_TRIES,
  PUT_SHORTCUT_MS,
  SHORTCUT_ENTRIES,
} from '../constants.js';
import type { Contact } from '../contact.js';
import type { NodeContext } from '../context.js';
import { AbortedError, InvalidArgumentError, PutRejectedError, throwIfAborted } from '../errors.js';
import { compareDistance, idEquals, toHex, type Id } from '../id/id.js';
import type { PutResult } from '../types.js';
import { StoreStatus } from '../wire/messages.js';
import { levelWalk } from './find-node.js';
import { Shortcuts } from './shortcuts.js';
import { lookup, type LookupEvent, type QueryOutcome, type Visit } from './lookup.js';

/** What one STORE_PROBE answer told the forward phase. */
export interface PutProbe {
  full: boolean;
  loaded: boolean;
}

export interface PutOptions {
  signal?: AbortSignal;
  /** The most local level to start from. Default: the node's most local level. */
  level?: number;
}

/** Where a walk stored a key, reused by this node's next put of it until `expiresAt`. */
interface Placement {
  /** The most local level the walk started from (a put asking another starts afresh). */
  top: number;
  result: PutResult;
  expiresAt: number;
  /**
   * Per entry of `result.stored`: the node nearest the key that this node knew in that level when
   * the walk ended, itself included. A table that knows a nearer one now has met a node that
   * joined nearer the key: the placement is stale.
   */
  nearest: Id[];
}

/**
 * This node's puts. A put walks (`sloppyPut`); a put of the same key soon after — a publisher
 * refreshing its value, as a proxy re-announces what it caches — stores it again where that walk
 * placed it, one STORE per level, like the i3 shortcut of gets: the holders still hold this node's
 * value and replace it (a publisher present may always replace its own value, full or not), and a
 * holder that is loaded, gone or refusing sends the put on a walk again. A placement is reused for
 * PUT_SHORTCUT_MS at most (and half the value's TTL), and only while this node knows no node nearer
 * the key than it knew when the walk ended: a node that joins nearer the key (the first node of a
 * fleet put its values while alone, in its own store) sends the next put on a walk that finds it,
 * as Kademlia hands a value to a newly met node closer to its key. Without that the value stays
 * where the lone walk left it, away from the nodes every other node's get asks.
 */
/** A put's value and TTL as the public API takes them; InvalidArgumentError otherwise. */
export function checkPut(value: unknown, ttlSeconds: number): void {
  if (!(value instanceof Uint8Array) || value.length > MAX_VALUE_BYTES) {
    throw new InvalidArgumentError(
      `value must be a Uint8Array of at most ${MAX_VALUE_BYTES} bytes`,
    );
  }
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_TTL_SECONDS) {
    throw new InvalidArgumentError(`ttlSeconds must be an integer in [1, ${MAX_TTL_SECONDS}]`);
  }
}

export class Putter {
  readonly #ctx: NodeContext;
  readonly #placed = new Shortcuts<Placement>(SHORTCUT_ENTRIES);

  constructor(ctx: NodeContext) {
    this.#ctx = ctx;
  }

  async put(
    key: Uint8Array,
    value: Uint8Array,
    ttlSeconds: number,
    opts: PutOptions = {},
  ): Promise<PutResult> {
    const ctx = this.#ctx;
    const hex = toHex(key);
    const top = topLevel(ctx, opts);
    const placed = this.#placed.get(hex);
    if (placed) {
      this.#placed.delete(hex);
      if (
        placed.expiresAt > ctx.clock.now() &&
        placed.top === top &&
        !this.#nearerKnown(placed, key)
      ) {
        const again = await this.#storeAgain(placed, key, value, ttlSeconds, opts.signal);
        if (again) {
          this.#placed.set(hex, placed);
          return again;
        }
      }
    }
    const result = await sloppyPut(ctx, key, value, ttlSeconds, opts);
    const forMs = Math.min(ctx.options.putShortcutMs ?? PUT_SHORTCUT_MS, (ttlSeconds * 1000) / 2);
    if (forMs > 0) {
      const nearest = result.stored.map(({ level }) => this.#nearestKnown(level, key));
      this.#placed.set(hex, { top, result, expiresAt: ctx.clock.now() + forMs, nearest });
    }
    return result;
  }

  /** The node nearest `key` in the table of `level`, or this node when it is nearer (or alone). */
  #nearestKnown(level: number, key: Id): Id {
    const self = this.#ctx.id;
    const known = this.#ctx.table(level).closest(key, 1)[0];
    return known && compareDistance(known.id, self, key) < 0 ? known.id : self;
  }

  /** Does a table of the placement's levels know a node nearer the key than when it was made? */
  #nearerKnown(placed: Placement, key: Id): boolean {
    return placed.result.stored.some(
      ({ level }, i) =>
        compareDistance(this.#nearestKnown(level, key), placed.nearest[i]!, key) < 0,
    );
  }

  /**
   * Forget every placement of `level` (a rebuilt level's table: after a cluster change the holders
   * of the old cluster are not this node's cluster's any more), so the next puts walk.
   */
  forgetLevel(level: number): void {
    this.#placed.deleteWhere((p) => p.result.stored.some((s) => s.level === level));
  }

  /** Forget expired placements (the maintenance sweep). */
  sweep(now: number): void {
    this.#placed.sweep(now);
  }

  /** STORE at every holder of the placement; undefined unless all of them accepted. */
  async #storeAgain(
    placed: Placement,
    key: Uint8Array,
    value: Uint8Array,
    ttl: number,
    signal: AbortSignal | undefined,
  ): Promise<PutResult | undefined> {
    const ctx = this.#ctx;
    const start = ctx.clock.now();
    const { stored } = placed.result;
    let messages = 0;
    const accepted = await Promise.all(
      stored.map(async ({ level, contact }) => {
        if (idEquals(contact.id, ctx.id))
          return ctx.store.store(level, key, ctx.id, value, ttl) === StoreStatus.ACCEPTED;
        messages++;
        try {
          const r = await ctx.query(contact, { type: 'STORE', level, key, value, ttl }, signal);
          return r.body.type === 'STORE_RESULT' && r.body.status === StoreStatus.ACCEPTED;
        } catch (err) {
          if (err instanceof AbortedError) throw err;
          return false;
        }
      }),
    );
    if (!accepted.every(Boolean)) return undefined;
    const latencyMs = ctx.clock.now() - start;
    const hops = messages > 0 ? 1 : 0;
    ctx.metrics?.lookup('put', hops, latencyMs);
    const last = stored[stored.length - 1]!;
    return {
      stored: stored.map((s) => ({ ...s })),
      skippedLevels: [...placed.result.skippedLevels],
      stats: { hops, messages, level: last.level, answeredBy: last.contact, latencyMs },
    };
  }
}

/** The most local level a put starts from: `opts.level`, or the node's most local. */
function topLevel(ctx: NodeContext, opts: PutOptions): number {
  return Math.min(ctx.levels - 1, opts.level ?? ctx.levels - 1);
}

/** Put `value` under `key` (arguments already checked); rejects with PutRejectedError if no node took it. */
export async function sloppyPut(
  ctx: NodeContext,
  key: Uint8Array,
  value: Uint8Array,
  ttlSeconds: number,
  opts: PutOptions = {},
): Promise<PutResult> {
  throwIfAborted(opts.signal);
  const start = ctx.clock.now();
  const top = topLevel(ctx, opts);
  const stored: PutResult['stored'] = [];
  const skipped: number[] = [];
  let messages = 0;
  let hops = 0;
  let lastLevel = 0;
  let continueFrom: Contact | undefined;
  for (let level = top; level >= 0; level--) {
    lastLevel = level;
    let finished: Extract<LookupEvent<PutProbe>, { type: 'FINISHED' }> | undefined;
    for await (const e of lookup<PutProbe>({
      ...levelWalk(ctx, key, level, continueFrom, opts.signal),
      query: async (c, signal): Promise<QueryOutcome<PutProbe>> => {
        const r = await ctx.query(c, { type: 'STORE_PROBE', level, key, ttl: ttlSeconds }, signal);
        if (r.body.type !== 'PROBE_RESULT')
          return { contacts: [], result: { full: true, loaded: true } };
        const { full, loaded, contacts } = r.body;
        return { contacts, stop: full && loaded, result: { full, loaded } };
      },
    })) {
      if (e.type === 'FINISHED') finished = e;
    }
    if (!finished) continue;
    messages += finished.messages;
    continueFrom = finished.visited[0]?.contact;
    // A cluster level where the key is already loaded (the walk met a full-and-loaded node) is
    // skipped: it holds plenty of copies; the put goes on in the next larger level.
    if (level > 0 && finished.stoppedAt?.result.loaded && finished.stoppedAt.result.full) {
      skipped.push(level);
      continue;
    }
    const placed = await reversePhase(
      ctx,
      key,
      value,
      ttlSeconds,
      level,
      finished.visited,
      opts.signal,
    );
    messages += placed.messages;
    if (placed.at) {
      stored.push({ level, contact: placed.at.contact, hop: placed.at.hop });
      hops = Math.max(hops, placed.at.hop);
    }
  }
  const latencyMs = ctx.clock.now() - start;
  ctx.metrics?.lookup('put', hops, latencyMs);
  if (stored.length === 0) throw new PutRejectedError('no node accepted the value');
  return {
    stored,
    skippedLevels: skipped,
    stats: {
      hops,
      messages,
      level: lastLevel,
      answeredBy: stored[stored.length - 1]?.contact,
      latencyMs,
    },
  };
}

/** Try the visited nodes closest first (this node included, at its distance) until one accepts. */
async function reversePhase(
  ctx: NodeContext,
  key: Id,
  value: Uint8Array,
  ttl: number,
  level: number,
  visited: Visit<PutProbe>[],
  signal: AbortSignal | undefined,
): Promise<{ at?: Visit<PutProbe>; messages: number }> {
  const selfId = ctx.id;
  const self: Visit<PutProbe> = {
    contact: ctx.plainContact,
    hop: 0,
    result: ctx.store.probe(level, key, ttl, selfId),
  };
  const order = [...visited];
  const i = order.findIndex((v) => compareDistance(selfId, v.contact.id, key) < 0);
  order.splice(i < 0 ? order.length : i, 0, self);
  let messages = 0;
  let tries = 0;
  const maxTries = ctx.options.putReverseTries ?? PUT_REVERSE_TRIES;
  for (const v of order) {
    if (tries >= maxTries) break;
    if (v.result.full || v.result.loaded) continue;
    tries++;
    if (v === self) {
      if (ctx.store.store(level, key, selfId, value, ttl) === StoreStatus.ACCEPTED)
        return { at: v, messages };
      continue;
    }
    messages++;
    try {
      const r = await ctx.query(v.contact, { type: 'STORE', level, key, value, ttl }, signal);
      if (r.body.type === 'STORE_RESULT' && r.body.status === StoreStatus.ACCEPTED)
        return { at: v, messages };
    } catch (err) {
      if (err instanceof AbortedError) throw err;
    }
  }
  return { messages };
}
