/**
 * Locality hints on the network (the records are in hints.ts): a node publishes itself under its
 * /24, /16 and region keys at level 0, and looks those keys up at join to ping its neighbours
 * (RTT samples for clustering). A hint lookup collects values from several holders, since sloppy
 * storage spreads a popular key's values over the nodes near it.
 */
import { ALPHA, HINT_TTL_SECONDS } from '../constants.js';
import type { Contact } from '../contact.js';
import type { NodeContext } from '../context.js';
import { AbortedError } from '../errors.js';
import { idEquals, toHex, type Id } from '../id/id.js';
import { lookup, type QueryOutcome } from '../lookup/lookup.js';
import type { GetProbe } from '../lookup/get.js';
import { sloppyPut } from '../lookup/put.js';
import { decodeNodeRecord, encodeNodeRecord, hintKeysFor, type HintKey } from './hints.js';

/** The hint keys this node publishes under (/24, /16, region). */
export function hintKeys(ctx: NodeContext): HintKey[] {
  return hintKeysFor(ctx.contact);
}

/** Put this node's record under its hint keys (level 0). Failures are ignored; returns the successes. */
export async function publishHints(
  ctx: NodeContext,
  opts: { signal?: AbortSignal } = {},
): Promise<number> {
  const record = encodeNodeRecord(ctx.contact);
  let ok = 0;
  for (const h of hintKeys(ctx)) {
    try {
      await sloppyPut(ctx, h.key, record, HINT_TTL_SECONDS, { signal: opts.signal, level: 0 });
      ok++;
    } catch (err) {
      if (err instanceof AbortedError) throw err;
    }
  }
  return ok;
}

/** The nodes recorded under a hint key (level-0 get; invalid records dropped). */
export async function lookupHint(
  ctx: NodeContext,
  key: Id,
  opts: { signal?: AbortSignal } = {},
): Promise<Contact[]> {
  const r = await getAtLevel0(ctx, key, opts.signal);
  const out: Contact[] = [];
  for (const v of r) {
    const c = decodeNodeRecord(v);
    if (c && !out.some((o) => idEquals(o.id, c.id))) out.push(c);
  }
  return out;
}

/**
 * Join-time use of hints: ping the nodes under this node's hint keys (RTT samples for clustering),
 * then publish this node there.
 */
export async function useHints(
  ctx: NodeContext,
  ping: (c: Contact, opts: { signal?: AbortSignal; retries?: number }) => Promise<number>,
  signal?: AbortSignal,
): Promise<void> {
  const self = ctx.id;
  const seen = new Set<string>();
  const pings: Promise<unknown>[] = [];
  for (const h of hintKeys(ctx)) {
    const found = await lookupHint(ctx, h.key, { signal }).catch(() => [] as Contact[]);
    for (const c of found) {
      const hex = toHex(c.id);
      if (idEquals(c.id, self) || seen.has(hex) || seen.size >= 16) continue;
      seen.add(hex);
      pings.push(ping(c, { signal, retries: 0 }).catch(() => undefined));
    }
  }
  await Promise.all(pings);
  await publishHints(ctx, { signal });
}

/**
 * Collect values for a key at level 0 from several holders: the walk goes on past the first holder
 * until `want` are found.
 */
async function getAtLevel0(
  ctx: NodeContext,
  key: Id,
  signal?: AbortSignal,
  want = 16,
): Promise<Uint8Array[]> {
  const found = new Map<string, Uint8Array>();
  for (const v of ctx.store.get(0, key)) found.set(toHex(v.publisher), v.value);
  if (found.size >= want) return [...found.values()];
  const selfId = ctx.id;
  const table = ctx.table(0);
  for await (const e of lookup<GetProbe>({
    target: key,
    level: 0,
    selfId,
    seeds: table.closest(key, table.k),
    alpha: ctx.options.alpha ?? ALPHA,
    halving: false,
    termination: ALPHA * 2,
    signal,
    query: async (c, sig): Promise<QueryOutcome<GetProbe>> => {
      const r = await ctx.query(c, { type: 'GET', level: 0, key, max: 16 }, sig);
      if (r.body.type !== 'VALUES') return { contacts: [], result: { values: [] } };
      for (const v of r.body.values) found.set(toHex(v.publisher), v.value);
      // A holder answers with values only, so ask the table for the way on.
      const more = r.body.values.length > 0 ? ctx.table(0).closest(key, 8) : r.body.contacts;
      return { contacts: more, stop: found.size >= want, result: { values: r.body.values } };
    },
  })) {
    void e;
  }
  return [...found.values()];
}
