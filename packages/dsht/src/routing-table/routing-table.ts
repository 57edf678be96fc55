/**
 * Kademlia routing table for one cluster level: 160 k-buckets indexed by the length of the prefix a
 * contact shares with this node. A pure data structure: no I/O. Liveness checks come in through the
 * `ping` callback, time through the injected clock.
 *
 * - A contact heard from moves to the tail of its bucket (most recently seen).
 * - A full bucket asks `ping(leastRecentlySeen)`; only when that ping fails is the old contact
 *   evicted for the newcomer. Otherwise the newcomer waits in the bucket's replacement cache.
 * - Contacts that fail RPCs repeatedly (`recordFailure`) leave and are replaced from the cache.
 * - `staleBuckets()` names buckets untouched for the refresh interval, for the owner to refresh.
 * - At most `maxIdsPerIp` contacts (entries and replacements together) per host (IPv4 address,
 *   IPv6 /64): a further id from the same IP is refused.
 *
 * A contact is found by a scan of its bucket (at most k entries and k replacements, compared by
 * their ids' leading 32 bits first): no map from id to entry, which cost each node's table a
 * string-keyed map as large as the table again (15 KB a node at 1,500 simulated nodes).
 */
import type { Clock } from '@coral/runtime';
import { mergeContact, type Contact } from '../contact.js';
import {
  BUCKET_REFRESH_MS,
  CONTACT_MAX_FAILURES,
  ID_BYTES,
  KBUCKET_SIZE,
  PING_STALE_MS,
} from '../constants.js';
import { commonPrefixLength, idEquals, type Id } from '../id/id.js';
import { TopContacts, prefix32 } from './closest.js';
import { hostKey } from '../limits/address.js';

export interface RoutingEntry {
  contact: Contact;
  /** Clock time the contact was last heard from (a request or an answer from it). */
  lastSeen: number;
  /** Consecutive failed RPCs. */
  failures: number;
}

/**
 * A table's entry: also the leading 32 bits of the contact's id, read once (`closest` compares
 * them), kept as a signed 32-bit integer so that it is stored unboxed.
 */
interface Entry extends RoutingEntry {
  readonly prefix: number;
  /** hostKey(contact.ip), taken once. */
  readonly host: string;
}

export { sortByDistance } from './closest.js';

interface Bucket {
  entries: Entry[];
  replacements: Entry[];
  lastChanged: number;
  pinging: boolean;
}

export interface RoutingTableComponents {
  clock: Clock;
  /** Liveness check of the least-recently-seen contact of a full bucket; resolve true when alive. */
  ping?: (contact: Contact) => Promise<boolean>;
}

export interface RoutingTableOptions {
  selfId: Id;
  /** Cluster level this table serves. Default 0. */
  level?: number;
  /** Bucket size. Default KBUCKET_SIZE (20). */
  k?: number;
  /** Failures after which a contact is dropped. Default CONTACT_MAX_FAILURES. */
  maxFailures?: number;
  /** Idle time after which a bucket is stale. Default BUCKET_REFRESH_MS. */
  refreshMs?: number;
  /**
   * A full bucket's least recently seen contact is pinged only when it was last heard from longer
   * ago than this; a fresher one is kept without a ping (the newcomer waits as a replacement).
   * Default PING_STALE_MS (15 min, BEP 5).
   */
  pingStaleMs?: number;
  /** Contacts kept per host (IPv4 address, IPv6 /64), replacements included. Default unlimited. */
  maxIdsPerIp?: number;
}

const NONE: readonly Entry[] = [];

/** `refused`: the contact's IP already has `maxIdsPerIp` contacts here. */
export type AddOutcome = 'added' | 'updated' | 'pending' | 'self' | 'refused';

export class RoutingTable {
  readonly selfId: Id;
  readonly level: number;
  readonly k: number;
  #clock: Clock;
  #ping: ((contact: Contact) => Promise<boolean>) | undefined;
  #maxFailures: number;
  #refreshMs: number;
  #pingStaleMs: number;
  /** Buckets by index, made when first used (a table of n contacts uses about log2(n) + 1). */
  #buckets: Array<Bucket | undefined> = [];
  /** When the table was made: the `lastChanged` of a bucket never used. */
  #createdAt: number;
  /** Entries (not replacements) in all buckets. */
  #count = 0;
  #deep = -1;
  #maxPerIp: number;
  /** host → contacts (entries and replacements) from it (kept only while maxPerIp is finite). */
  #hosts = new Map<string, number>();

