/**
 * The node's peers: the verified members (`PeerRegistry`) and the routing table of each level
 * holding them, kept in step. A sender becomes a member only by a round trip, and enters a level's
 * table only when the cluster policy admits it there; a member dropped from the registry leaves
 * every table. Failed RPCs are remembered so liveness and suspicion can be judged per peer.
 */
import type { Clock } from '@coral/runtime';
import { KBUCKET_SIZE, MAX_IDS_PER_IP } from '../constants.js';
import type { Contact } from '../contact.js';
import { toHex, type Id } from '../id/id.js';
import { RoutingTable } from '../routing-table/routing-table.js';
import type { ClusterPolicy, DshtMember } from '../types.js';
import { PeerRegistry, type MemberRecord } from './registry.js';

export interface PeersComponents {
  clock: Clock;
  cluster?: ClusterPolicy;
  /** Liveness check of a table's oldest contact when its bucket is full. */
  ping: (c: Contact) => Promise<boolean>;
  /** Failure detection's verdict, when it runs (see `PeerRegistryComponents.isDown`). */
  isDown?: (hex: string) => boolean;
  /** A member was admitted (after a round trip). */
  onLearn?: (peer: Contact) => void;
  /** A member was dropped from the registry (and from every table). */
  onEvict?: (peer: Contact) => void;
}

export interface PeersOptions {
  k?: number;
  maxIdsPerIp?: number;
  liveWindowMs?: number;
  maxMembers?: number;
  /** True in keyed mode: members are authenticated. */
  authenticated: boolean;
}

/** Failed-RPC times remembered (oldest inserted forgotten first). */
const FAILURES_KEPT = 8192;

export class Peers {
  readonly registry: PeerRegistry;
  /** Routing tables, one per level run, level 0 first (built by `reset`). */
  tables: RoutingTable[] = [];
  /** A table gained a contact since the contacts were last saved. */
  contactsDirty = false;
  readonly #onLearn: ((peer: Contact) => void) | undefined;
  readonly #clock: Clock;
  readonly #cluster: ClusterPolicy | undefined;
  readonly #ping: (c: Contact) => Promise<boolean>;
  readonly #k: number;
  readonly #maxIdsPerIp: number;
  readonly #authenticated: boolean;
  readonly #failed = new Map<string, number>();
  #selfId: Id | undefined;

  constructor(components: PeersComponents, options: PeersOptions) {
    this.#clock = components.clock;
    this.#cluster = components.cluster;
    this.#ping = components.ping;
    this.#k = options.k ?? KBUCKET_SIZE;
    this.#maxIdsPerIp = options.maxIdsPerIp ?? MAX_IDS_PER_IP;
    this.#authenticated = options.authenticated;
    this.#onLearn = components.onLearn;
    const onEvict = components.onEvict;
    this.registry = new PeerRegistry(
      {
        clock: this.#clock,
        isDown: components.isDown,
        // Beyond its capacity the registry drops others before any routing table's contact.
        keep: (c) => this.tables.some((t) => t.has(c.id)),
        onEvict: (rec) => {
          for (const t of this.tables) t.remove(rec.contact.id);
          onEvict?.(rec.contact);
        },
      },
      {
        maxIdsPerIp: this.#maxIdsPerIp,
        capacity: options.maxMembers,
        liveWindowMs: options.liveWindowMs,
      },
    );
  }

  /** Fresh, empty tables for `levels` levels around `selfId` (at start). */
  reset(selfId: Id, levels: number): void {
    this.#selfId = selfId;
    this.tables = [];
    for (let level = 0; level < levels; level++) this.tables.push(this.#newTable(level));
  }

  /** Does `c` belong in the table of `level`? Level 0 takes everyone; others ask the cluster policy. */
  admits(level: number, c: Contact): boolean {
    if (level === 0) return true;
    return this.#cluster?.admits(level, c) ?? false;
  }

  /**
   * A round trip with `sender` from `sourceIp`: a member (unless that IP is taken), then the tables
   * that admit it. Identities are counted per source IP, which is the advertised IP unless allowNat.
   */
  learn(sender: Contact, sourceIp: string): void {
    const hex = toHex(sender.id);
    if (!this.registry.heard(sender, hex, sourceIp)) return;
    // Dead or departed (failure detection): remembered, but out of the tables until it is back.
    if (this.registry.isDown?.(hex)) {
      this.#onLearn?.(sender);
      return;
    }
    this.#enter(sender);
    this.#onLearn?.(sender);
  }

  /** A member failure detection took back: into the tables that admit it again. */
  restore(hex: string): void {
    const contact = this.registry.contactOf(hex);
    if (contact) this.#enter(contact);
  }

  /** A member failure detection holds dead or departed: out of every table. */
  drop(hex: string): void {
    const contact = this.registry.contactOf(hex);
    if (contact) for (const t of this.tables) t.remove(contact.id);
  }

  #enter(sender: Contact): void {
    for (let level = 0; level < this.tables.length; level++) {
      if (this.admits(level, sender)) {
        const r = this.tables[level]!.add(sender);
        if (r === 'added') this.contactsDirty = true;
      }
    }
  }

