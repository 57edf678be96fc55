/**
 * The DSHT's metrics: RPCs, lookups (hops, latency), the content index adapter's claims and bad
 * values, and membership — failure detection's events and states, routing table sizes per level
 * (read from the DSHT at each scrape).
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import { label, type MetricArea } from './registry.js';

/** What the DSHT records (the shape @coral/dsht takes as its `metrics` component). */
export interface DshtMetricsSink {
  rpc(type: string, outcome: string): void;
  lookup(kind: string, hops: number, latencyMs: number): void;
}

/** What the DSHT content index adapter records. */
export interface IndexMetricsSink {
  /** A cold miss claimed as `fetching`: `won` goes to the origin, `lost` joins another node. */
  claim(outcome: 'won' | 'lost'): void;
  /** A value under a URL key that is not a valid holder record. */
  invalidValue(): void;
}

/** Failure detection's events, as `coral_dsht_member_events_total{event}`. */
export const MEMBER_EVENTS = ['suspect', 'dead', 'left', 'alive'] as const;
export type MemberEvent = (typeof MEMBER_EVENTS)[number];

/**
 * What the membership metrics read at each scrape: members by failure-detection state, and the
 * contacts in the DSHT's routing table of each level (index = level).
 */
export interface MembershipSource {
  states(): Record<string, number> | undefined;
  tableSizes?(): readonly number[];
}

export function dshtMetrics(m: MetricArea): {
  dsht: DshtMetricsSink;
  index: IndexMetricsSink;
  memberEvent: (event: MemberEvent) => void;
  bindMembership: (source: MembershipSource) => void;
} {
  const { p, registers } = m;
  const rpcs = new Counter({
    name: `${p}dsht_rpcs_total`,
    help: 'DSHT RPCs by message type and outcome',
    labelNames: ['type', 'outcome'],
    registers,
  });
  const hops = new Histogram({
    name: `${p}dsht_lookup_hops`,
    help: 'Hops per DSHT lookup, by kind (get, put, find_node)',
    labelNames: ['kind'],
    buckets: [0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20],
    registers,
  });
  const latency = new Histogram({
    name: `${p}dsht_lookup_latency_seconds`,
    help: 'DSHT lookup latency in seconds, by kind',
    labelNames: ['kind'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers,
  });
  const claims = new Counter({
    name: `${p}index_claims_total`,
    help: 'Cold misses claimed in the index, by outcome (won: fetch from origin, lost: join a peer)',
    labelNames: ['outcome'],
    registers,
  });
  const invalid = new Counter({
    name: `${p}index_invalid_values_total`,
    help: 'Values under URL keys that were not valid holder records (skipped)',
    registers,
  });

  const memberEvents = new Counter({
    name: `${p}dsht_member_events_total`,
    help: 'Failure detection (SWIM): members suspected (no ack to direct or indirect probes), declared dead (suspicion not refuted), gone by their LEAVE (left), and taken back with a higher incarnation (alive)',
    labelNames: ['event'],
    registers,
  });
  for (const event of MEMBER_EVENTS) memberEvents.inc({ event }, 0);
  let membership: MembershipSource | undefined;
  new Gauge({
    name: `${p}dsht_members`,
    help: "Members by failure detection's state (alive, suspect: still used; dead, left: out of DNS answers, the designated-fetcher choice and peer lists)",
    labelNames: ['state'],
    registers,
    collect() {
      const s = membership?.states();
      this.reset();
      for (const state of ['alive', 'suspect', 'dead', 'left'])
        this.set({ state }, s?.[state] ?? 0);
    },
  });
  new Gauge({
    name: `${p}dsht_routing_table_contacts`,
    help: 'Contacts in the DSHT routing table of each cluster level (0: global)',
    labelNames: ['level'],
    registers,
    collect() {
      this.reset();
      const sizes = membership?.tableSizes?.() ?? [];
      sizes.forEach((n, level) => this.set({ level: String(level) }, n));
    },
  });

  return {
    dsht: {
      rpc: (type, outcome) => rpcs.inc({ type: label(type), outcome: label(outcome) }),
      lookup: (kind, n, ms) => {
        hops.observe({ kind: label(kind) }, n);
        latency.observe({ kind: label(kind) }, ms / 1000);
      },
    },
    index: {
      claim: (outcome) => claims.inc({ outcome }),
      invalidValue: () => invalid.inc(),
    },
    memberEvent: (event) => memberEvents.inc({ event }),
    bindMembership: (source) => {
      membership = source;
    },
  };
}
