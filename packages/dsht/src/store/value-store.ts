/**
 * The values this node stores for others, keyed by (level, key, publisher), with Coral's rules:
 *
 * - *full*: `fullValues` (l = 4) values for the key whose remaining TTL is at least half the new
 *   value's TTL — a new publisher is refused, a publisher already present may still replace.
 *   (A first-hand newcomer counts only first-hand values: copies never crowd out originals.)
 * - *loaded*: a leaky bucket per (level, key) holding at most `loadedStores` (β = 12) accepted
 *   stores and draining β per `loadedWindowMs` (one minute). When it is full the key is loaded and
 *   stores are refused until it drains, so a loaded key accepts about one store every 5 s.
 * - a publisher's new value replaces its old one — and only its publisher can replace it: the
 *   caller passes the *authenticated* sender as publisher, never a name taken from a message;
 * - path-cached *copies* (`copy: true`) are kept apart, one per (copier, named publisher): a copy
 *   never replaces or displaces a first-hand value, and a first-hand value drops the copies of it;
 * - expiry by TTL (`sweep()`), hard caps on values per key, on total values and bytes, and per
 *   *source* (the storing node's host): at most `maxValuesPerSource` values and
 *   `maxBytesPerSource` bytes, so one source holds at most a small share of the store.
 *
 * A refused store changes nothing: no slot, no counter, no bucket is created for it.
 *
 * Memory: a node may hold 100,000s of values, so a value is no object at all. Each (level, key)
 * slot and each value is an index into typed arrays (times, offsets, lengths, counters, the
 * slot's linked list of values in insertion order), the key and value bytes live in one growable
 * byte arena (copied in: a value never keeps alive the buffer it arrived in), each distinct
 * publisher id is held once (./bytes.ts), and a slot is found by a binary string key. `get`,
 * `all` and `onChange` hand out `StoredValue` objects made on demand, whose bytes are views into
 * the arena: a region is never written again once used (growing and compaction copy into a new
 * buffer), so a view stays valid. Dead bytes are reclaimed at `sweep()` once they are over half
 * the arena. All arrays start empty and grow on demand.
 */
import type { Clock, Random } from '@coral/testkit';
import {
  FULL_VALUES,
  LOADED_STORES,
  LOADED_WINDOW_MS,
  MAX_BYTES_PER_SOURCE,
  MAX_STORE_BYTES,
  MAX_STORE_VALUES,
  MAX_VALUES_PER_KEY,
  MAX_VALUES_PER_SOURCE,
  STORE_ENTRY_OVERHEAD,
} from '../constants.js';
import { fromHex, toHex, type Id } from '../id/id.js';
import { StoreStatus, type WireValue } from '../wire/messages.js';
import { IdTable } from './bytes.js';

export interface StoredValue {
  level: number;
  key: Id;
  /** First-hand: the authenticated node that stored it. Copy: the publisher the copier named. */
  publisher: Id;
  value: Uint8Array;
  /** Clock time (ms) at which the value expires. */
  expiresAt: number;
  /** Clock time (ms) it was stored. */
  storedAt: number;
  /** A path-cached copy. */
  copy?: boolean;
  /** Copies: the authenticated node that stored the copy. */
  storedBy?: Id;
  /** Host the store came from (quota accounting); absent for this node's own values. */
  source?: string;
}

export interface ValueStoreComponents {
  clock: Clock;
  random?: Random;
}

export interface ValueStoreOptions {
  /** Coral's l. Default FULL_VALUES (4). */
  fullValues?: number;
  /** Coral's β. Default LOADED_STORES (12). */
  loadedStores?: number;
  /** Leak window. Default LOADED_WINDOW_MS (60 s). */
  loadedWindowMs?: number;
  /** Default MAX_VALUES_PER_KEY (64). */
  maxValuesPerKey?: number;
  /** Default MAX_STORE_BYTES (64 MiB). */
  maxBytes?: number;
  /** Default MAX_STORE_VALUES (131,072). */
  maxValues?: number;
  /** Values one source may hold. Default MAX_VALUES_PER_SOURCE (8,192). */
  maxValuesPerSource?: number;
  /** Bytes one source may hold. Default MAX_BYTES_PER_SOURCE (4 MiB). */
  maxBytesPerSource?: number;
}

