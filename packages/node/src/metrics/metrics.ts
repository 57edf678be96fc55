/**
 * Prometheus metrics of one node (prom-client), with one facet per component: the proxy, the DNS
 * server and the DSHT each receive the small recording interface they were written against, and
 * never see prom-client. Each node has its own registry, so several nodes can live in one process
 * (tests) without their counters mixing.
 */
import type { ServerResponse } from 'node:http';
import type { BudgetEvents, BudgetStats } from '@coral/connguard';
import { CLOSE_REASONS, REFUSAL_REASONS } from '@coral/connguard';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Readings } from './history.js';
import { IndexedHistogram } from './indexed-histogram.js';
import {
  PROTOCOLS,
  ResponseTimer,
  type ListenAddress,
  type MonotonicClock,
  type Protocol,
} from './latency.js';
import { SpaceSaving } from './top-k.js';
import { OUTCOMES, outcomeOf, type Outcome } from './outcome.js';

/** What the proxy records (the shape @coral/httpprx takes as its `metrics` component). */
export interface ProxyMetricsSink {
  /** One per response, as its head is written; `res` ties it to the response's timing. */
  request(cacheStatus: string, method: string, status: number, res?: ServerResponse): void;
  originFetch(bytes: number, ok: boolean): void;
  peerFetch(bytes: number, ok: boolean): void;
  /** An origin request of the member audit (not an `originFetch`: counted apart). */
  auditFetch(bytes: number, ok: boolean): void;
  rateLimited(): void;
  /** A hit answered on the proxy's fast path (from the hot cache, before routing). */
  fastHit(): void;
  /** A holder record skipped before any connection: its node is not a verified live member. */
  holderSkipped(reason: 'not-member'): void;
  /** An incoming peer request refused with 403: why `Coral-Peer-Auth` did not verify. */
  peerRejected(reason: string): void;
  /** The designated fetcher: self, asked, ask-refused/-timeout/-error (misses), taken (members' asks). */
  designated(event: 'self' | 'asked' | 'ask-refused' | 'ask-timeout' | 'ask-error' | 'taken'): void;
  /** A member's copy failed its check: answered from the origin, or cut off. */
  peerIntegrity(outcome: 'origin' | 'resumed' | 'aborted'): void;
  /** A fetched response the disk would not take (EMFILE, ENOSPC...): served, not stored. */
  storeFailed(code: string): void;
  /** A sampled audit of a member's copy (agree, lied, inconclusive, skipped, error). */
  audit(outcome: string): void;
  /** A member's report of another (confirmed, unconfirmed, unchecked, ignored). */
  memberReport(outcome: string): void;
}

/**
 * What the fleet-trust metrics read at each scrape: the DSHT's drop counters by reason
 * (`authState().counters`), whether the node is isolated, and how many fleet keys it holds.
 */
export interface TrustSource {
  counters(): Record<string, number>;
  isolated(): boolean;
  keys(): number;
}

/**
 * DSHT datagrams dropped before their payload was looked at (keyed mode: not authenticated) and
 * requests refused by a per-source defence, by reason, as `coral_dsht_datagrams_dropped_total`.
 */
export const DSHT_DROP_REASONS = [
  'unauthenticated',
  'unknownKey',
  'badMac',
  'stale',
  'replayed',
  'wrongMode',
  'malformed',
  'spoofed',
  'listedIdMismatch',
  'listedIpLimited',
  'tokenRefused',
  'rateLimited',
  'amplificationDropped',
  'ipLimited',
  'quotaRefused',
] as const;

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

/** What the DNS server records (the shape @coral/dnssrv takes as its `metrics` component). */
export interface DnsMetricsSink {
  answer(method: string, rcode: string | number): void;
  rateLimited(): void;
}

/** What a node's worker threads add (workers/): their restarts and their reported counters. */
export interface WorkerMetricsSink {
  /** Worker `worker` exited and is being started again. */
  restarted(worker: number): void;
  /** `n` DNS answers a worker sent (the same counter as the main thread's DNS answers). */
  dnsAnswers(method: string, rcode: string, n: number): void;
  /** `n` DNS answers a worker's rate limit dropped or slipped. */
  dnsRateLimited(n: number): void;
  /** `n` more DNS queries received by `worker` over `transport`. */
  dnsQueries(worker: number, transport: 'udp' | 'tcp', n: number): void;
}

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

