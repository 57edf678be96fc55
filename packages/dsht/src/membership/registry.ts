/**
 * The verified members this node knows: every node it has completed a round trip with (an answer
 * to its own request, or a request carrying this node's write token for the sender's address), at
 * most `maxIdsPerIp` per host (IPv4 address, IPv6 /64). Routing tables, the cluster module's view,
 * `members()` and the DNS directory all draw from it, so one IP can never pose as many nodes.
 *
 * A newcomer at a host already holding `maxIdsPerIp` ids takes the place of one that is no longer
 * live (not heard from within `liveWindowMs`, or failed since) — a node restarted on another port —
 * and is refused otherwise. Bounded: beyond `capacity` the least recently heard members are
 * dropped — but not those `keep` holds on to (the routing tables' contacts) while others remain, so
 * that strangers who each prove a round trip from an address of their own cannot push a node's
 * quiet routing-table contacts out. They go in batches of capacity / 64, found by one scan (members
 * keep their place in the map when heard again: moving each to the end on every datagram left an
 * insertion-ordered map's table two to four times its entries). Pure, clock-injected.
 *
 * One slot per member: its hex id, host and contact in arrays, its three times in a typed array
 * (the map holds the slot number). A record object per member with three boxed times cost about
 * 150 bytes of heap; the slot about 50. `get`, `all`, `admit` and `onEvict` hand out copies
 * (`MemberRecord`), read when called; the per-datagram path (`heard`) makes none.
 *
 * Its owner's view comes in with the components, fixed for the registry's life: failure
 * detection's verdict (`isDown`), the contacts to keep beyond capacity (`keep`), and who is told of
 * an eviction (`onEvict`).
 */
import type { Clock } from '@coral/runtime';
import { mergeContact, type Contact } from '../contact.js';
import { LIVE_WINDOW_MS, MAX_IDS_PER_IP, MAX_MEMBERS } from '../constants.js';
import { toHex } from '../id/id.js';
import { hostKey } from '../limits/address.js';
import { resized } from '../typed-arrays.js';

export interface MemberRecord {
  hex: string;
  host: string;
  contact: Contact;
  /** Clock time of the first round trip. */
  verifiedAt: number;
  /** Clock time of the last round-trip-verified datagram from it. */
  lastHeard: number;
  /** Clock time of the last failed RPC to it, if any. */
  failedAt?: number;
}

export interface PeerRegistryComponents {
  clock: Clock;
  /**
   * Failure detection's verdict, given when it runs (it alone then decides who is live): a member
   * it holds dead or departed is not live, however recently a datagram came from it (it comes
   * back only with a higher incarnation). Without it, liveness is the live window and failed RPCs.
   */
  isDown?: (hex: string) => boolean;
  /** Members to drop beyond capacity only when no other is left (the routing tables' contacts). */
  keep?: (contact: Contact) => boolean;
  /** Called for every member dropped (replaced at its IP, or beyond capacity). */
  onEvict?: (rec: MemberRecord) => void;
}

export interface PeerRegistryOptions {
  /** Default MAX_IDS_PER_IP (1). */
  maxIdsPerIp?: number;
  /** Default MAX_MEMBERS. */
  capacity?: number;
  /** Default LIVE_WINDOW_MS (120 s). */
  liveWindowMs?: number;
}

/** Slots the arrays start with (they grow by doubling). */
const INITIAL_SLOTS = 16;
/** Per slot in the times array: verifiedAt, lastHeard, failedAt (NaN: none). */
const VERIFIED = 0;
const HEARD = 1;
const FAILED = 2;

export class PeerRegistry {
  readonly maxIdsPerIp: number;
  readonly liveWindowMs: number;
  #clock: Clock;
  #capacity: number;
  /** hex → slot, in the order they were admitted. */
  #byId = new Map<string, number>();
  /** Per slot: hex id, host, contact (a freed slot keeps nothing). */
  #hex: string[] = [];
  #host: string[] = [];
  #contact: Array<Contact | undefined> = [];
  #times = new Float64Array(3 * INITIAL_SLOTS);
  #next = 0;
  #free: number[] = [];
  /**
   * host → the id (hex) admitted from it, or a short list of them (at most maxIdsPerIp) when
   * there are several: a lone id, the usual case, costs no array.
   */
  #byHost = new Map<string, string | string[]>();
  /** Newcomers refused because their IP already holds `maxIdsPerIp` live members. */
  refused = 0;
  /** Failure detection's verdict, when it runs (see `PeerRegistryComponents.isDown`). */
  readonly isDown: ((hex: string) => boolean) | undefined;
  readonly #keep: ((contact: Contact) => boolean) | undefined;
  readonly #onEvict: ((rec: MemberRecord) => void) | undefined;