/** How a value reached the store. */
export interface StoreOrigin {
  /** The storing node's host (quota accounting); omit for this node's own values. */
  source?: string;
  /** A path-cached copy stored by `storedBy` (then `publisher` is the one it named). */
  copy?: boolean;
  storedBy?: Id;
}

/** Read-only counters by public slot key (`ValueStore.slotKey`), as the benches read them. */
export interface SlotCounters {
  get(slotKey: string): number | undefined;
  has(slotKey: string): boolean;
  readonly size: number;
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Internal slot key: the level as one char, then the key's bytes as latin1 chars. */
function binaryKey(level: number, key: Id): string {
  return (
    String.fromCharCode(level) +
    Buffer.from(key.buffer, key.byteOffset, key.length).toString('latin1')
  );
}

export interface StoreChange {
  kind: 'put' | 'delete';
  value: StoredValue;
}

/** A stored value as a GET answer carries it, with its remaining TTL (at least 1 s). */
export function toWireValue(v: StoredValue, now: number): WireValue {
  const w: WireValue = {
    publisher: v.publisher,
    value: v.value,
    ttl: Math.max(1, Math.floor((v.expiresAt - now) / 1000)),
  };
  if (v.copy) w.copy = true;
  return w;
}

/** The key of a value inside its slot: the publisher, or copier and named publisher for a copy. */
export function entryKey(v: { publisher: Id; copy?: boolean; storedBy?: Id }): string {
  return v.copy ? `c${toHex(v.storedBy ?? v.publisher)}${toHex(v.publisher)}` : toHex(v.publisher);
}

/** Record flags. */
const COPY = 1;
const LIVE = 2;
/** No record / slot. */
const NIL = -1;

// Shared empty arrays: a store starts with nothing allocated (`grown` replaces them on first use,
// never writing into them), so a node that stores nothing pays for no capacity.
const NO_F64 = new Float64Array(0);
const NO_U32 = new Uint32Array(0);
const NO_I32 = new Int32Array(0);
const NO_U8 = new Uint8Array(0);

/** A typed array at least `n` long: `a` itself, or a copy of it twice as long (or more). */
function grown<T extends Float64Array | Uint32Array | Int32Array | Uint8Array>(a: T, n: number): T {
  if (a.length >= n) return a;
  const out = new (a.constructor as new (n: number) => T)(Math.max(16, n, a.length * 2));
  out.set(a);
  return out;
}

/**
 * Bytes appended into one growable buffer. A region is never written again once handed out:
 * growing or compacting copies into a new buffer, so views given out earlier stay valid.
 */
class Arena {
  buf = NO_U8;
  used = 0;
  /** Bytes of regions no longer in use (reclaimed by `compact`). */
  dead = 0;

  /** Append `bytes`; returns the offset. */
  append(bytes: Uint8Array): number {
    if (this.used + bytes.length > this.buf.length) {
      const next = new Uint8Array(Math.max(4096, Math.ceil((this.used + bytes.length) * 1.5)));
      next.set(this.buf.subarray(0, this.used));
      this.buf = next;
    }
    const at = this.used;
    this.buf.set(bytes, at);
    this.used += bytes.length;
    return at;
  }

  view(off: number, len: number): Uint8Array {
    return this.buf.subarray(off, off + len);
  }
}

export class ValueStore {
  #clock: Clock;
  #random: Random | undefined;
  #l: number;
  #beta: number;
  #window: number;
  #maxPerKey: number;
  #maxBytes: number;
  #maxValues: number;
  #maxPerSource: number;
  #maxBytesPerSource: number;
  #bytes = 0;
  #count = 0;
  #sources = new Map<string, { values: number; bytes: number }>();
  /** Keys' and values' bytes. */
  #arena = new Arena();
  /** Each distinct publisher/copier id once. */
  #ids = new IdTable();

