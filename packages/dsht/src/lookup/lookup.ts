/**
 * Iterative lookup in one cluster level, as an async generator of typed events.
 *
 * Up to `alpha` queries are in flight. With `halving` (Coral's walk) the next node asked is the
 * *farthest* known node whose XOR distance to the target is at most half the best distance reached
 * so far, so each hop about halves what remains and different starting points approach the key
 * along different paths; when no such node is known the walk falls back to the closest unasked
 * node. The lookup ends when the query function says stop (values found, node full and loaded),
 * or when the `termination` closest live candidates have all answered.
 *
 * A failed peer is a QUERY_ERROR event, never an exception; only an abort throws.
 */
import type { Contact } from '../contact.js';
import { ALPHA } from '../constants.js';
import { AbortedError } from '../errors.js';
import { compareDistance, idEquals, logDistance, toHex, type Id } from '../id/id.js';

export interface QueryOutcome<R> {
  /** Contacts the peer offered as closer to the target. */
  contacts: Contact[];
  /** End the lookup here (e.g. values found). */
  stop?: boolean;
  result: R;
}

export interface Visit<R> {
  contact: Contact;
  /** Hops from the querier: a seed is hop 1. */
  hop: number;
  result: R;
}

export type LookupEvent<R> =
  | { type: 'SEND_QUERY'; level: number; to: Contact; hop: number }
  | {
      type: 'PEER_RESPONSE';
      level: number;
      from: Contact;
      hop: number;
      closer: Contact[];
      result: R;
    }
  | { type: 'QUERY_ERROR'; level: number; to: Contact; hop: number; error: Error }
  | {
      type: 'FINISHED';
      level: number;
      /** Peers that answered, closest to the target first. */
      visited: Visit<R>[];
      /** The answer that stopped the lookup, if one did. */
      stoppedAt?: Visit<R>;
      /** Queries sent. */
      messages: number;
      /** Unasked candidates left, closest first (where a next level's walk may go on). */
      remaining: Contact[];
    };

export interface LookupOptions<R> {
  target: Id;
  level: number;
  /** This node's id: excluded from candidates; its distance is where the halving walk starts. */
  selfId: Id;
  seeds: Contact[];
  query: (contact: Contact, signal: AbortSignal) => Promise<QueryOutcome<R>>;
  /** Parallel queries. Default ALPHA (3). */
  alpha?: number;
  /** The closest this-many live candidates must all have answered for the lookup to end. Default alpha. */
  termination?: number;
  /** Coral's halving walk (true) or plain Kademlia closest-first (false). Default true. */
  halving?: boolean;
  /** Candidates kept (closest first). Default 64. */
  maxCandidates?: number;
  /**
   * Where a walk continues from (the closest node a previous level reached): asked first, and the
   * halving starts from its distance instead of this node's.
   */
  startFrom?: Contact;
  /** Nodes already asked at this level (not asked again). */
  skip?: Set<string>;
  signal?: AbortSignal;
}

interface Candidate<R> {
  contact: Contact;
  hex: string;
  log: number;
  hop: number;
  state: 'new' | 'inflight' | 'done' | 'failed';
  result?: R;
}