/** What the node's start-up records about its databases. */
export interface StorageMetricsSink {
  /** A database found corrupt at start was moved aside and the node started with it empty. */
  corruptStore(store: 'dsht' | 'cache' | 'purge'): void;
}

export interface PurgeMetricsSink {
  /** A purge applied here: taken here (`local`), sent by a member (`peer`), pulled (`catch-up`). */
  purge(source: 'local' | 'peer' | 'catch-up', removed: number): void;
  /** A request refused because its origin is on the blocklist. */
  blocked(): void;
}

/**
 * What the node sees of each proxy response on the wire (metrics/traffic.ts observes the proxy's
 * HTTP server): the bytes written for it, whether a peer node asked, and the origin URL it was for.
 */
export interface TrafficMetricsSink {
  response(bytes: number, peer: boolean, url: string | undefined): void;
}

export interface CoralMetricsOptions {
  /** Also export the process metrics of prom-client (CPU, memory, event loop); default true. */
  defaultMetrics?: boolean;
  /** Metric name prefix; default `coral_`. */
  prefix?: string;
  /** URLs the hottest-URL sketch monitors (default {@link HOT_URL_CAPACITY}). */
  hotUrlCapacity?: number;
  /** The clock response times are read from (ms, monotonic); default `performance`. */
  monotonic?: MonotonicClock;
}

export const DEFAULT_METRICS_PREFIX = 'coral_';
/** Counters of the hottest-URL sketch: any URL asked for more than 1/100 of all requests is among them. */
export const HOT_URL_CAPACITY = 100;
/** Longer URLs are cut (with "…") before they are counted, so one entry stays small. */
export const HOT_URL_MAX_LENGTH = 512;

export { OUTCOMES, outcomeOf, type Outcome };

/**
 * Upper bounds (s) of the response-time histograms: hits from memory take well under a
 * millisecond, misses the origin's time, large bodies the client's bandwidth.
 */
export const HTTP_DURATION_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];

/** Keep label values short and printable so a misbehaving caller cannot explode cardinality. */
function label(v: string | number): string {
  const s = String(v);
  return s.length > 48 ? s.slice(0, 48) : s;
}

export class CoralMetrics {
  readonly registry: Registry;
  readonly proxy: ProxyMetricsSink;
  readonly dns: DnsMetricsSink;
  readonly dsht: DshtMetricsSink;
  readonly index: IndexMetricsSink;
  readonly storage: StorageMetricsSink;
  readonly purge: PurgeMetricsSink;
  /** A heap trim (runtime/heap-trim.ts) ran and released this many bytes of RSS. */
  readonly heapTrimmed: (releasedBytes: number) => void;
  /** Connection budgets (@coral/connguard): refusals, closes and failed accepts per listener. */
  readonly connections: Required<BudgetEvents>;
  /**
   * A failure the node survived where it used to die (a timer's EMFILE, ENOMEM...): counted by
   * where it happened and its code.
   */
  readonly resourceError: (source: string, code: string) => void;
  /** The descriptor limits in effect (after the node raised the soft one). */
  readonly descriptorLimits: (soft: number, hard: number) => void;
  /** A node-to-node admin request refused (peer/requests.ts), by reason. */
  readonly peerRefused: (reason: string) => void;
  readonly traffic: TrafficMetricsSink;
  /** A failure-detection event about a member (suspect, dead, left, alive again). */
  readonly memberEvent: (event: MemberEvent) => void;
  /** A quarantine report sent to a member (trust/member-reports.ts): ok or failed. */
  readonly reportSent: (outcome: 'ok' | 'failed') => void;
  /** The worker threads (`workers` ≥ 2): restarts, and what the workers count and report. */
  readonly workers: WorkerMetricsSink;
  /** The URLs clients ask this node's proxy for most (peers' requests are not counted). */
  readonly hotUrls: SpaceSaving<string>;
  #trust: TrustSource | undefined;
  #budget: (() => BudgetStats) | undefined;
  #membership: MembershipSource | undefined;
  readonly #timer: ResponseTimer;
  #quarantine: (() => { quarantined: number; suspects: number }) | undefined;
  /** Reads the counters the dashboard shows (see {@link read}). */
  readonly #readers: (() => Promise<Readings>)[] = [];

