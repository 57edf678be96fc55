/**
 * Why each recent answer was what it was: a ring buffer of the last `size` responses for the
 * admin API (`recentDecisions()`), and one `dns answer` debug line per response with the same
 * fields. A busy server writes a slot per query, so slots are reused and nothing is allocated
 * per answer (the debug line is not even built when debug logging is off).
 */
import type { AnswerMeta } from '../answer/meta.js';
import { RCODE_NAME } from '../wire/constants.js';
import type { Decision, DnsLogger } from './types.js';

interface Slot {
  at: number;
  transport: 'udp' | 'tcp';
  client: string;
  name: string;
  type: number;
  cached: boolean;
  outcome: Decision['outcome'];
  meta: AnswerMeta;
  detail: string;
}

export class DecisionLog {
  readonly #logger: DnsLogger;
  readonly #ring: (Slot | undefined)[];
  #next = 0;

  constructor(components: { logger: DnsLogger }, options: { size: number }) {
    this.#logger = components.logger;
    this.#ring = new Array<Slot | undefined>(Math.max(1, options.size)).fill(undefined);
  }

  /** One response (or a dropped one): `name` and `type` are the question's, as lowercased. */
  record(
    at: number,
    transport: 'udp' | 'tcp',
    client: string,
    name: string,
    type: number,
    cached: boolean,
    outcome: Decision['outcome'],
    meta: AnswerMeta,
    detail: string = meta.detail,
  ): void {
    const slot = this.#ring[this.#next];
    if (slot) {
      slot.at = at;
      slot.transport = transport;
      slot.client = client;
      slot.name = name;
      slot.type = type;
      slot.cached = cached;
      slot.outcome = outcome;
      slot.meta = meta;
      slot.detail = detail;
    } else {
      this.#ring[this.#next] = {
        at,
        transport,
        client,
        name,
        type,
        cached,
        outcome,
        meta,
        detail,
      };
    }
    this.#next = (this.#next + 1) % this.#ring.length;
    if (this.#logger.isLevelEnabled?.('debug') !== false)
      this.#logger.debug(
        {
          component: 'dnssrv',
          client,
          transport,
          name,
          type,
          rcode: meta.rcode,
          method: meta.method,
          reason: detail,
          nodes: meta.nodes,
          cached,
          outcome,
        },
        'dns answer',
      );
  }

  /** The most recent decisions, oldest first. */
  recent(): Decision[] {
    const out: Decision[] = [];
    const n = this.#ring.length;
    for (let i = 0; i < n; i++) {
      const r = this.#ring[(this.#next + i) % n];
      if (!r) continue;
      const m = r.meta;
      out.push({
        at: r.at,
        transport: r.transport,
        client: r.client,
        name: r.name,
        type: r.type,
        rcode: RCODE_NAME[m.rcode] ?? String(m.rcode),
        method: m.method,
        detail: r.detail,
        nodes: [...m.nodes],
        ...(m.ttl !== undefined ? { ttl: m.ttl } : {}),
        ...(m.ecs !== undefined ? { ecs: m.ecs } : {}),
        ...(m.scope !== undefined ? { scope: m.scope } : {}),
        cached: r.cached,
        outcome: r.outcome,
      });
    }
    return out;
  }
}