  constructor(components: PeerRegistryComponents, options: PeerRegistryOptions = {}) {
    this.#clock = components.clock;
    this.isDown = components.isDown;
    this.#keep = components.keep;
    this.#onEvict = components.onEvict;
    this.maxIdsPerIp = options.maxIdsPerIp ?? MAX_IDS_PER_IP;
    this.#capacity = options.capacity ?? MAX_MEMBERS;
    this.liveWindowMs = options.liveWindowMs ?? LIVE_WINDOW_MS;
  }

  get size(): number {
    return this.#byId.size;
  }

  has(hex: string): boolean {
    return this.#byId.has(hex);
  }

  /** A copy of the member's record now, or undefined. */
  get(hex: string): MemberRecord | undefined {
    const s = this.#byId.get(hex);
    return s === undefined ? undefined : this.#record(s);
  }

  /** The member's contact, or undefined (no copy made). */
  contactOf(hex: string): Contact | undefined {
    const s = this.#byId.get(hex);
    return s === undefined ? undefined : this.#contact[s];
  }

  /** Every member's record (copies, read as iterated), in the order they were admitted. */
  *all(): IterableIterator<MemberRecord> {
    for (const s of this.#byId.values()) yield this.#record(s);
  }

  /** The live members' contacts, in the order they were admitted. */
  liveContacts(now = this.#clock.now()): Contact[] {
    const out: Contact[] = [];
    for (const s of this.#byId.values()) if (this.#live(s, now)) out.push(this.#contact[s]!);
    return out;
  }

  /**
   * Live: with failure detection running (`isDown` set), not dead or departed by its verdict — a
   * request that timed out on a busy member is no evidence of death, and each node's own timeouts
   * would give each node its own view of the fleet (the designated fetcher's choice needs one
   * view); its probes keep the verdict fresh however large the fleet. Without it: heard from
   * within the live window and no failed RPC since. A record no longer held is judged as copied.
   */
  isLive(rec: MemberRecord, now = this.#clock.now()): boolean {
    const s = this.#byId.get(rec.hex);
    if (s !== undefined) return this.#live(s, now);
    if (this.isDown) return !this.isDown(rec.hex);
    return (
      now - rec.lastHeard <= this.liveWindowMs &&
      (rec.failedAt === undefined || rec.failedAt < rec.lastHeard)
    );
  }

  /**
   * Record a round trip with `contact`, seen from `sourceIp` (default: its advertised IP; they differ
   * only behind a NAT, and then the source is what is counted). Returns a copy of its record, or
   * undefined when that IP is taken by live members (the contact must then be ignored everywhere).
   */
  admit(
    contact: Contact,
    hex = toHex(contact.id),
    sourceIp = contact.ip,
  ): MemberRecord | undefined {
    const s = this.#admit(contact, hex, sourceIp);
    return s < 0 ? undefined : this.#record(s);
  }

  /** `admit` without the copy (the per-datagram path): false when that IP is taken. */
  heard(contact: Contact, hex: string, sourceIp: string): boolean {
    return this.#admit(contact, hex, sourceIp) >= 0;
  }

  /** Note a failed RPC to a member. */
  noteFailure(hex: string): void {
    const s = this.#byId.get(hex);
    if (s !== undefined) this.#times[3 * s + FAILED] = this.#clock.now();
  }

  /** Drop a member (no onEvict call). */
  remove(hex: string): boolean {
    const s = this.#byId.get(hex);
    if (s === undefined) return false;
    this.#unlink(s);
    return true;
  }

  #admit(contact: Contact, hex: string, sourceIp: string): number {
    const now = this.#clock.now();
    const t = this.#times;
    const known = this.#byId.get(hex);
    if (known !== undefined) {
      t[3 * known + HEARD] = now;
      const old = this.#contact[known]!;
      if (old !== contact) {
        // A full sender replaces what was known; a minimal one (a trimmed answer) is merged in.
        const partial =
          (old.httpPort !== undefined && contact.httpPort === undefined) ||
          (old.dnsPort !== undefined && contact.dnsPort === undefined) ||
          (old.region !== undefined && contact.region === undefined) ||
          (old.clusters !== undefined && contact.clusters === undefined);
        this.#contact[known] = partial ? mergeContact(old, contact) : contact;
      }
      return known;
    }
    const host = hostKey(sourceIp);
    let ids = this.#byHost.get(host);
    if (ids !== undefined && idCount(ids) >= this.maxIdsPerIp) {
      let victim = -1;
      for (const h of typeof ids === 'string' ? [ids] : ids) {
        const v = this.#byId.get(h)!;
        if (!this.#live(v, now) && (victim < 0 || t[3 * v + HEARD]! < t[3 * victim + HEARD]!))
          victim = v;
      }
      if (victim < 0) {
        this.refused++;
        return -1;
      }
      this.#evict(victim);
      ids = this.#byHost.get(host);
    }
    const s = this.#slot();
    this.#hex[s] = hex;
    this.#host[s] = host;
    this.#contact[s] = contact;
    this.#times[3 * s + VERIFIED] = now;
    this.#times[3 * s + HEARD] = now;
    this.#times[3 * s + FAILED] = NaN;
    this.#byId.set(hex, s);
    if (ids === undefined) this.#byHost.set(host, hex);
    else if (typeof ids === 'string') this.#byHost.set(host, [ids, hex]);
    else ids.push(hex);
    if (this.#byId.size > this.#capacity) this.#evictBeyondCapacity(s);
    return s;
  }

  #live(s: number, now: number): boolean {
    if (this.isDown) return !this.isDown(this.#hex[s]!);
    const t = this.#times;
    const heard = t[3 * s + HEARD]!;
    const failed = t[3 * s + FAILED]!;
    // NaN (never failed) compares false, so `failed >= heard` is false for it.
    return now - heard <= this.liveWindowMs && !(failed >= heard);
  }

  #record(s: number): MemberRecord {
    const t = this.#times;
    const rec: MemberRecord = {
      hex: this.#hex[s]!,
      host: this.#host[s]!,
      contact: this.#contact[s]!,
      verifiedAt: t[3 * s + VERIFIED]!,
      lastHeard: t[3 * s + HEARD]!,
    };
    const failed = t[3 * s + FAILED]!;
    if (!Number.isNaN(failed)) rec.failedAt = failed;
    return rec;
  }

  /**
   * Beyond capacity: drop the least recently heard members other than `fresh`, those `keep` holds
   * on to last, at least the excess and up to capacity / 64 at once (one scan per batch).
   */
  #evictBeyondCapacity(fresh: number): void {
    const excess = this.#byId.size - this.#capacity;
    const batch = Math.max(excess, this.#capacity >> 6);
    const t = this.#times;
    const others: number[] = [];
    const kept: number[] = [];
    for (const s of this.#byId.values()) {
      if (s === fresh) continue;
      if (this.#keep?.(this.#contact[s]!)) kept.push(s);
      else others.push(s);
    }
    const byHeard = (a: number, b: number): number => t[3 * a + HEARD]! - t[3 * b + HEARD]!;
    let victims = others.sort(byHeard).slice(0, batch);
    if (victims.length < excess)
      victims = victims.concat(kept.sort(byHeard).slice(0, excess - victims.length));
    for (const v of victims) this.#evict(v);
  }

  #evict(s: number): void {
    const rec = this.#record(s);
    this.#unlink(s);
    this.#onEvict?.(rec);
  }

  #unlink(s: number): void {
    const hex = this.#hex[s]!;
    const host = this.#host[s]!;
    this.#byId.delete(hex);
    this.#hex[s] = '';
    this.#host[s] = '';
    this.#contact[s] = undefined;
    this.#free.push(s);
    const ids = this.#byHost.get(host);
    if (ids === undefined) return;
    if (typeof ids === 'string') {
      if (ids === hex) this.#byHost.delete(host);
      return;
    }
    const i = ids.indexOf(hex);
    if (i >= 0) ids.splice(i, 1);
    if (ids.length === 1) this.#byHost.set(host, ids[0]!);
    else if (ids.length === 0) this.#byHost.delete(host);
  }

  #slot(): number {
    const reused = this.#free.pop();
    if (reused !== undefined) return reused;
    const s = this.#next++;
    if (3 * s >= this.#times.length) {
      this.#times = resized(this.#times, 2 * this.#times.length);
    }
    return s;
  }
}

function idCount(ids: string | string[]): number {
  return typeof ids === 'string' ? 1 : ids.length;
}