  constructor(options: CoralMetricsOptions = {}) {
    const p = options.prefix ?? DEFAULT_METRICS_PREFIX;
    const registers = [(this.registry = new Registry())];
    if (options.defaultMetrics ?? true)
      collectDefaultMetrics({ register: this.registry, prefix: p });

    const requests = new Counter({
      name: `${p}http_requests_total`,
      help: 'Proxy responses by Cache-Status outcome, method and status code',
      labelNames: ['cache_status', 'method', 'status'],
      registers,
    });
    // Counted in a plain number and read at each scrape: the fast path is the proxy's hottest code.
    let fastHits = 0;
    new Counter({
      name: `${p}http_fast_hits_total`,
      help: 'Proxy hits answered on the fast path (from the hot cache, before routing); also in http_requests_total',
      registers,
      collect() {
        this.reset();
        this.inc(fastHits);
      },
    });
    const originFetches = new Counter({
      name: `${p}origin_fetches_total`,
      help: "Fetches from origin servers for clients by outcome (the member audit's own: coral_member_audit_fetches_total)",
      labelNames: ['outcome'],
      registers,
    });
    const originBytes = new Counter({
      name: `${p}origin_fetch_bytes_total`,
      help: 'Body bytes received from origin servers',
      registers,
    });
    const peerFetches = new Counter({
      name: `${p}peer_fetches_total`,
      help: 'Fetches from peer proxies by outcome',
      labelNames: ['outcome'],
      registers,
    });
    const peerBytes = new Counter({
      name: `${p}peer_fetch_bytes_total`,
      help: 'Body bytes received from peer proxies',
      registers,
    });
    const rateLimited = new Counter({
      name: `${p}rate_limited_total`,
      help: 'Requests or queries dropped by a rate limit, by service',
      labelNames: ['service'],
      registers,
    });
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
    const answers = new Counter({
      name: `${p}dns_answers_total`,
      help: 'DNS answers by the method that located the client, and rcode',
      labelNames: ['method', 'rcode'],
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
    const responseBytes = new Counter({
      name: `${p}http_response_bytes_total`,
      help: 'Bytes the proxy wrote for its responses (status line, headers, body), by who asked (client, peer)',
      labelNames: ['to'],
      registers,
    });
    for (const to of ['client', 'peer']) responseBytes.inc({ to }, 0);
    const corrupt = new Counter({
      name: `${p}store_corruptions_total`,
      help: 'Databases found corrupt at start, moved aside and started empty, by store (dsht, cache, purge)',
      labelNames: ['store'],
      registers,
    });
    // Both series exist from the start, so a dashboard or alert sees 0 rather than no data.
    for (const store of ['dsht', 'cache', 'purge']) corrupt.inc({ store }, 0);
    this.storage = { corruptStore: (store) => corrupt.inc({ store }) };
    const heapTrims = new Counter({
      name: `${p}heap_trims_total`,
      help: 'Trims of the C heap (glibc malloc_trim) after a busy spell, giving free pages back to the system',
      registers,
    });
    const heapTrimmed = new Counter({
      name: `${p}heap_trim_released_bytes_total`,
      help: 'Resident memory the heap trims gave back to the system',
      registers,
    });
    this.heapTrimmed = (bytes) => {
      heapTrims.inc();
      heapTrimmed.inc(bytes);
    };
    const refused = new Counter({
      name: `${p}connections_refused_total`,
      help: 'Connections closed on arrival by a connection budget, by listener and reason (per-address, per-prefix, listener-full, ceiling)',
      labelNames: ['listener', 'reason'],
      registers,
    });
    const closedConns = new Counter({
      name: `${p}connections_closed_total`,
      help: 'Admitted connections a connection budget closed, by listener and reason (idle-timeout, keepalive-timeout, header-timeout, body-timeout, shed)',
      labelNames: ['listener', 'reason'],
      registers,
    });
    const acceptErrors = new Counter({
      name: `${p}accept_errors_total`,
      help: 'Accepts that failed (EMFILE, ENFILE, ENOMEM...) on a listener that went on listening, by listener and code',
      labelNames: ['listener', 'code'],
      registers,
    });
    this.connections = {
      refused: (listener, reason) => refused.inc({ listener, reason }),
      closed: (listener, reason) => closedConns.inc({ listener, reason }),
      acceptError: (listener, code) => acceptErrors.inc({ listener, code }),
    };
    const budget = () => this.#budget?.();
    new Gauge({
      name: `${p}connections_open`,
      help: 'Client connections open, by listener',
      labelNames: ['listener'],
      registers,
      collect() {
        const b = budget();
        this.reset();
        for (const [listener, l] of Object.entries(b?.listeners ?? {}))
          this.set({ listener }, l.open);
      },
    });
    new Gauge({
      name: `${p}connections_ceiling`,
      help: 'The node-wide ceiling on client connections (from the descriptor limit, less a reserve)',
      registers,
      collect() {
        this.set(budget()?.ceiling ?? 0);
      },
    });
    const fdLimit = new Gauge({
      name: `${p}descriptor_limit`,
      help: 'The open-file limit in effect (RLIMIT_NOFILE), soft and hard',
      labelNames: ['kind'],
      registers,
    });
    this.descriptorLimits = (soft, hard) => {
      fdLimit.set({ kind: 'soft' }, soft);
      fdLimit.set({ kind: 'hard' }, hard);
    };
    const resourceErrors = new Counter({
      name: `${p}resource_errors_total`,
      help: 'Failures the node survived (a timer or a background task hit EMFILE, ENFILE, ENOMEM...), by source and code',
      labelNames: ['source', 'code'],
      registers,
    });
    this.resourceError = (source, code) => resourceErrors.inc({ source, code });
    // Both sets exist from the start for the proxy's listener, so alerts see 0 rather than no data.
    for (const reason of REFUSAL_REASONS) refused.inc({ listener: 'http', reason }, 0);
    for (const reason of CLOSE_REASONS) closedConns.inc({ listener: 'http', reason }, 0);

    const purges = new Counter({
      name: `${p}purges_total`,
      help: 'Purges applied on this node, by source (local, peer, catch-up)',
      labelNames: ['source'],
      registers,
    });
    const purged = new Counter({
      name: `${p}purged_objects_total`,
      help: 'Stored responses dropped by purges, by source (local, peer, catch-up)',
      labelNames: ['source'],
      registers,
    });
    for (const source of ['local', 'peer', 'catch-up']) {
      purges.inc({ source }, 0);
      purged.inc({ source }, 0);
    }
    const blocked = new Counter({
      name: `${p}blocked_requests_total`,
      help: 'Proxy requests refused because their origin is on the blocklist',
      registers,
    });
    const peerRefused = new Counter({
      name: `${p}peer_requests_refused_total`,
      help: 'Node-to-node admin requests (purges, ACME) refused with 403, by reason',
      labelNames: ['reason'],
      registers,
    });
    this.peerRefused = (reason) => peerRefused.inc({ reason });
    this.purge = {
      purge: (source, removed) => {
        purges.inc({ source });
        purged.inc({ source }, removed);
      },
      blocked: () => blocked.inc(),
    };

    const holdersSkipped = new Counter({
      name: `${p}peer_holders_skipped_total`,
      help: 'Holder records skipped before any connection, by reason (not-member: its node is not a verified live member)',
      labelNames: ['reason'],
      registers,
    });
    holdersSkipped.inc({ reason: 'not-member' }, 0);
    const peerRejected = new Counter({
      name: `${p}peer_requests_rejected_total`,
      help: 'Incoming peer requests refused with 403, by why Coral-Peer-Auth did not verify',
      labelNames: ['reason'],
      registers,
    });
    for (const reason of ['missing', 'malformed', 'unknown-key', 'bad-mac', 'stale', 'replayed'])
      peerRejected.inc({ reason }, 0);
    const designated = new Counter({
      name: `${p}designated_fetch_total`,
      help: "The designated fetcher (one per object, rendezvous hashing): misses fetched as the designated member (self), served by the designated member (asked) or not (ask-refused, ask-timeout, ask-error: the index decided), and members' asks taken as the designated member (taken)",
      labelNames: ['event'],
      registers,
    });
    for (const event of ['self', 'asked', 'ask-refused', 'ask-timeout', 'ask-error', 'taken'])
      designated.inc({ event }, 0);
    const peerIntegrity = new Counter({
      name: `${p}peer_integrity_total`,
      help: "Members' copies that failed their check (size, SHA-256) or stalled, by what the client got: origin (caught before a byte was sent, the origin answered), resumed (a streamed copy that stalled or was cut short, completed from the origin by a range request under its validators), aborted (its clients cut off: wrong at the end of a streamed copy, or stopped and not completed; never wrong bytes as complete)",
      labelNames: ['outcome'],
      registers,
    });
    for (const outcome of ['origin', 'resumed', 'aborted']) peerIntegrity.inc({ outcome }, 0);
    const audits = new Counter({
      name: `${p}member_audits_total`,
      help: "Sampled audits of members' copies against the origin, by outcome: agree, lied (the member is quarantined here), inconclusive (the origin could not say), skipped (over the audit budget), error",
      labelNames: ['outcome'],
      registers,
    });
    for (const outcome of ['agree', 'lied', 'inconclusive', 'skipped', 'error'])
      audits.inc({ outcome }, 0);
    const auditFetches = new Counter({
      name: `${p}member_audit_fetches_total`,
      help: 'Origin requests made by the member audit (a sampled copy fetched again, a second look, a report checked), by outcome; not in coral_origin_fetches_total (their bytes are in coral_origin_fetch_bytes_total)',
      labelNames: ['outcome'],
      registers,
    });
    for (const outcome of ['ok', 'error']) auditFetches.inc({ outcome }, 0);
    const reports = new Counter({
      name: `${p}member_reports_total`,
      help: "Members' quarantine reports: received and confirmed by this node's own check (quarantined), unconfirmed (suspect only), unchecked (over budget), ignored; sent to a member (sent, send-failed)",
      labelNames: ['outcome'],
      registers,
    });
    for (const outcome of [
      'confirmed',
      'unconfirmed',
      'unchecked',
      'ignored',
      'sent',
      'send-failed',
    ])
      reports.inc({ outcome }, 0);
    this.reportSent = (outcome) =>
      reports.inc({ outcome: outcome === 'ok' ? 'sent' : 'send-failed' });
    const workerRestarts = new Counter({
      name: `${p}workers_restarts_total`,
      help: 'Worker threads that exited and were started again, by worker',
      labelNames: ['worker'],
      registers,
    });
    const workerDnsQueries = new Counter({
      name: `${p}worker_dns_queries_total`,
      help: 'DNS queries received by each worker thread, by transport',
      labelNames: ['worker', 'transport'],
      registers,
    });
    this.workers = {
      restarted: (worker) => workerRestarts.inc({ worker: String(worker) }),
      dnsAnswers: (method, rcode, n) =>
        answers.inc({ method: label(method), rcode: label(rcode) }, n),
      dnsRateLimited: (n) => rateLimited.inc({ service: 'dns' }, n),
      dnsQueries: (worker, transport, n) =>
        workerDnsQueries.inc({ worker: String(worker), transport }, n),
    };
    const quarantine = () => this.#quarantine;
    new Gauge({
      name: `${p}members_quarantined`,
      help: 'Members quarantined by this node (their answers and designation skipped), and suspects (reported by a member: every copy audited)',
      labelNames: ['state'],
      registers,
      collect() {
        const q = quarantine()?.();
        this.set({ state: 'quarantined' }, q?.quarantined ?? 0);
        this.set({ state: 'suspect' }, q?.suspects ?? 0);
      },
    });
    // Read from the DSHT at each scrape (it keeps its own monotonic counters): copied, not counted.
    const trust = () => this.#trust;
    new Counter({
      name: `${p}dsht_datagrams_dropped_total`,
      help: 'DSHT datagrams dropped or requests refused by a defence, by reason (unauthenticated, unknownKey, badMac, stale, replayed: keyed mode; the others: both modes)',
      labelNames: ['reason'],
      registers,
      collect() {
        const c = trust()?.counters() ?? {};
        this.reset();
        for (const reason of DSHT_DROP_REASONS) this.inc({ reason }, c[reason] ?? 0);
      },
    });
    new Gauge({
      name: `${p}fleet_isolated`,
      help: '1 while this keyed node hears only keys it does not hold (the fleet rotated without it)',
      registers,
      collect() {
        this.set(trust()?.isolated() ? 1 : 0);
      },
    });
    new Counter({
      name: `${p}fleet_key_rejected_total`,
      help: "Key notices answering this node's own requests: a peer does not accept this node's key id (a wrong or stale fleet key here, or a member that lacks it; notices are unauthenticated hints)",
      registers,
      collect() {
        this.reset();
        this.inc(trust()?.counters().keyRejected ?? 0);
      },
    });
    new Counter({
      name: `${p}dsht_key_notices_total`,
      help: 'Key notices: sent to sources of datagrams under key ids this node lacks (sent), not sent for the per-source or global rate (limited), received matching none of its requests (ignored)',
      labelNames: ['event'],
      registers,
      collect() {
        const c = trust()?.counters() ?? {};
        this.reset();
        this.inc({ event: 'sent' }, c.keyNoticesSent ?? 0);
        this.inc({ event: 'limited' }, c.keyNoticesLimited ?? 0);
        this.inc({ event: 'ignored' }, c.keyNoticesIgnored ?? 0);
      },
    });
    new Gauge({
      name: `${p}fleet_keys`,
      help: 'Fleet keys held (0: open mode)',
      registers,
      collect() {
        this.set(trust()?.keys() ?? 0);
      },
    });

    const memberEvents = new Counter({
      name: `${p}dsht_member_events_total`,
      help: 'Failure detection (SWIM): members suspected (no ack to direct or indirect probes), declared dead (suspicion not refuted), gone by their LEAVE (left), and taken back with a higher incarnation (alive)',
      labelNames: ['event'],
      registers,
    });
    for (const event of MEMBER_EVENTS) memberEvents.inc({ event }, 0);
    this.memberEvent = (event) => memberEvents.inc({ event });
    const membership = () => this.#membership;
    new Gauge({
      name: `${p}dsht_members`,
      help: "Members by failure detection's state (alive, suspect: still used; dead, left: out of DNS answers, the designated-fetcher choice and peer lists)",
      labelNames: ['state'],
      registers,
      collect() {
        const s = membership()?.states();
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
        const sizes = membership()?.tableSizes?.() ?? [];
        sizes.forEach((n, level) => this.set({ level: String(level) }, n));
      },
    });

    // Response times by cache result and protocol, observed for every proxy response (the fast
    // path's hits included) by the index of their label set: no allocation per observation.
    const series = OUTCOMES.flatMap((o) =>
      PROTOCOLS.map((proto) => ({ cache_result: o, protocol: proto })),
    );
    const indexOf = (o: Outcome, proto: Protocol) =>
      OUTCOMES.indexOf(o) * PROTOCOLS.length + (proto === 'https' ? 1 : 0);
    const timing = (name: string, help: string) => {
      const h = new IndexedHistogram({
        name: `${p}${name}`,
        help,
        labelNames: ['cache_result', 'protocol'],
        buckets: HTTP_DURATION_BUCKETS,
        series,
        registers,
      });
      return (o: Outcome, proto: Protocol, seconds: number) =>
        h.observeAt(indexOf(o, proto), seconds);
    };
    const firstByte = timing(
      'http_time_to_first_byte_seconds',
      "Proxy responses: from the request's head parsed to the response's head written, by cache result (hit, peer, miss, error) and protocol",
    );
    const done = timing(
      'http_request_duration_seconds',
      "Proxy responses: from the request's head parsed to the response's last byte written, by cache result (hit, peer, miss, error) and protocol",
    );
    this.#timer = new ResponseTimer({
      sink: { firstByte, done },
      ...(options.monotonic ? { clock: options.monotonic } : {}),
    });

    this.index = {
      claim: (outcome) => claims.inc({ outcome }),
      invalidValue: () => invalid.inc(),
    };

    this.hotUrls = new SpaceSaving(options.hotUrlCapacity ?? HOT_URL_CAPACITY);
    // Children bound to their label once: this runs for every proxy response.
    const toClient = responseBytes.labels('client');
    const toPeer = responseBytes.labels('peer');
    this.traffic = {
      response: (bytes, peer, url) => {
        if (bytes > 0) (peer ? toPeer : toClient).inc(bytes);
        if (url !== undefined && !peer) {
          this.hotUrls.add(
            url.length > HOT_URL_MAX_LENGTH ? url.slice(0, HOT_URL_MAX_LENGTH - 1) + '…' : url,
          );
        }
      },
    };

    // What the dashboard samples: each counter summed over the labels it does not show.
    const sum = (c: Counter, prefix: string, by?: string) => async (): Promise<Readings> => {
      const out: Readings = {};
      for (const v of (await c.get()).values) {
        const key = by ? `${prefix}.${String(v.labels[by])}` : prefix;
        out[key] = (out[key] ?? 0) + v.value;
      }
      return out;
    };
    this.#readers.push(
      sum(requests, 'requests', 'cache_status'),
      sum(responseBytes, 'sent', 'to'),
      sum(originBytes, 'received.origin'),
      sum(peerBytes, 'received.peer'),
      sum(originFetches, 'fetches.origin', 'outcome'),
      sum(peerFetches, 'fetches.peer', 'outcome'),
      sum(answers, 'dns', 'method'),
      sum(rateLimited, 'rateLimited', 'service'),
    );

