/**
 * The fleet's metrics: purges applied here and requests the blocklist refused, node-to-node
 * requests refused, members' quarantine reports and the members quarantined here, and the fleet
 * keys' trust — DSHT datagrams dropped by a defence, isolation, key notices, keys held (read from
 * the DSHT and keyring at each scrape).
 */
import { Counter, Gauge } from 'prom-client';
import { label, type MetricArea } from './registry.js';

export interface PurgeMetricsSink {
  /** A purge applied here: taken here (`local`), sent by a member (`peer`), pulled (`catch-up`). */
  purge(source: 'local' | 'peer' | 'catch-up', removed: number): void;
  /** A request refused because its origin is on the blocklist. */
  blocked(): void;
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

export function fleetMetrics(m: MetricArea): {
  purge: PurgeMetricsSink;
  peerRefused: (reason: string) => void;
  /** A member's report of another as the proxy's audit took it (confirmed, unconfirmed...). */
  memberReport: (outcome: string) => void;
  reportSent: (outcome: 'ok' | 'failed') => void;
  bindQuarantine: (counts: () => { quarantined: number; suspects: number }) => void;
  bindTrust: (source: TrustSource) => void;
} {
  const { p, registers } = m;
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

  const reports = new Counter({
    name: `${p}member_reports_total`,
    help: "Members' quarantine reports: received and confirmed by this node's own check (quarantined), unconfirmed (suspect only), unchecked (over budget), ignored; sent to a member (sent, send-failed)",
    labelNames: ['outcome'],
    registers,
  });
  for (const outcome of ['confirmed', 'unconfirmed', 'unchecked', 'ignored', 'sent', 'send-failed'])
    reports.inc({ outcome }, 0);
  let quarantine: (() => { quarantined: number; suspects: number }) | undefined;
  new Gauge({
    name: `${p}members_quarantined`,
    help: 'Members quarantined by this node (their answers and designation skipped), and suspects (reported by a member: every copy audited)',
    labelNames: ['state'],
    registers,
    collect() {
      const q = quarantine?.();
      this.set({ state: 'quarantined' }, q?.quarantined ?? 0);
      this.set({ state: 'suspect' }, q?.suspects ?? 0);
    },
  });

  // Read from the DSHT at each scrape (it keeps its own monotonic counters): copied, not counted.
  let trust: TrustSource | undefined;
  new Counter({
    name: `${p}dsht_datagrams_dropped_total`,
    help: 'DSHT datagrams dropped or requests refused by a defence, by reason (unauthenticated, unknownKey, badMac, stale, replayed: keyed mode; the others: both modes)',
    labelNames: ['reason'],
    registers,
    collect() {
      const c = trust?.counters() ?? {};
      this.reset();
      for (const reason of DSHT_DROP_REASONS) this.inc({ reason }, c[reason] ?? 0);
    },
  });
  new Gauge({
    name: `${p}fleet_isolated`,
    help: '1 while this keyed node hears only keys it does not hold (the fleet rotated without it)',
    registers,
    collect() {
      this.set(trust?.isolated() ? 1 : 0);
    },
  });
  new Counter({
    name: `${p}fleet_key_rejected_total`,
    help: "Key notices answering this node's own requests: a peer does not accept this node's key id (a wrong or stale fleet key here, or a member that lacks it; notices are unauthenticated hints)",
    registers,
    collect() {
      this.reset();
      this.inc(trust?.counters().keyRejected ?? 0);
    },
  });
  new Counter({
    name: `${p}dsht_key_notices_total`,
    help: 'Key notices: sent to sources of datagrams under key ids this node lacks (sent), not sent for the per-source or global rate (limited), received matching none of its requests (ignored)',
    labelNames: ['event'],
    registers,
    collect() {
      const c = trust?.counters() ?? {};
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
      this.set(trust?.keys() ?? 0);
    },
  });

  return {
    purge: {
      purge: (source, removed) => {
        purges.inc({ source });
        purged.inc({ source }, removed);
      },
      blocked: () => blocked.inc(),
    },
    peerRefused: (reason) => peerRefused.inc({ reason }),
    memberReport: (outcome) => reports.inc({ outcome: label(outcome) }),
    reportSent: (outcome) => reports.inc({ outcome: outcome === 'ok' ? 'sent' : 'send-failed' }),
    bindQuarantine: (counts) => {
      quarantine = counts;
    },
    bindTrust: (source) => {
      trust = source;
    },
  };
}