  // Slots, one per (level, key): by index, in typed arrays; `#slotIndex` finds one by binary key.
  #slotIndex = new Map<string, number>();
  #slotFree: number[] = [];
  #slotCount = 0;
  #sLevel = NO_U8;
  #sKeyOff = NO_U32;
  #sKeyLen = NO_U8;
  /** First and last record of the slot (insertion order), NIL when none. */
  #sHead = NO_I32;
  #sTail = NO_I32;
  #sValues = NO_U32;
  /** Leaky bucket level and the time it was last drained. */
  #sBucket = NO_F64;
  #sBucketAt = NO_F64;
  /** Accepted stores and store requests (accepted or refused) since the slot was created. */
  #sAccepted = NO_U32;
  #sRequests = NO_U32;

  // Values, by record index, in typed arrays (ids and sources as references to shared objects).
  #recFree: number[] = [];
  #recCount = 0;
  #rExpires = NO_F64;
  #rStored = NO_F64;
  #rValOff = NO_U32;
  #rValLen = NO_U32;
  #rSlot = NO_I32;
  #rNext = NO_I32;
  #rFlags = NO_U8;
  #rPublisher: Array<Id | undefined> = [];
  #rStoredBy: Array<Id | undefined> = [];
  #rSource: Array<string | undefined> = [];

  /** Called on every accepted store and every removal (persistence listens). */
  onChange: ((change: StoreChange) => void) | undefined;
  /** Accepted stores, by slot key `level:keyhex` (for the hot-key measurement). */
  readonly accepted: SlotCounters = this.#counters((s) => this.#sAccepted[s]!);
  /** Store requests (accepted or refused) for keys that hold a slot here, by slot key. */
  readonly requests: SlotCounters = this.#counters((s) => this.#sRequests[s]!);
  /** Stores refused by a per-source quota. */
  quotaRefused = 0;

  constructor(components: ValueStoreComponents, options: ValueStoreOptions = {}) {
    this.#clock = components.clock;
    this.#random = components.random;
    this.#l = options.fullValues ?? FULL_VALUES;
    this.#beta = options.loadedStores ?? LOADED_STORES;
    this.#window = options.loadedWindowMs ?? LOADED_WINDOW_MS;
    this.#maxPerKey = options.maxValuesPerKey ?? MAX_VALUES_PER_KEY;
    this.#maxBytes = options.maxBytes ?? MAX_STORE_BYTES;
    this.#maxValues = options.maxValues ?? MAX_STORE_VALUES;
    this.#maxPerSource = options.maxValuesPerSource ?? MAX_VALUES_PER_SOURCE;
    this.#maxBytesPerSource = options.maxBytesPerSource ?? MAX_BYTES_PER_SOURCE;
  }

