/**
 * The proxy's metrics: responses by Cache-Status, method and status, the fast path's hits, origin
 * and peer fetches (and the member audit's own), the bytes written per response and the hottest
 * URLs, the designated fetcher, members' copies that failed their check, sampled audits, and the
 * response-time histograms by cache result and protocol.
 */
import type { ServerResponse } from 'node:http';
import { Counter } from 'prom-client';
import { IndexedHistogram } from './indexed-histogram.js';
import { PROTOCOLS, ResponseTimer, type MonotonicClock, type Protocol } from './latency.js';
import { OUTCOMES, outcomeOf, type Outcome } from './outcome.js';
import { label, sum, type MetricArea, type Reader } from './registry.js';
import { SpaceSaving } from './top-k.js';

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
 * What the node sees of each proxy response on the wire (metrics/traffic.ts observes the proxy's
 * HTTP server): the bytes written for it, whether a peer node asked, and the origin URL it was for.
 */
export interface TrafficMetricsSink {
  response(bytes: number, peer: boolean, url: string | undefined): void;
}

/** Counters of the hottest-URL sketch: any URL asked for more than 1/100 of all requests is among them. */
export const HOT_URL_CAPACITY = 100;
/** Longer URLs are cut (with "…") before they are counted, so one entry stays small. */
export const HOT_URL_MAX_LENGTH = 512;

/**
 * Upper bounds (s) of the response-time histograms: hits from memory take well under a
 * millisecond, misses the origin's time, large bodies the client's bandwidth.
 */
export const HTTP_DURATION_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];

/** What the proxy's metrics count into that other areas own. */
export interface HttpMetricsDeps {
  rateLimited: Counter<'service'>;
  resourceError: (source: string, code: string) => void;
  memberReport: (outcome: string) => void;
  hotUrlCapacity?: number;
  monotonic?: MonotonicClock;
}

export function httpMetrics(
  m: MetricArea,
  deps: HttpMetricsDeps,
): {
  proxy: ProxyMetricsSink;
  traffic: TrafficMetricsSink;
  hotUrls: SpaceSaving<string>;
  timer: ResponseTimer;
  readers: Reader[];
} {
  const { p, registers } = m;
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
  const responseBytes = new Counter({
    name: `${p}http_response_bytes_total`,
    help: 'Bytes the proxy wrote for its responses (status line, headers, body), by who asked (client, peer)',
    labelNames: ['to'],
    registers,
  });
  for (const to of ['client', 'peer']) responseBytes.inc({ to }, 0);

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

  const timer = responseTimer(m, deps.monotonic);

  const hotUrls = new SpaceSaving<string>(deps.hotUrlCapacity ?? HOT_URL_CAPACITY);
  // Children bound to their label once: this runs for every proxy response.
  const toClient = responseBytes.labels('client');
  const toPeer = responseBytes.labels('peer');
  const traffic: TrafficMetricsSink = {
    response: (bytes, peer, url) => {
      if (bytes > 0) (peer ? toPeer : toClient).inc(bytes);
      if (url !== undefined && !peer) {
        hotUrls.add(
          url.length > HOT_URL_MAX_LENGTH ? url.slice(0, HOT_URL_MAX_LENGTH - 1) + '…' : url,
        );
      }
    },
  };

  const { rateLimited, resourceError, memberReport } = deps;
  const proxy: ProxyMetricsSink = {
    request: (cacheStatus, method, status, res) => {
      requests.inc({ cache_status: label(cacheStatus), method: label(method), status });
      if (res) timer.head(res, outcomeOf(cacheStatus));
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
    storeFailed: (code) => resourceError('cache-store', label(code)),
    audit: (outcome) => audits.inc({ outcome: label(outcome) }),
    memberReport,
  };

  const readers = [
    sum(requests, 'requests', 'cache_status'),
    sum(responseBytes, 'sent', 'to'),
    sum(originBytes, 'received.origin'),
    sum(peerBytes, 'received.peer'),
    sum(originFetches, 'fetches.origin', 'outcome'),
    sum(peerFetches, 'fetches.peer', 'outcome'),
  ];
  return { proxy, traffic, hotUrls, timer, readers };
}

/**
 * Response times by cache result and protocol, observed for every proxy response (the fast
 * path's hits included) by the index of their label set: no allocation per observation.
 */
function responseTimer({ p, registers }: MetricArea, monotonic?: MonotonicClock): ResponseTimer {
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
  return new ResponseTimer({
    sink: { firstByte, done },
    ...(monotonic ? { clock: monotonic } : {}),
  });
}