  /**
   * Would `peer` likely keep this node in a routing table? Its bucket for this node has the same
   * index i as this node's bucket for it (the common prefix length is symmetric), and bucket i
   * holds about n / 2^(i+1) of a fleet of n everywhere. n is about 2^d, d being this table's
   * deepest bucket (the nearest neighbour's prefix). So: introduce only where that estimate is
   * under 2k and this node's own bucket i is not full — the near peers, which must know this node
   * for lookups of nearby keys to reach it; far peers' buckets are full and would only queue it.
   */
  wantsIntroduction(peer: Contact): boolean {
    for (let level = 0; level < this.tables.length; level++) {
      const t = this.tables[level]!;
      if (!this.admits(level, peer)) continue;
      const i = t.bucketIndex(peer.id);
      const expected = 2 ** (t.deepestBucket - i - 1);
      if (expected < 2 * t.k && t.bucketSize(i) < t.k) return true;
    }
    return false;
  }

  /** An RPC to `id` failed: its table entries and its member record say so. */
  noteFailure(id: Id): void {
    for (const t of this.tables) t.recordFailure(id);
    const hex = toHex(id);
    // Bounded by dropping the entry inserted first (cheaper than keeping LRU order on every datagram).
    if (this.#failed.size >= FAILURES_KEPT && !this.#failed.has(hex))
      this.#failed.delete(this.#failed.keys().next().value as string);
    this.#failed.set(hex, this.#clock.now());
    this.registry.noteFailure(hex);
  }

  /** Clock time this node last heard from member `id` (a round-trip-verified datagram), or undefined. */
  lastHeard(id: Id): number | undefined {
    return this.registry.get(toHex(id))?.lastHeard;
  }

  /** A verified member heard from within `windowMs` and no failed RPC to it since. */
  isLive(id: Id, windowMs: number): boolean {
    const rec = this.registry.get(toHex(id));
    if (!rec || this.#clock.now() - rec.lastHeard > windowMs) return false;
    if (this.registry.isDown?.(rec.hex)) return false;
    return rec.failedAt === undefined || rec.failedAt < rec.lastHeard;
  }

  /** Did the last RPC to `id` fail after the last time it was heard from? */
  isSuspect(id: Id): boolean {
    const hex = toHex(id);
    const failed = this.#failed.get(hex);
    if (failed === undefined) return false;
    return failed >= (this.registry.get(hex)?.lastHeard ?? -Infinity);
  }

  /** The verified live members, at most maxIdsPerIp per IP (this node excluded). */
  members(): DshtMember[] {
    const now = this.#clock.now();
    const out: DshtMember[] = [];
    for (const rec of this.registry.all())
      if (this.registry.isLive(rec, now)) out.push(this.#member(rec));
    return out;
  }

  /** The verified live member with this id (40 hex digits), or undefined. */
  member(idHex: string): DshtMember | undefined {
    const rec = this.registry.get(idHex.toLowerCase());
    return rec && this.registry.isLive(rec) ? this.#member(rec) : undefined;
  }

  /** Rebuild a level's table from `seeds` plus every known contact the policy admits. */
  resetLevel(level: number, seeds: Contact[]): void {
    const fresh = this.#newTable(level);
    const known = [...seeds, ...this.tables.flatMap((t) => t.all().map((e) => e.contact))];
    // Only verified members: a seed nobody completed a round trip with stays out.
    for (const c of known) {
      const hex = toHex(c.id);
      if (this.registry.has(hex) && !this.registry.isDown?.(hex) && this.admits(level, c))
        fresh.add(c);
    }
    this.tables[level] = fresh;
  }

  #member(rec: MemberRecord): DshtMember {
    const c = rec.contact;
    const m: DshtMember = {
      id: rec.hex,
      ip: c.ip,
      port: c.port,
      lastHeard: rec.lastHeard,
      verifiedAt: rec.verifiedAt,
      authenticated: this.#authenticated,
    };
    if (c.httpPort) m.httpPort = c.httpPort;
    if (c.dnsPort) m.dnsPort = c.dnsPort;
    if (c.region) m.region = c.region;
    return m;
  }

  #newTable(level: number): RoutingTable {
    return new RoutingTable(
      { clock: this.#clock, ping: this.#ping },
      { selfId: this.#selfId!, level, k: this.#k, maxIdsPerIp: this.#maxIdsPerIp },
    );
  }
}
