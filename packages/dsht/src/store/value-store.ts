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
 * slot's linked list of values in insertion order, free lists chained through the same arrays),
 * the key and value bytes live in a chunked byte arena (./arena.ts; copied in: a value never
 * keeps alive the buffer it arrived in), each distinct publisher id and source host is held once
 * and referred to by index (./bytes.ts), and a slot is found through an open-addressing hash table
 * in typed arrays (./slot-index.ts). `get`, `all` and `onChange` hand out `StoredValue` objects
 * made on demand, whose bytes are views into the arena: a region is never written again once
 * used (compaction copies into new chunks), so a view stays valid. Dead bytes are reclaimed at
 * `sweep()` once they are over half the arena. All arrays start empty and grow by half on demand.
 * Values over one arena chunk (256 KiB; the wire's limit is far below) are refused (LIMIT).
 */
import type { Clock, Random } from '@coral/runtime';
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
import { Arena, MAX_REGION_BYTES } from './arena.js';
import { IdTable, SourceTable } from './bytes.js';
import { SlotIndex } from './slot-index.js';
import { resized } from '../typed-arrays.js';

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
  /** Called on every accepted store and every removal (persistence writes them through). */
  onChange?: (change: StoreChange) => void;
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

/** Record and slot flags. */
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

/** A typed array at least `n` long: `a` itself, or a copy of it half as long again (or more). */
function grown<T extends Float64Array | Uint32Array | Int32Array | Uint8Array>(a: T, n: number): T {
  if (a.length >= n) return a;
  return resized(a, Math.max(16, n, Math.ceil(a.length * 1.5)));
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
  #sources = new SourceTable();
  /** Keys' and values' bytes. */
  #arena = new Arena();
  /** Each distinct publisher/copier id once. */
  #ids = new IdTable();

  // Slots, one per (level, key): by index, in typed arrays; `#index` finds one by level and key.
  #index = new SlotIndex({ matches: (s, level, key) => this.#matches(s, level, key) });
  /** Free slots, chained through `#sHead`. */
  #slotFree = NIL;
  #slotCount = 0;
  #sFlags = NO_U8;
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

  // Values, by record index, in typed arrays; ids and sources by their tables' indexes.
  /** Free records, chained through `#rNext`. */
  #recFree = NIL;
  #recCount = 0;
  #rExpires = NO_F64;
  #rStored = NO_F64;
  #rValOff = NO_U32;
  #rValLen = NO_U32;
  #rSlot = NO_I32;
  #rNext = NO_I32;
  #rFlags = NO_U8;
  #rPublisher = NO_I32;
  /** Copies: the copier's id index; NIL for first-hand values. */
  #rStoredBy = NO_I32;
  /** Source index; NIL for this node's own values. */
  #rSource = NO_I32;

  readonly #onChange: ((change: StoreChange) => void) | undefined;
  /** Accepted stores, by slot key `level:keyhex` (for the hot-key measurement). */
  readonly accepted: SlotCounters = this.#counters((s) => this.#sAccepted[s]!);
  /** Store requests (accepted or refused) for keys that hold a slot here, by slot key. */
  readonly requests: SlotCounters = this.#counters((s) => this.#sRequests[s]!);
  /** Stores refused by a per-source quota. */
  quotaRefused = 0;

  constructor(components: ValueStoreComponents, options: ValueStoreOptions = {}) {
    this.#clock = components.clock;
    this.#random = components.random;
    this.#onChange = components.onChange;
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
    for (let s = 0; s < this.#slotCount; s++) if (this.#sValues[s]! > 0) n++;
    return n;
  }

  /** Values and bytes held for one source host. */
  usage(source: string): { values: number; bytes: number } {
    const i = this.#sources.find(source);
    return i === NIL
      ? { values: 0, bytes: 0 }
      : { values: this.#sources.values[i]!, bytes: this.#sources.bytes[i]! };
  }

  /** Sources holding values here, largest first. */
  sources(): Array<{ source: string; values: number; bytes: number }> {
    return [...this.#sources.entries()].sort((a, b) => b.bytes - a.bytes);
  }

  /**
   * Memory the store's structures hold (bytes): the arena's chunks, the typed arrays and the slot
   * index (not the small id and source tables).
   */
  get footprint(): {
    arena: number;
    arenaUsed: number;
    slots: number;
    records: number;
    index: number;
  } {
    const len = (...a: Array<{ byteLength: number }>): number =>
      a.reduce((n, x) => n + x.byteLength, 0);
    return {
      arena: this.#arena.capacity,
      arenaUsed: this.#arena.used - this.#arena.dead,
      slots: len(
        this.#sFlags,
        this.#sLevel,
        this.#sKeyOff,
        this.#sKeyLen,
        this.#sHead,
        this.#sTail,
        this.#sValues,
        this.#sBucket,
        this.#sBucketAt,
        this.#sAccepted,
        this.#sRequests,
      ),
      records: len(
        this.#rExpires,
        this.#rStored,
        this.#rValOff,
        this.#rValLen,
        this.#rSlot,
        this.#rNext,
        this.#rFlags,
        this.#rPublisher,
        this.#rStoredBy,
        this.#rSource,
      ),
      index: this.#index.capacity * 8,
    };
  }

  /** Public name of a (level, key) slot: `level:keyhex`. */
  static slotKey(level: number, key: Id): string {
    return `${level}:${toHex(key)}`;
  }

  #matches(s: number, level: number, key: Uint8Array): boolean {
    return (
      this.#sLevel[s] === level &&
      this.#sKeyLen[s] === key.length &&
      this.#arena.equals(this.#sKeyOff[s]!, key)
    );
  }

  #slot(level: number, key: Id): number {
    return this.#index.find(level, key);
  }

  #counters(pick: (s: number) => number): SlotCounters {
    const find = (slotKey: string): number => {
      const m = /^(\d+):([0-9a-f]+)$/.exec(slotKey);
      if (!m || m[2]!.length % 2 !== 0) return NIL;
      return this.#slot(Number(m[1]), fromHex(m[2]!));
    };
    const slots = (): number => this.#slotCount;
    const live = (s: number): boolean => (this.#sFlags[s]! & LIVE) !== 0;
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
        for (let s = 0, end = slots(); s < end; s++) if (live(s) && pick(s) > 0) n++;
        return n;
      },
    };
  }

  #publisherIs(r: number, id: Id): boolean {
    return bytesEqual(this.#ids.get(this.#rPublisher[r]!), id);
  }

  /** The slot's first-hand record from `publisher`, or NIL. */
  #firstHand(s: number, publisher: Id): number {
    for (let r = this.#sHead[s]!; r !== NIL; r = this.#rNext[r]!) {
      if (!(this.#rFlags[r]! & COPY) && this.#publisherIs(r, publisher)) return r;
    }
    return NIL;
  }

  /** The slot's record for this entry (see `entryKey`), or NIL. */
  #entry(s: number, publisher: Id, copy: boolean, storedBy: Id | undefined): number {
    for (let r = this.#sHead[s]!; r !== NIL; r = this.#rNext[r]!) {
      const isCopy = (this.#rFlags[r]! & COPY) !== 0;
      if (isCopy !== copy || !this.#publisherIs(r, publisher)) continue;
      if (!isCopy) return r;
      const byIndex = this.#rStoredBy[r]!;
      const by = byIndex === NIL ? this.#ids.get(this.#rPublisher[r]!) : this.#ids.get(byIndex);
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
    const slot = this.#slot(level, key);
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
    if (value.length > MAX_REGION_BYTES || key.length > MAX_KEY_BYTES) return StoreStatus.LIMIT;
    const size = value.length + STORE_ENTRY_OVERHEAD;
    const freed = old !== NIL ? this.#rValLen[old]! + STORE_ENTRY_OVERHEAD : 0;
    if (this.#bytes - freed + size > this.#maxBytes) return StoreStatus.LIMIT;
    if (old === NIL && this.#count >= this.#maxValues) return StoreStatus.LIMIT;
    const source = origin.source;
    if (source !== undefined) {
      const si = this.#sources.find(source);
      const sameSource = old !== NIL && si !== NIL && this.#rSource[old] === si;
      const values = (si === NIL ? 0 : this.#sources.values[si]!) + (sameSource ? 0 : 1);
      const bytes = (si === NIL ? 0 : this.#sources.bytes[si]!) - (sameSource ? freed : 0) + size;
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
    const target = slot !== NIL ? slot : this.#newSlot(level, key);
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
        if (this.#rFlags[c]! & COPY && this.#publisherIs(c, publisher)) this.#delete(c);
        c = next;
      }
    }
    this.#sBucket[target]! += this.#window;
    this.#sAccepted[target]!++;
    this.#onChange?.({ kind: 'put', value: this.#view(r) });
    return StoreStatus.ACCEPTED;
  }

  /** Has `v` expired by the store's clock? */
  isExpired(v: { expiresAt: number }): boolean {
    return v.expiresAt <= this.#clock.now();
  }

  /** Put back a value loaded from disk (no rules applied except expiry, caps and quotas). */
  restore(v: StoredValue): boolean {
    if (v.expiresAt <= this.#clock.now()) return false;
    if (v.value.length > MAX_REGION_BYTES || v.key.length > MAX_KEY_BYTES) return false;
    const size = v.value.length + STORE_ENTRY_OVERHEAD;
    const slot = this.#slot(v.level, v.key);
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
    const target = slot !== NIL ? slot : this.#newSlot(v.level, v.key);
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
    for (let s = 0; s < this.#slotCount; s++) {
      if (!(this.#sFlags[s]! & LIVE)) continue;
      for (let r = this.#sHead[s]!; r !== NIL; r = this.#rNext[r]!)
        if (this.#rExpires[r]! > now) out.push(this.#view(r));
    }
    return out;
  }

  /** Drop expired values and idle slots; returns how many values were removed. */
  sweep(): number {
    const now = this.#clock.now();
    let removed = 0;
    for (let s = 0; s < this.#slotCount; s++) {
      if (!(this.#sFlags[s]! & LIVE)) continue;
      for (let r = this.#sHead[s]!; r !== NIL;) {
        const next = this.#rNext[r]!;
        if (this.#rExpires[r]! <= now) {
          this.#delete(r);
          removed++;
        }
        r = next;
      }
      this.#drain(s);
      if (this.#sValues[s] === 0 && this.#sBucket[s]! <= 0) this.#freeSlot(s);
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
      publisher: this.#ids.get(this.#rPublisher[r]!),
      value: arena.view(this.#rValOff[r]!, this.#rValLen[r]!),
      expiresAt: this.#rExpires[r]!,
      storedAt: this.#rStored[r]!,
    };
    if (this.#rFlags[r]! & COPY) {
      v.copy = true;
      const by = this.#rStoredBy[r]!;
      if (by !== NIL) v.storedBy = this.#ids.get(by);
    }
    const source = this.#rSource[r]!;
    if (source !== NIL) v.source = this.#sources.name(source);
    return v;
  }

  #newSlot(level: number, key: Id): number {
    let s = this.#slotFree;
    if (s !== NIL) this.#slotFree = this.#sHead[s]!;
    else {
      s = this.#slotCount++;
      const n = this.#slotCount;
      this.#sFlags = grown(this.#sFlags, n);
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
    this.#sFlags[s] = LIVE;
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
    this.#index.insert(level, key, s);
    return s;
  }

  /** Drop an empty slot from the index and put it on the free list. */
  #freeSlot(s: number): void {
    const len = this.#sKeyLen[s]!;
    this.#index.remove(this.#sLevel[s]!, this.#arena.view(this.#sKeyOff[s]!, len));
    this.#arena.dead += len;
    this.#sFlags[s] = 0;
    this.#sHead[s] = this.#slotFree;
    this.#slotFree = s;
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
    let r = this.#recFree;
    if (r !== NIL) this.#recFree = this.#rNext[r]!;
    else {
      r = this.#recCount++;
      const n = this.#recCount;
      this.#rExpires = grown(this.#rExpires, n);
      this.#rStored = grown(this.#rStored, n);
      this.#rValOff = grown(this.#rValOff, n);
      this.#rValLen = grown(this.#rValLen, n);
      this.#rSlot = grown(this.#rSlot, n);
      this.#rNext = grown(this.#rNext, n);
      this.#rFlags = grown(this.#rFlags, n);
      this.#rPublisher = grown(this.#rPublisher, n);
      this.#rStoredBy = grown(this.#rStoredBy, n);
      this.#rSource = grown(this.#rSource, n);
    }
    const size = value.length + STORE_ENTRY_OVERHEAD;
    this.#rExpires[r] = expiresAt;
    this.#rStored[r] = storedAt;
    this.#rValOff[r] = this.#arena.append(value);
    this.#rValLen[r] = value.length;
    this.#rSlot[r] = s;
    this.#rNext[r] = NIL;
    this.#rFlags[r] = LIVE | (copy ? COPY : 0);
    this.#rPublisher[r] = this.#ids.acquire(publisher);
    this.#rStoredBy[r] = storedBy ? this.#ids.acquire(storedBy) : NIL;
    let si = NIL;
    if (source !== undefined) {
      si = this.#sources.add(source);
      this.#sources.count(si, size, 1);
    }
    this.#rSource[r] = si;
    this.#bytes += size;
    this.#count++;
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
    const value = notify && this.#onChange ? this.#view(r) : undefined;
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
    const by = this.#rStoredBy[r]!;
    if (by !== NIL) this.#ids.release(by);
    const len = this.#rValLen[r]!;
    const size = len + STORE_ENTRY_OVERHEAD;
    this.#bytes -= size;
    this.#count--;
    const source = this.#rSource[r]!;
    if (source !== NIL) this.#sources.count(source, size, -1);
    this.#arena.dead += len;
    this.#rFlags[r] = 0;
    this.#rNext[r] = this.#recFree;
    this.#recFree = r;
    if (value) this.#onChange?.({ kind: 'delete', value });
  }

  /**
   * Copy the live keys and values into a new arena once more than half of it is dead (views
   * handed out earlier keep the old chunks alive until they are dropped).
   */
  #compact(): void {
    const old = this.#arena;
    if (old.dead < ARENA_COMPACT_MIN || old.dead * 2 < old.used) return;
    const fresh = new Arena();
    for (let s = 0; s < this.#slotCount; s++)
      if (this.#sFlags[s]! & LIVE)
        this.#sKeyOff[s] = fresh.append(old.view(this.#sKeyOff[s]!, this.#sKeyLen[s]!));
    for (let r = 0; r < this.#recCount; r++)
      if (this.#rFlags[r]! & LIVE)
        this.#rValOff[r] = fresh.append(old.view(this.#rValOff[r]!, this.#rValLen[r]!));
    this.#arena = fresh;
  }
}

/** Dead arena bytes below which the store never compacts. */
const ARENA_COMPACT_MIN = 64 * 1024;
/** Longest key the store holds (its length is kept in a byte); ids are 20 bytes. */
const MAX_KEY_BYTES = 255;
