/**
 * The verified members this node knows: every node it has completed a round trip with (an answer
 * to its own request, or a request carrying this node's write token for the sender's address), at
 * most `maxIdsPerIp` per host (IPv4 address, IPv6 /64). Routing tables, the cluster module's view,
 * `members()` and the DNS directory all draw from it, so one IP can never pose as many nodes.
 *
 * A newcomer at a host already holding `maxIdsPerIp` ids takes the place of one that is no longer
 * live (not heard from within `liveWindowMs`, or failed since) — a node restarted on another port —
 * and is refused otherwise. Bounded: beyond `capacity` the least recently heard member is dropped
 * (found by a scan when the bound is reached: members keep their place in the map when heard
 * again — moving each to the end on every datagram left an insertion-ordered map's table two to
 * four times its entries, deleted slots waiting for a rehash). Pure, clock-injected.
 */
import type { Clock } from '@coral/testkit';
import { mergeContact, type Contact } from '../contact.js';
import { LIVE_WINDOW_MS, MAX_IDS_PER_IP, MAX_MEMBERS } from '../constants.js';
import { toHex } from '../id/id.js';
import { hostKey } from '../limits/address.js';

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

export interface PeerRegistryOptions {
  /** Default MAX_IDS_PER_IP (1). */
  maxIdsPerIp?: number;
  /** Default MAX_MEMBERS. */
  capacity?: number;
  /** Default LIVE_WINDOW_MS (120 s). */
  liveWindowMs?: number;
}

export class PeerRegistry {
  readonly maxIdsPerIp: number;
  readonly liveWindowMs: number;
  #clock: Clock;
  #capacity: number;
  /** hex → record, in the order they were admitted. */
  #byId = new Map<string, MemberRecord>();
  /**
   * host → the id (hex) admitted from it, or a short list of them (at most maxIdsPerIp) when
   * there are several: a lone id, the usual case, costs no array.
   */
  #byHost = new Map<string, string | string[]>();
  /** Called for every member dropped (replaced at its IP, or beyond capacity). */
  onEvict: ((rec: MemberRecord) => void) | undefined;
  /** Newcomers refused because their IP already holds `maxIdsPerIp` live members. */
  refused = 0;
  /**
   * Failure detection's verdict, set while it runs (it alone then decides who is live): a member
   * it holds dead or departed is not live, however recently a datagram came from it (it comes
   * back only with a higher incarnation).
   */
  isDown: ((hex: string) => boolean) | undefined;

  constructor(components: { clock: Clock }, options: PeerRegistryOptions = {}) {
    this.#clock = components.clock;
    this.maxIdsPerIp = options.maxIdsPerIp ?? MAX_IDS_PER_IP;
    this.#capacity = options.capacity ?? MAX_MEMBERS;
    this.liveWindowMs = options.liveWindowMs ?? LIVE_WINDOW_MS;
  }

  get size(): number {
    return this.#byId.size;
  }

  get(hex: string): MemberRecord | undefined {
    return this.#byId.get(hex);
  }

  /** Every record, in the order they were admitted. */
  all(): IterableIterator<MemberRecord> {
    return this.#byId.values();
  }

  /**
   * Live: with failure detection running (`isDown` set), not dead or departed by its verdict — a
   * request that timed out on a busy member is no evidence of death, and each node's own timeouts
   * would give each node its own view of the fleet (the designated fetcher's choice needs one
   * view); its probes keep the verdict fresh however large the fleet. Without it: heard from
   * within the live window and no failed RPC since.
   */
  isLive(rec: MemberRecord, now = this.#clock.now()): boolean {
    if (this.isDown) return !this.isDown(rec.hex);
    return (
      now - rec.lastHeard <= this.liveWindowMs &&
      (rec.failedAt === undefined || rec.failedAt < rec.lastHeard)
    );
  }

  /**
   * Record a round trip with `contact`, seen from `sourceIp` (default: its advertised IP; they differ
   * only behind a NAT, and then the source is what is counted). Returns its record, or undefined
   * when that IP is taken by live members (the contact must then be ignored everywhere).
   */
  admit(
    contact: Contact,
    hex = toHex(contact.id),
    sourceIp = contact.ip,
  ): MemberRecord | undefined {
    const now = this.#clock.now();
    const rec = this.#byId.get(hex);
    if (rec) {
      rec.lastHeard = now;
      const old = rec.contact;
      if (old !== contact) {
        // A full sender replaces what was known; a minimal one (a trimmed answer) is merged in.
        const partial =
          (old.httpPort !== undefined && contact.httpPort === undefined) ||
          (old.dnsPort !== undefined && contact.dnsPort === undefined) ||
          (old.region !== undefined && contact.region === undefined) ||
          (old.clusters !== undefined && contact.clusters === undefined);
        rec.contact = partial ? mergeContact(old, contact) : contact;
      }
      return rec;
    }
    const host = hostKey(sourceIp);
    let ids = this.#byHost.get(host);
    if (ids !== undefined && idCount(ids) >= this.maxIdsPerIp) {
      let victim: MemberRecord | undefined;
      for (const h of typeof ids === 'string' ? [ids] : ids) {
        const r = this.#byId.get(h)!;
        if (!this.isLive(r, now) && (!victim || r.lastHeard < victim.lastHeard)) victim = r;
      }
      if (!victim) {
        this.refused++;
        return undefined;
      }
      this.#evict(victim);
      ids = this.#byHost.get(host);
    }
    // Every field set here (failedAt too), so all records share one shape with in-object fields.
    const fresh: MemberRecord = {
      hex,
      host,
      contact,
      verifiedAt: now,
      lastHeard: now,
      failedAt: undefined,
    };
    this.#byId.set(hex, fresh);
    if (ids === undefined) this.#byHost.set(host, hex);
    else if (typeof ids === 'string') this.#byHost.set(host, [ids, hex]);
    else ids.push(hex);
    while (this.#byId.size > this.#capacity) this.#evict(this.#leastRecentlyHeard(fresh));
    return fresh;
  }

  /** Note a failed RPC to a member. */
  noteFailure(hex: string): void {
    const rec = this.#byId.get(hex);
    if (rec) rec.failedAt = this.#clock.now();
  }

  /** Drop a member (no onEvict call). */
  remove(hex: string): boolean {
    const rec = this.#byId.get(hex);
    if (!rec) return false;
    this.#unlink(rec);
    return true;
  }

  /** The member heard from longest ago, other than `keep` (the one just admitted). */
  #leastRecentlyHeard(keep: MemberRecord): MemberRecord {
    let oldest: MemberRecord | undefined;
    for (const r of this.#byId.values())
      if (r !== keep && (!oldest || r.lastHeard < oldest.lastHeard)) oldest = r;
    return oldest ?? keep;
  }

  #evict(rec: MemberRecord): void {
    this.#unlink(rec);
    this.onEvict?.(rec);
  }

  #unlink(rec: MemberRecord): void {
    this.#byId.delete(rec.hex);
    const ids = this.#byHost.get(rec.host);
    if (ids === undefined) return;
    if (typeof ids === 'string') {
      if (ids === rec.hex) this.#byHost.delete(rec.host);
      return;
    }
    const i = ids.indexOf(rec.hex);
    if (i >= 0) ids.splice(i, 1);
    if (ids.length === 1) this.#byHost.set(rec.host, ids[0]!);
    else if (ids.length === 0) this.#byHost.delete(rec.host);
  }
}

function idCount(ids: string | string[]): number {
  return typeof ids === 'string' ? 1 : ids.length;
}