  get size(): number {
    return this.#count;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** Number of distinct (level, key) slots holding values. */
  get keyCount(): number {
    let n = 0;
    for (const s of this.#slotIndex.values()) if (this.#sValues[s]! > 0) n++;
    return n;
  }

  /** Values and bytes held for one source host. */
  usage(source: string): { values: number; bytes: number } {
    const u = this.#sources.get(source);
    return { values: u?.values ?? 0, bytes: u?.bytes ?? 0 };
  }

  /** Sources holding values here, largest first. */
  sources(): Array<{ source: string; values: number; bytes: number }> {
    return [...this.#sources]
      .map(([source, u]) => ({ source, ...u }))
      .sort((a, b) => b.bytes - a.bytes);
  }

  /** Public name of a (level, key) slot: `level:keyhex`. */
  static slotKey(level: number, key: Id): string {
    return `${level}:${toHex(key)}`;
  }

  #slot(level: number, key: Id): number {
    return this.#slotIndex.get(binaryKey(level, key)) ?? NIL;
  }

  #counters(pick: (s: number) => number): SlotCounters {
    const find = (slotKey: string): number => {
      const m = /^(\d+):([0-9a-f]+)$/.exec(slotKey);
      if (!m || m[2]!.length % 2 !== 0) return NIL;
      return this.#slot(Number(m[1]), fromHex(m[2]!));
    };
    const slots = this.#slotIndex;
    return {
      get: (k) => {
        const s = find(k);
        return s !== NIL && pick(s) > 0 ? pick(s) : undefined;
      },
      has: (k) => {
        const s = find(k);
        return s !== NIL && pick(s) > 0;
      },
      get size() {
        let n = 0;
        for (const s of slots.values()) if (pick(s) > 0) n++;
        return n;
      },
    };
  }

  /** The slot's first-hand record from `publisher`, or NIL. */
  #firstHand(s: number, publisher: Id): number {
    for (let r = this.#sHead[s]!; r !== NIL; r = this.#rNext[r]!) {
      if (!(this.#rFlags[r]! & COPY) && bytesEqual(this.#rPublisher[r]!, publisher)) return r;
    }
    return NIL;
  }

  /** The slot's record for this entry (see `entryKey`), or NIL. */
  #entry(s: number, publisher: Id, copy: boolean, storedBy: Id | undefined): number {
    for (let r = this.#sHead[s]!; r !== NIL; r = this.#rNext[r]!) {
      const isCopy = (this.#rFlags[r]! & COPY) !== 0;
      if (isCopy !== copy || !bytesEqual(this.#rPublisher[r]!, publisher)) continue;
      if (!isCopy) return r;
      const by = this.#rStoredBy[r] ?? this.#rPublisher[r]!;
      if (bytesEqual(by, storedBy ?? publisher)) return r;
    }
    return NIL;
  }

  /** Would a store of a value with `ttlSeconds` from `publisher` be refused as full? */
  isFull(level: number, key: Id, ttlSeconds: number, publisher?: Id, copy = false): boolean {
    const s = this.#slot(level, key);
    return s !== NIL && this.#isFull(s, ttlSeconds, publisher, copy);
  }

  #isFull(s: number, ttlSeconds: number, publisher: Id | undefined, copy: boolean): boolean {
    if (publisher && !copy && this.#firstHand(s, publisher) !== NIL) return false;
    const now = this.#clock.now();
    const half = (ttlSeconds * 1000) / 2;
    let long = 0;
    for (let r = this.#sHead[s]!; r !== NIL; r = this.#rNext[r]!) {
      if (this.#rFlags[r]! & COPY && !copy) continue;
      if (this.#rExpires[r]! - now >= half) long++;
    }
    return long >= this.#l;
  }

  /** Is the key's leaky bucket full (more than β stores in the past window)? */
  isLoaded(level: number, key: Id): boolean {
    const s = this.#slot(level, key);
    if (s === NIL) return false;
    this.#drain(s);
    return this.#loaded(s);
  }

  #loaded(s: number): boolean {
    return this.#sBucket[s]! + this.#window > this.#beta * this.#window;
  }

  /** The forward phase's question: `{ full, loaded }` for this key and TTL. */
  probe(
    level: number,
    key: Id,
    ttlSeconds: number,
    publisher?: Id,
  ): { full: boolean; loaded: boolean } {
    return {
      full: this.isFull(level, key, ttlSeconds, publisher),
      loaded: this.isLoaded(level, key),
    };
  }

  /**
   * Try to store; returns the wire status (ACCEPTED or why not). `publisher` must be the
   * authenticated sender (or, for a copy, the publisher the copier named).
   */
  store(
    level: number,
    key: Id,
    publisher: Id,
    value: Uint8Array,
    ttlSeconds: number,
    origin: StoreOrigin = {},
  ): StoreStatus {
    const sk = binaryKey(level, key);
    const slot = this.#slotIndex.get(sk) ?? NIL;
    if (slot !== NIL) {
      this.#sRequests[slot]!++;
      this.#drain(slot);
    }
    const copy = origin.copy === true;
    if (copy && slot !== NIL && this.#firstHand(slot, publisher) !== NIL) return StoreStatus.EXISTS;
    const old = slot === NIL ? NIL : this.#entry(slot, publisher, copy, origin.storedBy);
    if (old === NIL && slot !== NIL && this.#isFull(slot, ttlSeconds, undefined, copy))
      return StoreStatus.FULL;
    if (slot !== NIL && this.#loaded(slot)) return StoreStatus.LOADED;
    const size = value.length + STORE_ENTRY_OVERHEAD;
    const freed = old !== NIL ? this.#rValLen[old]! + STORE_ENTRY_OVERHEAD : 0;
    if (this.#bytes - freed + size > this.#maxBytes) return StoreStatus.LIMIT;
    if (old === NIL && this.#count >= this.#maxValues) return StoreStatus.LIMIT;
    const source = origin.source;
    if (source !== undefined) {
      const u = this.#sources.get(source);
      const sameSource = old !== NIL && this.#rSource[old] === source;
      const values = (u?.values ?? 0) + (sameSource ? 0 : 1);
      const bytes = (u?.bytes ?? 0) - (sameSource ? freed : 0) + size;
      if (values > this.#maxPerSource || bytes > this.#maxBytesPerSource) {
        this.quotaRefused++;
        return StoreStatus.LIMIT;
      }
    }
    let victim = NIL;
    if (old === NIL && slot !== NIL && this.#sValues[slot]! >= this.#maxPerKey) {
      // Make room by dropping the value closest to expiry, if it expires sooner than the new one;
      // a copy only ever displaces another copy.
      const now = this.#clock.now();
      for (let r = this.#sHead[slot]!; r !== NIL; r = this.#rNext[r]!) {
        if (copy && !(this.#rFlags[r]! & COPY)) continue;
        if (victim === NIL || this.#rExpires[r]! < this.#rExpires[victim]!) victim = r;
      }
      if (victim === NIL || this.#rExpires[victim]! > now + ttlSeconds * 1000)
        return StoreStatus.LIMIT;
    }
    // Accepted: only now is any state created.
    const now = this.#clock.now();
    const target = slot !== NIL ? slot : this.#newSlot(sk, level, key);
    if (slot === NIL) this.#sRequests[target]!++;
    if (victim !== NIL) this.#delete(victim);
    const r = this.#newRecord(
      target,
      publisher,
      value,
      now + ttlSeconds * 1000,
      now,
      copy,
      copy ? origin.storedBy : undefined,
      source,
    );
    if (old !== NIL) this.#delete(old, false);
    this.#link(target, r);
    if (!copy) {
      // The original supersedes the copies of it.
      for (let c = this.#sHead[target]!; c !== NIL;) {
        const next = this.#rNext[c]!;
        if (this.#rFlags[c]! & COPY && bytesEqual(this.#rPublisher[c]!, publisher)) this.#delete(c);
        c = next;
      }
    }
    this.#sBucket[target]! += this.#window;
    this.#sAccepted[target]!++;
    this.onChange?.({ kind: 'put', value: this.#view(r) });
    return StoreStatus.ACCEPTED;
  }

  /** Put back a value loaded from disk (no rules applied except expiry, caps and quotas). */
  restore(v: StoredValue): boolean {
    if (v.expiresAt <= this.#clock.now()) return false;
    const sk = binaryKey(v.level, v.key);
    const size = v.value.length + STORE_ENTRY_OVERHEAD;
    const slot = this.#slotIndex.get(sk) ?? NIL;
    if (slot !== NIL) {
      const same = this.#entry(slot, v.publisher, v.copy === true, v.storedBy);
      if (same !== NIL) this.#delete(same, false);
    }
    if (
      (slot !== NIL ? this.#sValues[slot]! : 0) >= this.#maxPerKey ||
      this.#bytes + size > this.#maxBytes
    )
      return false;
    if (this.#count >= this.#maxValues) return false;
    if (v.source !== undefined) {
      const u = this.usage(v.source);
      if (u.values + 1 > this.#maxPerSource || u.bytes + size > this.#maxBytesPerSource)
        return false;
    }
    const target = slot !== NIL ? slot : this.#newSlot(sk, v.level, v.key);
    const r = this.#newRecord(
      target,
      v.publisher,
      v.value,
      v.expiresAt,
      v.storedAt,
      v.copy === true,
      v.storedBy,
      v.source,
    );
    this.#link(target, r);
    return true;
  }

  /** Live values for a key at a level; a random subset of at most `max` when given. */
  get(level: number, key: Id, max?: number): StoredValue[] {
    const s = this.#slot(level, key);
    if (s === NIL) return [];
    const now = this.#clock.now();
    const live: StoredValue[] = [];
    for (let r = this.#sHead[s]!; r !== NIL; r = this.#rNext[r]!)
      if (this.#rExpires[r]! > now) live.push(this.#view(r));
    if (max === undefined || live.length <= max) return live;
    // Partial Fisher-Yates for a random subset.
    const rnd = this.#random;
    for (let i = 0; i < max; i++) {
      const j =
        i + (rnd ? rnd.int(live.length - i) : Math.floor(Math.random() * (live.length - i)));
      [live[i], live[j]] = [live[j]!, live[i]!];
    }
    return live.slice(0, max);
  }

  /** Every live value (for persistence and snapshots). */
  all(): StoredValue[] {
    const now = this.#clock.now();
    const out: StoredValue[] = [];
    for (const s of this.#slotIndex.values())
      for (let r = this.#sHead[s]!; r !== NIL; r = this.#rNext[r]!)
        if (this.#rExpires[r]! > now) out.push(this.#view(r));
    return out;
  }

  /** Drop expired values and idle slots; returns how many values were removed. */
  sweep(): number {
    const now = this.#clock.now();
    let removed = 0;
    for (const [sk, s] of this.#slotIndex) {
      for (let r = this.#sHead[s]!; r !== NIL;) {
        const next = this.#rNext[r]!;
        if (this.#rExpires[r]! <= now) {
          this.#delete(r);
          removed++;
        }
        r = next;
      }
      this.#drain(s);
      if (this.#sValues[s] === 0 && this.#sBucket[s]! <= 0) {
        this.#slotIndex.delete(sk);
        this.#arena.dead += this.#sKeyLen[s]!;
        this.#slotFree.push(s);
      }
    }
    this.#compact();
    return removed;
  }

  /** The value of record `r` as a `StoredValue` (its bytes are views into the store's arena). */
  #view(r: number): StoredValue {
    const s = this.#rSlot[r]!;
    const arena = this.#arena;
    const v: StoredValue = {
      level: this.#sLevel[s]!,
      key: arena.view(this.#sKeyOff[s]!, this.#sKeyLen[s]!),
      publisher: this.#rPublisher[r]!,
      value: arena.view(this.#rValOff[r]!, this.#rValLen[r]!),
      expiresAt: this.#rExpires[r]!,
      storedAt: this.#rStored[r]!,
    };
    if (this.#rFlags[r]! & COPY) {
      v.copy = true;
      const by = this.#rStoredBy[r];
      if (by) v.storedBy = by;
    }
    const source = this.#rSource[r];
    if (source !== undefined) v.source = source;
    return v;
  }

  #newSlot(sk: string, level: number, key: Id): number {
    let s = this.#slotFree.pop();
    if (s === undefined) {
      s = this.#slotCount++;
      const n = this.#slotCount;
      this.#sLevel = grown(this.#sLevel, n);
      this.#sKeyOff = grown(this.#sKeyOff, n);
      this.#sKeyLen = grown(this.#sKeyLen, n);
      this.#sHead = grown(this.#sHead, n);
      this.#sTail = grown(this.#sTail, n);
      this.#sValues = grown(this.#sValues, n);
      this.#sBucket = grown(this.#sBucket, n);
      this.#sBucketAt = grown(this.#sBucketAt, n);
      this.#sAccepted = grown(this.#sAccepted, n);
      this.#sRequests = grown(this.#sRequests, n);
    }
    this.#sLevel[s] = level;
    this.#sKeyOff[s] = this.#arena.append(key);
    this.#sKeyLen[s] = key.length;
    this.#sHead[s] = NIL;
    this.#sTail[s] = NIL;
    this.#sValues[s] = 0;
    this.#sBucket[s] = 0;
    this.#sBucketAt[s] = this.#clock.now();
    this.#sAccepted[s] = 0;
    this.#sRequests[s] = 0;
    this.#slotIndex.set(sk, s);
    return s;
  }

  /** A new record (not yet linked into its slot's list), counted in bytes, count and quota. */
  #newRecord(
    s: number,
    publisher: Id,
    value: Uint8Array,
    expiresAt: number,
    storedAt: number,
    copy: boolean,
    storedBy: Id | undefined,
    source: string | undefined,
  ): number {
    let r = this.#recFree.pop();
    if (r === undefined) {
      r = this.#recCount++;
      const n = this.#recCount;
      this.#rExpires = grown(this.#rExpires, n);
      this.#rStored = grown(this.#rStored, n);
      this.#rValOff = grown(this.#rValOff, n);
      this.#rValLen = grown(this.#rValLen, n);
      this.#rSlot = grown(this.#rSlot, n);
      this.#rNext = grown(this.#rNext, n);
      this.#rFlags = grown(this.#rFlags, n);
    }
    this.#rExpires[r] = expiresAt;
    this.#rStored[r] = storedAt;
    this.#rValOff[r] = this.#arena.append(value);
    this.#rValLen[r] = value.length;
    this.#rSlot[r] = s;
    this.#rNext[r] = NIL;
    this.#rFlags[r] = LIVE | (copy ? COPY : 0);
    this.#rPublisher[r] = this.#ids.acquire(publisher);
    this.#rStoredBy[r] = storedBy ? this.#ids.acquire(storedBy) : undefined;
    this.#rSource[r] = source;
    const size = value.length + STORE_ENTRY_OVERHEAD;
    this.#bytes += size;
    this.#count++;
    if (source !== undefined) {
      const u = this.#sources.get(source);
      if (u) {
        u.values++;
        u.bytes += size;
      } else this.#sources.set(source, { values: 1, bytes: size });
    }
    return r;
  }

  /** Append record `r` to its slot's list (insertion order). */
  #link(s: number, r: number): void {
    const tail = this.#sTail[s]!;
    if (tail === NIL) this.#sHead[s] = r;
    else this.#rNext[tail] = r;
    this.#sTail[s] = r;
    this.#sValues[s]!++;
  }

  #drain(s: number): void {
    const now = this.#clock.now();
    // Units: a store adds `window`, the bucket leaks β per ms, capacity β·window (exact in integers).
    this.#sBucket[s] = Math.max(0, this.#sBucket[s]! - (now - this.#sBucketAt[s]!) * this.#beta);
    this.#sBucketAt[s] = now;
  }

  /** Remove record `r` (from its slot's list when linked) and free it. */
  #delete(r: number, notify = true): void {
    if (!(this.#rFlags[r]! & LIVE)) return;
    const value = notify && this.onChange ? this.#view(r) : undefined;
    const s = this.#rSlot[r]!;
    let prev = NIL;
    for (let c = this.#sHead[s]!; c !== NIL && c !== r; c = this.#rNext[c]!) prev = c;
    const next = this.#rNext[r]!;
    if (prev === NIL) {
      if (this.#sHead[s] === r) this.#sHead[s] = next;
    } else this.#rNext[prev] = next;
    if (this.#sTail[s] === r) this.#sTail[s] = prev;
    this.#sValues[s]!--;
    this.#ids.release(this.#rPublisher[r]!);
    const by = this.#rStoredBy[r];
    if (by) this.#ids.release(by);
    const len = this.#rValLen[r]!;
    const size = len + STORE_ENTRY_OVERHEAD;
    this.#bytes -= size;
    this.#count--;
    const source = this.#rSource[r];
    if (source !== undefined) {
      const u = this.#sources.get(source);
      if (u) {
        u.values--;
        u.bytes -= size;
        if (u.values <= 0) this.#sources.delete(source);
      }
    }
    this.#arena.dead += len;
    this.#rFlags[r] = 0;
    this.#rPublisher[r] = undefined;
    this.#rStoredBy[r] = undefined;
    this.#rSource[r] = undefined;
    this.#recFree.push(r);
    if (value) this.onChange?.({ kind: 'delete', value });
  }

  /**
   * Copy the live keys and values into a new arena once more than half of it is dead (views
   * handed out earlier keep the old one alive until they are dropped).
   */
  #compact(): void {
    const old = this.#arena;
    if (old.dead < ARENA_COMPACT_MIN || old.dead * 2 < old.used) return;
    const fresh = new Arena();
    for (const s of this.#slotIndex.values())
      this.#sKeyOff[s] = fresh.append(old.view(this.#sKeyOff[s]!, this.#sKeyLen[s]!));
    for (let r = 0; r < this.#recCount; r++)
      if (this.#rFlags[r]! & LIVE)
        this.#rValOff[r] = fresh.append(old.view(this.#rValOff[r]!, this.#rValLen[r]!));
    this.#arena = fresh;
  }
}

/** Dead arena bytes below which the store never compacts. */
const ARENA_COMPACT_MIN = 64 * 1024;
