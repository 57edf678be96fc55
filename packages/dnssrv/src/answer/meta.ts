/** What the pipeline knows about a response besides its bytes, and the resolver it goes to. */
import type { RrlKind } from '../rrl/response-rate-limiter.js';
import type { LocationMethod } from '../types.js';
import type { ResponseOpt } from '../wire/records.js';

/** The resolver a query came from. */
export interface Peer {
  address: string;
  port: number;
  bytes: Uint8Array;
}

/**
 * Everything about a response except its bytes and its question: what is logged, counted and
 * rate-limited. One meta serves every query a template answers.
 */
export interface AnswerMeta {
  rcode: number;
  aa: boolean;
  method: LocationMethod | 'none';
  detail: string;
  /** Proxies answered with. */
  nodes: string[];
  ttl?: number;
  ecs?: string;
  scope?: number;
  opt?: ResponseOpt;
  rrlKind: RrlKind;
  rrlName: string;
}

/**
 * Details repeat across answers ('rtt 3.10 ms < level-2 20 ms → level-2 cluster'): metas share
 * one string each instead of keeping a copy per answer. Bounded; emptied when full.
 */
const details = new Map<string, string>();
const MAX_DETAILS = 4096;

function internDetail(s: string): string {
  const known = details.get(s);
  if (known !== undefined) return known;
  if (details.size >= MAX_DETAILS) details.clear();
  details.set(s, s);
  return s;
}

/**
 * An {@link AnswerMeta} with every field present, in one order: metas built by spreading objects
 * of varying shapes got a hidden class each (and megamorphic reads on every cache hit).
 */
export function answerMeta(m: AnswerMeta): AnswerMeta {
  return {
    rcode: m.rcode,
    aa: m.aa,
    method: m.method,
    detail: internDetail(m.detail),
    nodes: m.nodes,
    ttl: m.ttl,
    ecs: m.ecs,
    scope: m.scope,
    opt: m.opt,
    rrlKind: m.rrlKind,
    rrlName: m.rrlName,
  };
}
