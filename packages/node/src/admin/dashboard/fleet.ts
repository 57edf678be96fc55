/**
 * The fleet as one node sees it, for the dashboard: this node with its cluster at each level, the
 * members it knows with the levels they share with it (a level-i routing table holds only members
 * of this node's level-i cluster), their RTT and liveness, and the routing tables themselves.
 * Pure: it takes what the DSHT and the directory report and returns plain JSON.
 */
import type { DshtMember } from '@coral/dsht';

/** A DSHT contact as the routing tables hold it. */
export interface FleetContact {
  id: Uint8Array;
  ip: string;
  port: number;
  httpPort?: number;
  dnsPort?: number;
  region?: string;
}

/** What the view reads from the DSHT (the node's `DshtPort` satisfies it). */
export interface FleetSource {
  readonly levels: number;
  readonly contact: FleetContact;
  routes(level: number): FleetContact[];
  /** Routing entries with when each contact was last heard and its failed RPCs, when available. */
  routeEntries?(level: number): { contact: FleetContact; lastSeen: number; failures: number }[];
  /** The DSHT's snapshot: its `rtt` list gives smoothed RTTs per `ip:port`. */
  snapshot(): unknown;
  /** The clustering snapshot (`levels[]` with clusterId, size, members, thresholdMs, ageMs). */
  clusters?(): unknown;
}

export interface ClusterView {
  level: number;
  clusterId: string | null;
  /** Size estimate of the cluster, as advertised. */
  size: number | null;
  /** Live peers this node believes are in it. */
  members: number | null;
  /** RTT under which nodes share this level's cluster (null for the global level). */
  thresholdMs: number | null;
  ageMs: number | null;
}

/** Where a node is: its DSHT contact and the ports of its services. */
export interface NodeAddressView {
  nodeId: string;
  ip: string;
  /** DSHT (UDP) port. */
  port: number;
  httpPort: number | null;
  dnsPort: number | null;
  region: string | null;
}

export interface MemberView extends NodeAddressView {
  /** Cluster levels this member shares with this node (it is in those levels' routing tables). */
  levels: number[];
  /** Smoothed RTT from this node (ms), when measured. */
  rttMs: number | null;
  /** Time since it was last heard (ms), when known. */
  lastHeardMs: number | null;
  /** Consecutive failed RPCs (the largest over the levels it is in). */
  failures: number;
  /** A live proxy for the DNS server (answers name it). */
  live: boolean;
}

export interface RouteView {
  nodeId: string;
  ip: string;
  port: number;
  /** Kademlia bucket: the index of the highest bit in which the id differs from this node's. */
  bucket: number;
  lastHeardMs: number | null;
  failures: number;
}

