/**
 * Where each member's admin API listens, as the member itself says: its **admin record**, a DSHT
 * value it publishes under its own key,
 *
 *   key   = SHA-1("admin:" + <node id, 40 hex digits>)
 *   value = MessagePack [version = 1, nodeId: bin(20), adminPort: uint]
 *
 * Fleet-wide admin operations (purges, ACME values: peer/requests.ts) reach a member at the
 * address the fleet verified it at and the port of its record — never at this node's own admin
 * port, which is the member's only when the fleet happens to give every member the same one (two
 * nodes on one machine cannot). A record is believed only when its DSHT publisher is the member
 * itself (keyed mode: the authenticated sender that stored it, dsht's value store) and the node id
 * inside is the member's; its address is never read from it. A member without a record (not
 * published yet, an older version) is *not reached*: its operation fails, it is never counted done.
 *
 * Each node publishes its record at start (alone, in its own store, where the first member to join
 * finds it), again when it meets its first member and whenever its membership has doubled since
 * (the nodes closest to the key change as the fleet grows; dsht's put walks again once it knows a
 * node nearer the key than where it last stored, so the record leaves the first node's own store
 * for the nodes other members' gets ask), every {@link ADMIN_RECORD_REFRESH_MS}, and every
 * {@link ADMIN_RECORD_CHECK_MS} after a put that failed; the TTL ({@link ADMIN_RECORD_TTL_SECONDS})
 * outlives two refreshes. For a fleet-wide change (`patient`), a lookup that finds no record
 * looks again {@link ADMIN_RECORD_LOOKUP_RETRIES} times, a check period apart (a member that
 * joined a moment ago publishes within one); the purge catch-up does not wait (its next round
 * looks again). Found ports are used for {@link ADMIN_RECORD_CACHE_MS} without a
 * lookup, and after that whenever a lookup finds nothing (the last word of the member itself); a
 * caller whose request to a port failed asks again with `fresh` (the member may have restarted on
 * another port), which drops a port no lookup confirms.
 */
import { createHash } from 'node:crypto';
import { Packr } from 'msgpackr';
import type { Clock, TimerHandle } from '@coral/runtime';
import type { Logger } from 'pino';
import type { PeerMember } from '../peer/requests.js';

export const ADMIN_RECORD_VERSION = 1;
/** Lifetime of a published record. */
export const ADMIN_RECORD_TTL_SECONDS = 900;
/** Period of the re-publication. */
export const ADMIN_RECORD_REFRESH_MS = 5 * 60_000;
/** Period of the check whether to publish (a member met, membership doubled, a put failed). */
export const ADMIN_RECORD_CHECK_MS = 1_000;
/** Lookups again, a check period apart, when a member's record is not found. */
export const ADMIN_RECORD_LOOKUP_RETRIES = 2;
/** How long a looked-up port is used without asking the DSHT again. */
export const ADMIN_RECORD_CACHE_MS = 60_000;
/** Members whose looked-up ports are kept (the oldest entry goes first). */
export const ADMIN_RECORD_CACHE_MAX = 4_096;

const packr = new Packr({ useRecords: false, mapsAsObjects: true });

/** The DSHT key of a node's admin record. */
export function adminRecordKey(nodeId: string): Uint8Array {
  return new Uint8Array(createHash('sha1').update(`admin:${nodeId.toLowerCase()}`).digest());
}

export function encodeAdminRecord(r: { nodeId: string; adminPort: number }): Uint8Array {
  const bytes = packr.pack([ADMIN_RECORD_VERSION, Buffer.from(r.nodeId, 'hex'), r.adminPort]);
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
}

/** A record's fields, or undefined when the bytes are not one (values are written by others). */
export function decodeAdminRecord(
  bytes: Uint8Array,
): { nodeId: string; adminPort: number } | undefined {
  let raw: unknown;
  try {
    raw = packr.unpack(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length));
  } catch {
    return undefined;
  }
  if (!Array.isArray(raw) || raw.length !== 3) return undefined;
  const [version, id, port] = raw as unknown[];
  if (version !== ADMIN_RECORD_VERSION) return undefined;
  if (!(id instanceof Uint8Array) || id.length !== 20) return undefined;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65_535) {
    return undefined;
  }
  return { nodeId: Buffer.from(id).toString('hex'), adminPort: port };
}

/** What this module reads and writes of the DSHT (`Dsht.get` gives each value's publisher). */
export interface AdminRecordStore {
  get(
    key: Uint8Array,
    opts?: { signal?: AbortSignal },
  ): Promise<{ records?: ReadonlyArray<{ publisher: Uint8Array; value: Uint8Array }> }>;
  put(key: Uint8Array, value: Uint8Array, ttlSeconds: number): Promise<unknown>;
  members(): readonly unknown[];
}

export interface AdminRecordsComponents {
  dsht: AdminRecordStore;
  clock: Clock;
  logger?: Pick<Logger, 'debug' | 'warn'>;
}

export interface AdminRecordsOptions {
  /** This node's id (hex) and the port its admin API listens on. */
  nodeId: string;
  adminPort: number;
  refreshMs?: number;
  cacheMs?: number;
}