    this.proxy = {
      request: (cacheStatus, method, status, res) => {
        requests.inc({ cache_status: label(cacheStatus), method: label(method), status });
        if (res) this.#timer.head(res, outcomeOf(cacheStatus));
      },
      originFetch: (bytes, ok) => {
        originFetches.inc({ outcome: ok ? 'ok' : 'error' });
        if (bytes > 0) originBytes.inc(bytes);
      },
      peerFetch: (bytes, ok) => {
        peerFetches.inc({ outcome: ok ? 'ok' : 'error' });
        if (bytes > 0) peerBytes.inc(bytes);
      },
      auditFetch: (bytes, ok) => {
        auditFetches.inc({ outcome: ok ? 'ok' : 'error' });
        if (bytes > 0) originBytes.inc(bytes);
      },
      rateLimited: () => rateLimited.inc({ service: 'proxy' }),
      fastHit: () => {
        fastHits++;
      },
      holderSkipped: (reason) => holdersSkipped.inc({ reason: label(reason) }),
      peerRejected: (reason) => peerRejected.inc({ reason: label(reason) }),
      designated: (event) => designated.inc({ event }),
      peerIntegrity: (outcome) => peerIntegrity.inc({ outcome }),
      storeFailed: (code) => resourceErrors.inc({ source: 'cache-store', code: label(code) }),
      audit: (outcome) => audits.inc({ outcome: label(outcome) }),
      memberReport: (outcome) => reports.inc({ outcome: label(outcome) }),
    };
    this.dns = {
      answer: (method, rcode) => answers.inc({ method: label(method), rcode: label(rcode) }),
      rateLimited: () => rateLimited.inc({ service: 'dns' }),
    };
    this.dsht = {
      rpc: (type, outcome) => rpcs.inc({ type: label(type), outcome: label(outcome) }),
      lookup: (kind, n, ms) => {
        hops.observe({ kind: label(kind) }, n);
        latency.observe({ kind: label(kind) }, ms / 1000);
      },
    };
  }

  /**
   * The counters the dashboard shows, summed over the labels it does not show, from the same
   * prom-client objects `/metrics` exposes: `requests.<cache_status>` (coral_http_requests_total),
   * `sent.client` / `sent.peer` (coral_http_response_bytes_total), `received.origin` and
   * `received.peer` (coral_origin_fetch_bytes_total, coral_peer_fetch_bytes_total),
   * `fetches.origin.<outcome>`, `fetches.peer.<outcome>`, `dns.<method>` (coral_dns_answers_total)
   * and `rateLimited.<service>`; plus `outcome.hit|peer|miss|error`, the requests grouped by
   * {@link outcomeOf}.
   */
  async read(): Promise<Readings> {
    const parts = await Promise.all(this.#readers.map((r) => r()));
    const out = Object.assign({}, ...parts) as Readings;
    for (const o of OUTCOMES) out[`outcome.${o}`] = 0;
    for (const [k, v] of Object.entries(out)) {
      if (k.startsWith('requests.')) out[`outcome.${outcomeOf(k.slice(9))}`]! += v;
    }
    return out;
  }

  /** Where the membership gauge reads from (the node's DSHT), once it runs. */
  bindMembership(source: MembershipSource): void {
    this.#membership = source;
  }

  /** Where the quarantine gauge reads from (the proxy's audit), once it runs. */
  bindQuarantine(counts: () => { quarantined: number; suspects: number }): void {
    this.#quarantine = counts;
  }

  /** Where the connection gauges read from (the node's connection budget). */
  bindConnections(stats: () => BudgetStats): void {
    this.#budget = stats;
  }

  /**
   * Time the responses of the proxy's servers listening at `listening` (its http and https
   * listeners), for the response-time histograms; until {@link close}.
   */
  timeProxy(listening: readonly ListenAddress[]): void {
    this.#timer.watch(listening);
  }

  /** Stop observing the proxy's servers. */
  close(): void {
    this.#timer.stop();
  }

  /** Where the fleet-trust metrics read from (the node's DSHT and keyring), once it runs. */
  bindTrust(source: TrustSource): void {
    this.#trust = source;
  }

  /** The Prometheus text exposition of every metric. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
