/**
 * What a node reports about itself: `authState()` (trust mode, drops by reason, isolation),
 * `failureDetection()` and `snapshot()` (a plain JSON view for the admin API and tests). Pure
 * reads of the node's parts.
 */
import type { Clock } from '@coral/runtime';
import type { Keyring } from '@coral/keyring';
import { emptyAuthCounters, type AuthCounters, type DatagramAuth } from './auth/datagram-auth.js';
import { emptyKeyNoticeCounters } from './auth/key-notices.js';
import type { Contact } from './contact.js';
import { addressString, toHex } from './id/id.js';
import type { FailureDetector } from './membership/failure-detector.js';
import type { Peers } from './membership/peers.js';
import { emptyCounters, type Rpc } from './rpc/rpc.js';
import type { ValueStore } from './store/value-store.js';
import type { Transport } from './transport/transport.js';
import type { ClusterPolicy, DshtAuthState, DshtSnapshot, FailureDetectionState } from './types.js';

/** The parts of a node its reports read (`rpc`, `auth` and `contact` exist once it has started). */
export interface ReportSources {
  clock: Clock;
  transport: Transport;
  store: ValueStore;
  peers: Peers;
  keyring: Keyring | undefined;
  cluster: ClusterPolicy | undefined;
  rpc: Rpc | undefined;
  auth: DatagramAuth | undefined;
  contact: Contact | undefined;
}

export function authStateOf(s: ReportSources): DshtAuthState {
  const auth = s.auth;
  const rc = s.rpc?.counters ?? emptyCounters();
  const ac: AuthCounters = auth ? { ...auth.counters } : emptyAuthCounters();
  const iso = auth?.isolation() ?? {
    isolated: false,
    unknownKeyIds: [],
    lastAuthenticatedAt: s.clock.now(),
  };
  const state: DshtAuthState = {
    mode: s.keyring ? 'keyed' : 'open',
    keyIds: s.keyring?.list().map((k) => k.id) ?? [],
    ...iso,
    counters: {
      ...ac,
      ...(s.rpc?.notices?.counters ?? emptyKeyNoticeCounters()),
      malformed: rc.malformed,
      spoofed: rc.spoofed,
      unexpected: rc.unexpected,
      listedIdMismatch: rc.listedIdMismatch,
      listedIpLimited: rc.listedIpLimited,
      tokenRefused: rc.tokenRefused,
      rateLimited: rc.rateLimited,
      amplificationTrimmed: rc.amplificationTrimmed,
      amplificationDropped: rc.amplificationDropped,
      ipLimited: s.peers.registry.refused,
      quotaRefused: s.store.quotaRefused,
    },
    unknownKeys: auth?.unknownKeys() ?? [],
    authBytesPerDatagram: ac.sealed > 0 ? ac.authBytesSent / ac.sealed : 0,
    amplificationMax: rc.amplificationMax,
  };
  if (s.keyring) state.primaryKeyId = s.keyring.primaryId;
  const rejection = s.rpc?.notices?.last;
  if (rejection) {
    const { keyId, from, at } = rejection;
    state.keyRejection = { keyId, from: addressString(from.ip, from.port), at };
  }
  return state;
}

/** Failure detection's state, undefined when it does not run (or has not started). */
export function failureDetectionOf(
  d: FailureDetector | undefined,
): FailureDetectionState | undefined {
  const swim = d?.swim;
  if (!d || !swim) return undefined;
  const states = { alive: 0, suspect: 0, dead: 0, left: 0 };
  const members = swim.snapshot();
  for (const m of members) states[m.state]++;
  return {
    incarnation: swim.incarnation,
    suspicionMs: swim.suspicionMs(),
    states,
    members,
    counters: { ...swim.counters, ...d.counters },
  };
}

export function snapshotOf(s: ReportSources): DshtSnapshot {
  const rpc = s.rpc;
  const c = s.contact;
  return {
    id: c ? toHex(c.id) : '',
    address: s.transport.address,
    contact: c
      ? {
          id: toHex(c.id),
          ip: c.ip,
          port: c.port,
          httpPort: c.httpPort,
          dnsPort: c.dnsPort,
          region: c.region,
        }
      : { id: '', ip: '', port: 0 },
    levels: s.peers.tables.map((t) => ({ level: t.level, contacts: t.size, buckets: t.shape() })),
    store: { values: s.store.size, keys: s.store.keyCount, bytes: s.store.bytes },
    rpc: {
      ...(rpc?.counters ?? emptyCounters()),
      byType: structuredClone(rpc?.counters.byType ?? {}),
      amplificationMaxByType: { ...rpc?.counters.amplificationMaxByType },
      pending: rpc?.pendingCount ?? 0,
      rttPeers: rpc?.rtt.size ?? 0,
    },
    malformed: rpc?.counters.malformed ?? 0,
    spoofed: rpc?.counters.spoofed ?? 0,
    clusters: s.cluster?.snapshot?.() ?? clusterAdverts(s.cluster),
    rtt: [...(rpc?.rtt.entries() ?? [])]
      .slice(-64)
      .map(([peer, e]) => ({ peer, srttMs: Math.round(e.srtt * 10) / 10, samples: e.samples })),
    auth: authStateOf(s),
    members: { live: s.peers.members().length, known: s.peers.registry.size },
    limits: { buckets: rpc?.limiter.size ?? 0, storeSources: s.store.sources().slice(0, 8) },
  };
}

function clusterAdverts(
  cluster: ClusterPolicy | undefined,
): Array<{ level: number; clusterId: string; size: number; age: number }> | undefined {
  const ads = cluster?.adverts();
  if (!ads || ads.length === 0) return undefined;
  return ads.map((a) => ({
    level: a.level,
    clusterId: toHex(a.clusterId),
    size: a.size,
    age: a.age,
  }));
}
