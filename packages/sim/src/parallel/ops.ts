/**
 * What a driver asks of a fleet's nodes, and the figures it reads back — one vocabulary for the
 * in-process `SimFleet` (`LocalFleetDriver`) and the parallel fleet's workers, so both compute the
 * same figures the same way (each worker over its own nodes; the coordinator merges).
 */
import type { Clock } from '@coral/runtime';
import { compareDistance, type Dsht } from '@coral/dsht';
import type { SimStats } from '../network/sim-network.js';

/** One operation on node `node`; with `delayMs` it starts that long after the run begins. */
export type FleetOp =
  | { kind: 'start'; node: number; bootstrap?: string[] }
  | { kind: 'put'; node: number; key: Uint8Array; value: Uint8Array; ttl: number; delayMs?: number }
  | { kind: 'get'; node: number; key: Uint8Array; delayMs?: number };

export interface GetFigures {
  hops: number;
  messages: number;
  latencyMs: number;
  level: number | undefined;
}

/** `ok` for start and put; `values` and `stats` for a get (`ok` false when it threw). */
export interface OpResult {
  ok: boolean;
  values?: Uint8Array[];
  stats?: GetFigures;
}

/** Trust figures of some nodes (merged over workers by `mergeTrust`). */
export interface TrustPart {
  amplificationMax: number;
  amplificationMaxByType: Record<string, number>;
  authBytes: number;
  sealed: number;
  unverifiedRequests: number;
  /** Requests refused for want of a write token (answered with one: the requester asks again). */
  tokenRefused: number;
}

/**
 * Start `op` on `node` under `clock`: the promise settles with its result and never rejects. One
 * `then` stands between the node's promise and the result, delayed or not (what bench/dsht.mjs
 * did before drivers, so the in-process run keeps its event order exactly).
 */
export function startOp(node: Dsht, op: FleetOp, clock: Clock): Promise<OpResult> {
  if (op.kind !== 'start' && op.delayMs !== undefined) {
    const delay = op.delayMs;
    return new Promise((resolve) => {
      clock.setTimeout(() => {
        void call(node, op, resolve);
      }, delay);
    });
  }
  return call(node, op, (r) => r);
}

function call<T>(node: Dsht, op: FleetOp, done: (r: OpResult) => T): Promise<T> {
  switch (op.kind) {
    case 'start':
      return node.start(op.bootstrap ? { bootstrap: op.bootstrap } : {}).then(
        () => done(OK),
        () => done(FAILED),
      );
    case 'put':
      return node.put(op.key, op.value, op.ttl).then(
        () => done(OK),
        () => done(FAILED),
      );
    case 'get':
      return node.get(op.key).then(
        (r) =>
          done({
            ok: true,
            values: r.values,
            stats: {
              hops: r.stats.hops,
              messages: r.stats.messages,
              latencyMs: r.stats.latencyMs,
              level: r.stats.level,
            },
          }),
        () => done({ ok: false, stats: { hops: 0, messages: 0, latencyMs: 0, level: undefined } }),
      );
  }
}

const OK: OpResult = { ok: true };
const FAILED: OpResult = { ok: false };

/** The node (of `nodes`, by index) whose id is closest to `key`, or undefined when none. */
export function closestOf(
  nodes: ReadonlyArray<[number, Dsht]>,
  key: Uint8Array,
): { index: number; id: Uint8Array } | undefined {
  let best: [number, Dsht] | undefined;
  for (const e of nodes) {
    if (!best || compareDistance(e[1].id, best[1].id, key) < 0) best = e;
  }
  return best && { index: best[0], id: best[1].id };
}

export function trustPart(nodes: Iterable<Dsht>): TrustPart {
  const part: TrustPart = {
    amplificationMax: 0,
    amplificationMaxByType: {},
    authBytes: 0,
    sealed: 0,
    unverifiedRequests: 0,
    tokenRefused: 0,
  };
  for (const n of nodes) {
    const a = n.authState();
    part.amplificationMax = Math.max(part.amplificationMax, a.amplificationMax);
    part.authBytes += a.counters.authBytesSent;
    part.sealed += a.counters.sealed;
    const c = n.snapshot().rpc;
    part.unverifiedRequests += c.unverifiedRequests;
    part.tokenRefused += c.tokenRefused;
    const byType = part.amplificationMaxByType;
    for (const [t, r] of Object.entries(c.amplificationMaxByType))
      byType[t] = Math.max(byType[t] ?? 0, Number(r.toFixed(3)));
  }
  return part;
}

export function mergeTrust(parts: readonly TrustPart[]): TrustPart {
  const out: TrustPart = {
    amplificationMax: 0,
    amplificationMaxByType: {},
    authBytes: 0,
    sealed: 0,
    unverifiedRequests: 0,
    tokenRefused: 0,
  };
  for (const p of parts) {
    out.amplificationMax = Math.max(out.amplificationMax, p.amplificationMax);
    out.authBytes += p.authBytes;
    out.sealed += p.sealed;
    out.unverifiedRequests += p.unverifiedRequests;
    out.tokenRefused += p.tokenRefused;
    for (const [t, r] of Object.entries(p.amplificationMaxByType))
      out.amplificationMaxByType[t] = Math.max(out.amplificationMaxByType[t] ?? 0, r);
  }
  return out;
}

export function zeroStats(): SimStats {
  return { sent: 0, delivered: 0, lost: 0, partitioned: 0, unreachable: 0, bytes: 0 };
}

export function addStats(into: SimStats, s: SimStats): SimStats {
  into.sent += s.sent;
  into.delivered += s.delivered;
  into.lost += s.lost;
  into.partitioned += s.partitioned;
  into.unreachable += s.unreachable;
  into.bytes += s.bytes;
  return into;
}

/** Counters of a node's store for one slot (`level:keyhex`). */
export function slotCounters(node: Dsht, slot: string): { accepted: number; requests: number } {
  return {
    accepted: node.store.accepted.get(slot) ?? 0,
    requests: node.store.requests.get(slot) ?? 0,
  };
}