export class AdminRecords {
  readonly #dsht: AdminRecordStore;
  readonly #clock: Clock;
  readonly #logger: AdminRecordsComponents['logger'];
  readonly #nodeId: string;
  readonly #adminPort: number;
  readonly #refreshMs: number;
  readonly #cacheMs: number;
  /** node id → looked-up port and until when it is used (Map order: oldest first). */
  readonly #cache = new Map<string, { port: number; until: number }>();
  #timer: TimerHandle | undefined;
  #stopped = false;
  /** Members when the record was last published (undefined: not yet) and when. */
  #publishedFor: number | undefined;
  #publishedAt = 0;
  #failing = false;

  constructor(components: AdminRecordsComponents, options: AdminRecordsOptions) {
    this.#dsht = components.dsht;
    this.#clock = components.clock;
    this.#logger = components.logger;
    this.#nodeId = options.nodeId;
    this.#adminPort = options.adminPort;
    this.#refreshMs = options.refreshMs ?? ADMIN_RECORD_REFRESH_MS;
    this.#cacheMs = options.cacheMs ?? ADMIN_RECORD_CACHE_MS;
  }

  /** Check now and every {@link ADMIN_RECORD_CHECK_MS} whether to publish, until {@link stop}. */
  start(): void {
    const tick = () => {
      if (this.#stopped) return;
      void this.#check().finally(() => {
        if (!this.#stopped) this.#timer = this.#clock.setTimeout(tick, ADMIN_RECORD_CHECK_MS);
      });
    };
    tick();
  }

  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
  }

  async #check(): Promise<void> {
    const n = this.#dsht.members().length;
    const due =
      this.#publishedFor === undefined ||
      n >= 2 * this.#publishedFor + (this.#publishedFor === 0 ? 1 : 0) ||
      this.#clock.now() - this.#publishedAt >= this.#refreshMs;
    if (!due) return;
    if (await this.publish()) {
      this.#publishedFor = n;
      this.#publishedAt = this.#clock.now();
    }
  }

  /** Put this node's record; false (and logged) when no node took it. */
  async publish(): Promise<boolean> {
    const value = encodeAdminRecord({ nodeId: this.#nodeId, adminPort: this.#adminPort });
    try {
      await this.#dsht.put(adminRecordKey(this.#nodeId), value, ADMIN_RECORD_TTL_SECONDS);
      this.#failing = false;
      return true;
    } catch (err) {
      // Tried again every check: at warn once, then at debug until a put succeeds.
      const level = this.#failing ? 'debug' : 'warn';
      this.#failing = true;
      this.#logger?.[level]?.(
        { err },
        'admin record not published: members may not reach this node',
      );
      return false;
    }
  }

  /**
   * The admin port `member` published, or undefined when no record of its own is found. `fresh`
   * skips the cache (a request to the cached port failed); `patient` looks again
   * {@link ADMIN_RECORD_LOOKUP_RETRIES} times, a check period apart, before giving up.
   */
  async port(
    member: PeerMember,
    opts: { fresh?: boolean; patient?: boolean; signal?: AbortSignal } = {},
  ): Promise<number | undefined> {
    const id = member.nodeId.toLowerCase();
    const now = this.#clock.now();
    const cached = this.#cache.get(id);
    if (cached && cached.until > now && !opts.fresh) return cached.port;
    let found = await this.#lookup(id, opts.signal);
    const retries = opts.patient ? ADMIN_RECORD_LOOKUP_RETRIES : 0;
    for (let n = 0; found === undefined && n < retries; n++) {
      if (opts.signal?.aborted || this.#stopped) break;
      await new Promise<void>((r) => this.#clock.setTimeout(r, ADMIN_RECORD_CHECK_MS));
      found = await this.#lookup(id, opts.signal);
    }
    if (found === undefined) {
      // The DSHT did not answer (a busy fleet, a lookup that timed out): the member's last known
      // port is still its own word, unless a request to it has just failed (`fresh`).
      if (cached && !opts.fresh) return cached.port;
      this.#cache.delete(id);
      return undefined;
    }
    this.#cache.delete(id);
    this.#cache.set(id, { port: found, until: this.#clock.now() + this.#cacheMs });
    while (this.#cache.size > ADMIN_RECORD_CACHE_MAX) {
      this.#cache.delete(this.#cache.keys().next().value!);
    }
    return found;
  }

  /** One DSHT get of the member's record: its port when a record of its own is there. */
  async #lookup(id: string, signal: AbortSignal | undefined): Promise<number | undefined> {
    try {
      const r = await this.#dsht.get(adminRecordKey(id), signal ? { signal } : {});
      for (const rec of r.records ?? []) {
        if (Buffer.from(rec.publisher).toString('hex') !== id) continue;
        const decoded = decodeAdminRecord(rec.value);
        if (decoded?.nodeId === id) return decoded.adminPort;
      }
    } catch (err) {
      this.#logger?.debug?.({ err, member: id }, 'admin record lookup failed');
    }
    return undefined;
  }
}