  constructor(components: RoutingTableComponents, options: RoutingTableOptions) {
    this.#clock = components.clock;
    this.#ping = components.ping;
    this.selfId = options.selfId;
    this.level = options.level ?? 0;
    this.k = options.k ?? KBUCKET_SIZE;
    this.#maxFailures = options.maxFailures ?? CONTACT_MAX_FAILURES;
    this.#refreshMs = options.refreshMs ?? BUCKET_REFRESH_MS;
    this.#pingStaleMs = options.pingStaleMs ?? PING_STALE_MS;
    this.#maxPerIp = options.maxIdsPerIp ?? Infinity;
    this.#createdAt = this.#clock.now();
  }

  get size(): number {
    return this.#count;
  }

  /** Bucket index of an id: the number of leading bits it shares with this node. */
  bucketIndex(id: Id): number {
    return commonPrefixLength(this.selfId, id);
  }

  /** Sizes of the non-empty buckets, by index (for tests and snapshots). */
  shape(): Record<number, number> {
    const out: Record<number, number> = {};
    this.#buckets.forEach((b, i) => {
      if (b && b.entries.length > 0) out[i] = b.entries.length;
    });
    return out;
  }

  /** Index of the deepest non-empty bucket (the nearest neighbour's common prefix), -1 when empty. */
  get deepestBucket(): number {
    return this.#deep;
  }

  /** Contacts in bucket `index` (replacements not counted). */
  bucketSize(index: number): number {
    return this.#buckets[index]?.entries.length ?? 0;
  }

  get(id: Id): RoutingEntry | undefined {
    const b = this.#buckets[this.bucketIndex(id)];
    return b && find(b.entries, id);
  }

  has(id: Id): boolean {
    return this.get(id) !== undefined;
  }

  /**
   * Record that `contact` was heard from now. Adds it, refreshes it, or — when its bucket is full —
   * pings the least recently seen contact and evicts it only if the ping fails.
   */
  add(contact: Contact): AddOutcome {
    const index = this.bucketIndex(contact.id);
    if (index === ID_BYTES * 8) return 'self';
    const now = this.#clock.now();
    const bucket = this.#bucket(index);
    const existing = find(bucket.entries, contact.id);
    if (existing) {
      const old = existing.contact;
      if (
        old !== contact &&
        (contact.clusters !== undefined ||
          contact.httpPort !== old.httpPort ||
          contact.dnsPort !== old.dnsPort ||
          contact.region !== old.region)
      ) {
        existing.contact = mergeContact(old, contact);
      }
      existing.lastSeen = now;
      existing.failures = 0;
      const i = bucket.entries.indexOf(existing);
      bucket.entries.splice(i, 1);
      bucket.entries.push(existing);
      bucket.lastChanged = now;
      return 'updated';
    }
    const inReplacements = find(bucket.replacements, contact.id) !== undefined;
    const host = hostKey(contact.ip);
    if (!inReplacements) {
      if (this.#maxPerIp !== Infinity && (this.#hosts.get(host) ?? 0) >= this.#maxPerIp)
        return 'refused';
      this.#countHost(host, 1);
    }
    const entry: Entry = {
      contact,
      lastSeen: now,
      failures: 0,
      prefix: prefix32(contact.id) | 0,
      host,
    };
    if (bucket.entries.length < this.k) {
      if (inReplacements) {
        const i = bucket.replacements.findIndex((e) => idEquals(e.contact.id, contact.id));
        bucket.replacements.splice(i, 1);
      }
      bucket.entries.push(entry);
      this.#count++;
      this.#deep = Math.max(this.#deep, index);
      bucket.lastChanged = now;
      return 'added';
    }
    this.#addReplacement(bucket, entry);
    this.#checkOldest(bucket);
    return 'pending';
  }

  /** Note a failed RPC to `id`; drop the contact after `maxFailures` in a row. */
  recordFailure(id: Id): void {
    const entry = this.get(id) as Entry | undefined;
    if (!entry) return;
    entry.failures++;
    if (entry.failures >= this.#maxFailures) this.remove(id);
  }

  /** Remove a contact (or a waiting replacement), promoting the freshest replacement in its place. */
  remove(id: Id): boolean {
    const bucket = this.#buckets[this.bucketIndex(id)];
    if (!bucket) return false;
    const entry = find(bucket.entries, id);
    if (!entry) {
      const i = bucket.replacements.findIndex((e) => idEquals(e.contact.id, id));
      if (i < 0) return false;
      this.#countHost(bucket.replacements.splice(i, 1)[0]!.host, -1);
      return true;
    }
    bucket.entries.splice(bucket.entries.indexOf(entry), 1);
    this.#count--;
    this.#countHost(entry.host, -1);
    const repl = bucket.replacements.pop();
    if (repl) {
      bucket.entries.push(repl);
      this.#count++;
    }
    bucket.lastChanged = this.#clock.now();
    while (this.#deep >= 0 && (this.#buckets[this.#deep]?.entries.length ?? 0) === 0) this.#deep--;
    return true;
  }

  /** The `count` contacts closest to `target`, closest first. */
  closest(target: Id, count = this.k, exclude?: (c: Contact) => boolean): Contact[] {
    // Buckets at and below the target's bucket hold every contact closer than the rest; each
    // shallower bucket is farther than the one below it, so they are taken in order until enough.
    // Contacts of the start bucket are closer to the target than every other contact (they share
    // more leading bits with it), then come the deeper buckets (as a group), then the shallower
    // ones one by one. The best `count` are kept in a small sorted list as they are met (no sort
    // of the whole table, no allocation per contact).
    const buckets = this.#buckets;
    const deepest = this.#deep;
    if (deepest < 0 || count <= 0) return [];
    const start = Math.min(this.bucketIndex(target), deepest);
    const best = new TopContacts(target, count);
    best.offer(buckets[start]?.entries ?? NONE, exclude);
    if (!best.full) {
      for (let i = start + 1; i <= deepest; i++) best.offer(buckets[i]?.entries ?? NONE, exclude);
      for (let i = start - 1; i >= 0 && !best.full; i--)
        best.offer(buckets[i]?.entries ?? NONE, exclude);
    }
    return best.contacts;
  }

  /** Every contact, bucket by bucket. */
  all(): RoutingEntry[] {
    return this.#buckets.flatMap((b) => b?.entries ?? NONE);
  }

  /** Bucket indexes, up to the deepest non-empty one, not changed for the refresh interval. */
  staleBuckets(): number[] {
    const now = this.#clock.now();
    let deepest = -1;
    this.#buckets.forEach((b, i) => {
      if (b && b.entries.length > 0) deepest = i;
    });
    const out: number[] = [];
    for (let i = 0; i <= deepest; i++) {
      const changed = this.#buckets[i]?.lastChanged ?? this.#createdAt;
      if (now - changed >= this.#refreshMs) out.push(i);
    }
    return out;
  }

  /** Mark a bucket refreshed (a lookup into its range was started). */
  touchBucket(index: number): void {
    if (!Number.isInteger(index) || index < 0 || index >= ID_BYTES * 8) return;
    this.#bucket(index).lastChanged = this.#clock.now();
  }

  /** Bucket `index`, made on first use. */
  #bucket(index: number): Bucket {
    let b = this.#buckets[index];
    if (!b) {
      // Buckets never used stay holes in the array (most of the 160 are never used).
      b = { entries: [], replacements: [], lastChanged: this.#createdAt, pinging: false };
      this.#buckets[index] = b;
    }
    return b;
  }

  #addReplacement(bucket: Bucket, entry: Entry): void {
    const i = bucket.replacements.findIndex((e) => idEquals(e.contact.id, entry.contact.id));
    if (i >= 0) bucket.replacements.splice(i, 1);
    bucket.replacements.push(entry);
    if (bucket.replacements.length > this.k) this.#countHost(bucket.replacements.shift()!.host, -1);
  }

  /**
   * Contacts (entries and replacements) per host, kept in step with every change: counting them by
   * a scan of the table for each new contact saved each node ~4.5 KB (1,500 simulated nodes) but
   * cost 4.6–9.7 % of a 3,000-node simulation's CPU.
   */
  #countHost(host: string, delta: number): void {
    if (this.#maxPerIp === Infinity) return;
    const n = (this.#hosts.get(host) ?? 0) + delta;
    if (n <= 0) this.#hosts.delete(host);
    else this.#hosts.set(host, n);
  }

  #checkOldest(bucket: Bucket): void {
    if (bucket.pinging || !this.#ping) return;
    const oldest = bucket.entries[0];
    if (!oldest || this.#clock.now() - oldest.lastSeen < this.#pingStaleMs) return;
    bucket.pinging = true;
    this.#ping(oldest.contact).then(
      (alive) => this.#afterPing(bucket, oldest, alive),
      () => this.#afterPing(bucket, oldest, false),
    );
  }

  #afterPing(bucket: Bucket, oldest: Entry, alive: boolean): void {
    bucket.pinging = false;
    if (!bucket.entries.includes(oldest)) return;
    if (alive) {
      oldest.lastSeen = this.#clock.now();
      oldest.failures = 0;
      bucket.entries.splice(bucket.entries.indexOf(oldest), 1);
      bucket.entries.push(oldest);
    } else {
      this.remove(oldest.contact.id);
    }
  }
}

/** The entry of `id` in a bucket's list (its ids' leading 32 bits compared first), or undefined. */
function find(list: readonly Entry[], id: Id): Entry | undefined {
  const p = prefix32(id) | 0;
  for (let i = 0; i < list.length; i++) {
    const e = list[i]!;
    if (e.prefix === p && (e.contact.id === id || idEquals(e.contact.id, id))) return e;
  }
  return undefined;
}