export interface FleetView {
  self: NodeAddressView & { clusters: ClusterView[] };
  members: MemberView[];
  routes: { level: number; contacts: RouteView[] }[];
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** The bucket index of `id` in the table of `self`: 159 for the farthest half, 0 for the nearest. */
export function bucketOf(self: Uint8Array, id: Uint8Array): number {
  for (let i = 0; i < self.length; i++) {
    const x = (self[i] ?? 0) ^ (id[i] ?? 0);
    if (x !== 0) return (self.length - i) * 8 - (Math.clz32(x) - 24) - 1;
  }
  return -1;
}

function addressKey(ip: string, port: number): string {
  return ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`;
}

function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

function clusterViews(source: FleetSource): ClusterView[] {
  const snap = source.clusters?.() as { levels?: unknown } | undefined;
  const byLevel = new Map<number, Record<string, unknown>>();
  if (snap && Array.isArray(snap.levels)) {
    for (const l of snap.levels as Record<string, unknown>[]) {
      if (typeof l?.level === 'number') byLevel.set(l.level, l);
    }
  }
  return Array.from({ length: source.levels }, (_, level) => {
    const l = byLevel.get(level);
    return {
      level,
      clusterId: typeof l?.clusterId === 'string' ? l.clusterId : null,
      size: num(l?.size),
      members: num(l?.members),
      thresholdMs: level === 0 ? null : num(l?.thresholdMs),
      ageMs: num(l?.ageMs),
    };
  });
}

/** A verified member as the DSHT's `members()` lists it. */
export type VerifiedMember = Pick<
  DshtMember,
  'id' | 'ip' | 'port' | 'httpPort' | 'dnsPort' | 'region' | 'lastHeard'
>;

/**
 * `verified`: the DSHT's verified live members; those in no routing table (yet) are listed too,
 * with no levels.
 */
export function fleetView(
  source: FleetSource,
  liveIds: Iterable<string>,
  now: number,
  verified: readonly VerifiedMember[] = [],
): FleetView {
  const self = source.contact;
  const live = new Set(liveIds);
  const rtt = new Map<string, number>();
  const snap = source.snapshot() as { rtt?: unknown } | undefined;
  if (snap && Array.isArray(snap.rtt)) {
    for (const r of snap.rtt as { peer?: unknown; srttMs?: unknown }[]) {
      if (typeof r?.peer === 'string' && typeof r.srttMs === 'number') rtt.set(r.peer, r.srttMs);
    }
  }

  const members = new Map<string, MemberView>();
  const routes: FleetView['routes'] = [];
  for (let level = 0; level < source.levels; level++) {
    const entries =
      source.routeEntries?.(level) ??
      source.routes(level).map((contact) => ({ contact, lastSeen: NaN, failures: 0 }));
    const contacts: RouteView[] = [];
    for (const e of entries) {
      const c = e.contact;
      const nodeId = hex(c.id);
      const lastHeardMs = Number.isFinite(e.lastSeen) ? Math.max(0, now - e.lastSeen) : null;
      contacts.push({
        nodeId,
        ip: c.ip,
        port: c.port,
        bucket: bucketOf(self.id, c.id),
        lastHeardMs,
        failures: e.failures,
      });
      const m = members.get(nodeId);
      if (m) {
        m.levels.push(level);
        m.failures = Math.max(m.failures, e.failures);
        if (lastHeardMs !== null) {
          m.lastHeardMs =
            m.lastHeardMs === null ? lastHeardMs : Math.min(m.lastHeardMs, lastHeardMs);
        }
      } else {
        members.set(nodeId, {
          nodeId,
          ip: c.ip,
          port: c.port,
          httpPort: c.httpPort ?? null,
          dnsPort: c.dnsPort ?? null,
          region: c.region ?? null,
          levels: [level],
          rttMs: rtt.get(addressKey(c.ip, c.port)) ?? null,
          lastHeardMs,
          failures: e.failures,
          live: live.has(nodeId),
        });
      }
    }
    contacts.sort((a, b) => b.bucket - a.bucket || a.nodeId.localeCompare(b.nodeId));
    routes.push({ level, contacts });
  }
  for (const v of verified) {
    if (members.has(v.id)) continue;
    members.set(v.id, {
      nodeId: v.id,
      ip: v.ip,
      port: v.port,
      httpPort: v.httpPort ?? null,
      dnsPort: v.dnsPort ?? null,
      region: v.region ?? null,
      levels: [],
      rttMs: rtt.get(addressKey(v.ip, v.port)) ?? null,
      lastHeardMs: Math.max(0, now - v.lastHeard),
      failures: 0,
      live: live.has(v.id),
    });
  }

  return {
    self: {
      nodeId: hex(self.id),
      ip: self.ip,
      port: self.port,
      httpPort: self.httpPort ?? null,
      dnsPort: self.dnsPort ?? null,
      region: self.region ?? null,
      clusters: clusterViews(source),
    },
    members: [...members.values()].sort(
      (a, b) => b.levels.length - a.levels.length || a.nodeId.localeCompare(b.nodeId),
    ),
    routes,
  };
}
