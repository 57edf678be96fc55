/** The server's counters, as `DnsServer.stats()` returns them. */

/** Counters returned by `DnsServer.stats()`. */
export interface DnsStats {
  queries: { udp: number; tcp: number };
  responses: number;
  rcodes: Record<string, number>;
  methods: Record<string, number>;
  malformed: number;
  dropped: number;
  truncated: number;
  internalErrors: number;
  cache: {
    hits: number;
    misses: number;
    /** Hits served from an expired template while its rebuild ran. */
    stale: number;
    /** Background rebuilds started by hits. */
    refreshes: number;
    entries: number;
    bytes: number;
    evictions: number;
    /** Names whose classification is memoised. */
    names: number;
  };
  hints: {
    walks: number;
    cacheHits: number;
    joined: number;
    stale: number;
    skippedRate: number;
    skippedBusy: number;
    timedOut: number;
    inFlight: number;
    entries: number;
  };
  rrl: { allowed: number; dropped: number; slipped: number; exempt: number; accounts: number };
  probes: {
    started: number;
    measured: number;
    unreachable: number;
    skippedBusy: number;
    skippedRate: number;
    skippedTarget: number;
    inFlight: number;
  };
  tcp: {
    /** Connections admitted. */
    connections: number;
    open: number;
    /** Closed on arrival: the table was full and every connection was owed an answer. */
    rejected: number;
    /** Closed on arrival: their source already had `tcp.maxConnectionsPerSource` open. */
    rejectedPerSource: number;
    /** Idle connections closed to admit a new one into a full table. */
    evicted: number;
    oversize: number;
    idleClosed: number;
  };
}

/** The pipeline's own counters (the rest come from its components). */
export class PipelineCounters {
  udp = 0;
  tcp = 0;
  responses = 0;
  readonly rcodes: Record<string, number> = {};
  readonly methods: Record<string, number> = {};
  malformed = 0;
  dropped = 0;
  truncated = 0;
  internalErrors = 0;
  hits = 0;
  misses = 0;
  stale = 0;
  refreshes = 0;
}