export async function* lookup<R>(
  opts: LookupOptions<R>,
): AsyncGenerator<LookupEvent<R>, void, undefined> {
  const alpha = opts.alpha ?? ALPHA;
  const termination = opts.termination ?? alpha;
  const halving = opts.halving ?? true;
  const maxCandidates = opts.maxCandidates ?? 64;
  const { target, level, signal } = opts;
  if (signal?.aborted) throw new AbortedError();

  const inner = new AbortController();
  const onAbort = (): void => {
    inner.abort();
    wake?.();
  };
  signal?.addEventListener('abort', onAbort, { once: true });

  const cands: Candidate<R>[] = [];
  const byHex = new Map<string, Candidate<R>>();
  const queue: LookupEvent<R>[] = [];
  let wake: (() => void) | undefined;
  let inflight = 0;
  let messages = 0;
  let bestLog = logDistance(opts.selfId, target);
  let stoppedAt: Visit<R> | undefined;

  const add = (c: Contact, hop: number): void => {
    if (
      cands.length >= maxCandidates &&
      compareDistance(c.id, cands[cands.length - 1]!.contact.id, target) >= 0
    )
      return;
    const hex = toHex(c.id);
    if (byHex.has(hex) || opts.skip?.has(hex) || idEquals(c.id, opts.selfId)) return;
    // Insert sorted by distance.
    let lo = 0;
    let hi = cands.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (compareDistance(cands[mid]!.contact.id, c.id, target) < 0) lo = mid + 1;
      else hi = mid;
    }
    const cand: Candidate<R> = {
      contact: c,
      hex,
      log: logDistance(c.id, target),
      hop,
      state: 'new',
    };
    cands.splice(lo, 0, cand);
    byHex.set(hex, cand);
    if (cands.length > maxCandidates) {
      const dropped = cands.pop()!;
      if (dropped.state === 'new') byHex.delete(dropped.hex);
    }
  };

  const pick = (): Candidate<R> | undefined => {
    if (halving) {
      const threshold = bestLog - 1;
      let choice: Candidate<R> | undefined;
      for (const c of cands) {
        if (c.log > threshold) break;
        if (c.state === 'new') choice = c;
      }
      if (choice) return choice;
    }
    let live = 0;
    for (const c of cands) {
      if (c.state === 'failed') continue;
      if (live++ >= termination) break;
      if (c.state === 'new') return c;
    }
    return undefined;
  };

  const push = (e: LookupEvent<R>): void => {
    queue.push(e);
    const w = wake;
    wake = undefined;
    w?.();
  };

  const launch = (c: Candidate<R>): void => {
    c.state = 'inflight';
    inflight++;
    messages++;
    push({ type: 'SEND_QUERY', level, to: c.contact, hop: c.hop });
    opts.query(c.contact, inner.signal).then(
      (out) => {
        inflight--;
        if (inner.signal.aborted) return wake?.();
        c.state = 'done';
        c.result = out.result;
        if (c.log < bestLog) bestLog = c.log;
        for (const n of out.contacts) add(n, c.hop + 1);
        push({
          type: 'PEER_RESPONSE',
          level,
          from: c.contact,
          hop: c.hop,
          closer: out.contacts,
          result: out.result,
        });
        if (out.stop && !stoppedAt) {
          stoppedAt = { contact: c.contact, hop: c.hop, result: out.result };
          inner.abort();
        }
      },
      (error: Error) => {
        inflight--;
        if (inner.signal.aborted) return wake?.();
        c.state = 'failed';
        push({ type: 'QUERY_ERROR', level, to: c.contact, hop: c.hop, error });
      },
    );
  };

  for (const s of opts.seeds) add(s, 1);
  if (opts.startFrom && !idEquals(opts.startFrom.id, opts.selfId)) {
    add(opts.startFrom, 1);
    const first = byHex.get(toHex(opts.startFrom.id));
    if (first && first.state === 'new') {
      bestLog = Math.min(bestLog, first.log);
      launch(first);
    }
  }

  try {
    for (;;) {
      if (signal?.aborted) throw new AbortedError();
      if (!stoppedAt) {
        for (let c = pick(); c && inflight < alpha; c = inflight < alpha ? pick() : undefined)
          launch(c);
      }
      while (queue.length > 0) yield queue.shift()!;
      if (stoppedAt || inflight === 0) {
        if (!stoppedAt && pick()) continue;
        break;
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
        if (queue.length > 0 || inner.signal.aborted) resolve();
      });
    }
    if (signal?.aborted) throw new AbortedError();
    const visited: Visit<R>[] = [];
    const remaining: Contact[] = [];
    for (const c of cands) {
      if (c.state === 'done')
        visited.push({ contact: c.contact, hop: c.hop, result: c.result as R });
      else if (c.state === 'new') remaining.push(c.contact);
    }
    yield { type: 'FINISHED', level, visited, stoppedAt, messages, remaining };
  } finally {
    signal?.removeEventListener('abort', onAbort);
    if (inflight > 0) inner.abort();
  }
}
