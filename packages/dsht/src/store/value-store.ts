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
 * Memory: a node may hold 100,000s of values, so each costs a few hundred bytes: one slot object
 * per (level, key) under a binary string, its values in a small array (no Map, no string per
 * value), the counters in the slot, and the key, publisher and value bytes copied into the
 * store's own slabs (./bytes.ts) — a value never keeps alive the buffer it arrived in (a datagram,
 * an encoder's shared output buffer), and each distinct publisher id is held once.
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
import { ByteSlabs, IdTable } from './bytes.js';

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

interface KeySlot {
  level: number;
  key: Id;
  /** In insertion order; at most `maxValuesPerKey`. */
  values: StoredValue[];
  /** Leaky bucket level and the time it was last drained. */
  bucket: number;
  bucketAt: number;
  /** Accepted stores and store requests (accepted or refused) since the slot was created. */
  accepted: number;
  requests: number;
}

/** Read-only counters by public slot key (`ValueStore.slotKey`), as the benches read them. */
export interface SlotCounters {
  get(slotKey: string): number | undefined;
  has(slotKey: string): boolean;
  readonly size: number;
}

/** Same entry of a slot (see `entryKey`)? */
function sameEntry(a: StoredValue, b: { publisher: Id; copy?: boolean; storedBy?: Id }): boolean {
  if ((a.copy === true) !== (b.copy === true) || !bytesEqual(a.publisher, b.publisher))
    return false;
  return !a.copy || bytesEqual(a.storedBy ?? a.publisher, b.storedBy ?? b.publisher);
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
  #slots = new Map<string, KeySlot>();
  #bytes = 0;
  #count = 0;
  #sources = new Map<string, { values: number; bytes: number }>();
  /** Store-owned copies of keys and values, and each distinct publisher/copier id once. */
  #slabs = new ByteSlabs();
  #ids = new IdTable();
  /** Called on every accepted store and every removal (persistence listens). */
  onChange: ((change: StoreChange) => void) | undefined;
  /** Accepted stores, by slot key `level:keyhex` (for the hot-key measurement). */
  readonly accepted: SlotCounters = this.#counters((s) => s.accepted);
  /** Store requests (accepted or refused) for keys that hold a slot here, by slot key. */
  readonly requests: SlotCounters = this.#counters((s) => s.requests);
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
    for (const s of this.#slots.values()) if (s.values.length > 0) n++;
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

  #slot(level: number, key: Id): KeySlot | undefined {
    return this.#slots.get(binaryKey(level, key));
  }

  #counters(pick: (s: KeySlot) => number): SlotCounters {
    const find = (slotKey: string): KeySlot | undefined => {
      const m = /^(\d+):([0-9a-f]+)$/.exec(slotKey);
      if (!m || m[2]!.length % 2 !== 0) return undefined;
      return this.#slot(Number(m[1]), fromHex(m[2]!));
    };
    const slots = this.#slots;
    return {
      get: (k) => {
        const s = find(k);
        return s && pick(s) > 0 ? pick(s) : undefined;
      },
      has: (k) => {
        const s = find(k);
        return s !== undefined && pick(s) > 0;
      },
      get size() {
        let n = 0;
        for (const s of slots.values()) if (pick(s) > 0) n++;
        return n;
      },
    };
  }

  /** Would a store of a value with `ttlSeconds` from `publisher` be refused as full? */
  isFull(level: number, key: Id, ttlSeconds: number, publisher?: Id, copy = false): boolean {
    const slot = this.#slot(level, key);
    if (!slot) return false;
    if (
      publisher &&
      !copy &&
      slot.values.some((v) => !v.copy && bytesEqual(v.publisher, publisher))
    )
      return false;
    const now = this.#clock.now();
    const half = (ttlSeconds * 1000) / 2;
    let long = 0;
    for (const v of slot.values) {
      if (v.copy && !copy) continue;
      if (v.expiresAt - now >= half) long++;
    }
    return long >= this.#l;
  }

  /** Is the key's leaky bucket full (more than β stores in the past window)? */
  isLoaded(level: number, key: Id): boolean {
    const slot = this.#slot(level, key);
    if (!slot) return false;
    this.#drain(slot);
    return slot.bucket + this.#window > this.#beta * this.#window;
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
    const slot = this.#slots.get(sk);
    if (slot) {
      slot.requests++;
      this.#drain(slot);
    }
    const copy = origin.copy === true;
    if (copy && slot?.values.some((v) => !v.copy && bytesEqual(v.publisher, publisher)))
      return StoreStatus.EXISTS;
    const entry = { publisher, copy, storedBy: origin.storedBy };
    const old = slot?.values.find((v) => sameEntry(v, entry));
    if (!old && this.isFull(level, key, ttlSeconds, undefined, copy)) return StoreStatus.FULL;
    if (slot && slot.bucket + this.#window > this.#beta * this.#window) return StoreStatus.LOADED;
    const size = value.length + STORE_ENTRY_OVERHEAD;
    const freed = old ? old.value.length + STORE_ENTRY_OVERHEAD : 0;
    if (this.#bytes - freed + size > this.#maxBytes) return StoreStatus.LIMIT;
    if (!old && this.#count >= this.#maxValues) return StoreStatus.LIMIT;
    const source = origin.source;
    if (source !== undefined) {
      const u = this.#sources.get(source);
      const sameSource = old?.source === source;
      const values = (u?.values ?? 0) + (old && sameSource ? 0 : 1);
      const bytes = (u?.bytes ?? 0) - (sameSource ? freed : 0) + size;
      if (values > this.#maxPerSource || bytes > this.#maxBytesPerSource) {
        this.quotaRefused++;
        return StoreStatus.LIMIT;
      }
    }
    let victim: StoredValue | undefined;
    if (!old && slot && slot.values.length >= this.#maxPerKey) {
      // Make room by dropping the value closest to expiry, if it expires sooner than the new one;
      // a copy only ever displaces another copy.
      const now = this.#clock.now();
      for (const v of slot.values) {
        if (copy && !v.copy) continue;
        if (!victim || v.expiresAt < victim.expiresAt) victim = v;
      }
      if (!victim || victim.expiresAt > now + ttlSeconds * 1000) return StoreStatus.LIMIT;
    }
    // Accepted: only now is any state created.
    const now = this.#clock.now();
    const target = slot ?? this.#newSlot(sk, level, key);
    if (!slot) target.requests++;
    if (victim) this.#delete(target, victim);
    const sv: StoredValue = {
      level,
      key: target.key,
      publisher: this.#ids.acquire(publisher),
      value: this.#slabs.copy(value),
      expiresAt: now + ttlSeconds * 1000,
      storedAt: now,
    };
    if (copy) {
      sv.copy = true;
      if (origin.storedBy) sv.storedBy = this.#ids.acquire(origin.storedBy);
    }
    if (source !== undefined) sv.source = source;
    if (old) this.#delete(target, old, false);
    this.#insert(target, sv);
    if (!copy) {
      // The original supersedes the copies of it.
      for (const v of target.values.slice()) {
        if (v.copy && bytesEqual(v.publisher, publisher)) this.#delete(target, v);
      }
    }
    target.bucket += this.#window;
    target.accepted++;
    this.onChange?.({ kind: 'put', value: sv });
    return StoreStatus.ACCEPTED;
  }

  /** Put back a value loaded from disk (no rules applied except expiry, caps and quotas). */
  restore(v: StoredValue): boolean {
    if (v.expiresAt <= this.#clock.now()) return false;
    const sk = binaryKey(v.level, v.key);
    const size = v.value.length + STORE_ENTRY_OVERHEAD;
    const slot = this.#slots.get(sk);
    const same = slot?.values.find((x) => sameEntry(x, v));
    if (slot && same) this.#delete(slot, same, false);
    if ((slot?.values.length ?? 0) >= this.#maxPerKey || this.#bytes + size > this.#maxBytes)
      return false;
    if (this.#count >= this.#maxValues) return false;
    if (v.source !== undefined) {
      const u = this.usage(v.source);
      if (u.values + 1 > this.#maxPerSource || u.bytes + size > this.#maxBytesPerSource)
        return false;
    }
    const target = slot ?? this.#newSlot(sk, v.level, v.key);
    const own: StoredValue = {
      ...v,
      key: target.key,
      publisher: this.#ids.acquire(v.publisher),
      value: this.#slabs.copy(v.value),
    };
    if (v.storedBy) own.storedBy = this.#ids.acquire(v.storedBy);
    this.#insert(target, own);
    return true;
  }

  /** Live values for a key at a level; a random subset of at most `max` when given. */
  get(level: number, key: Id, max?: number): StoredValue[] {
    const slot = this.#slot(level, key);
    if (!slot) return [];
    const now = this.#clock.now();
    const live = slot.values.filter((v) => v.expiresAt > now);
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
    for (const s of this.#slots.values())
      for (const v of s.values) if (v.expiresAt > now) out.push(v);
    return out;
  }

  /** Drop expired values and idle slots; returns how many values were removed. */
  sweep(): number {
    const now = this.#clock.now();
    let removed = 0;
    for (const [sk, slot] of this.#slots) {
      for (const v of slot.values.slice()) {
        if (v.expiresAt <= now) {
          this.#delete(slot, v);
          removed++;
        }
      }
      this.#drain(slot);
      if (slot.values.length === 0 && slot.bucket <= 0) this.#slots.delete(sk);
    }
    return removed;
  }

  #newSlot(sk: string, level: number, key: Id): KeySlot {
    const slot: KeySlot = {
      level,
      key: this.#slabs.copy(key),
      values: [],
      bucket: 0,
      bucketAt: this.#clock.now(),
      accepted: 0,
      requests: 0,
    };
    this.#slots.set(sk, slot);
    return slot;
  }

  #insert(slot: KeySlot, v: StoredValue): void {
    const size = v.value.length + STORE_ENTRY_OVERHEAD;
    // An exact-length array (push would reserve room for 17 values; most keys hold one).
    slot.values = slot.values.concat(v);
    this.#bytes += size;
    this.#count++;
    if (v.source !== undefined) {
      const u = this.#sources.get(v.source);
      if (u) {
        u.values++;
        u.bytes += size;
      } else this.#sources.set(v.source, { values: 1, bytes: size });
    }
  }

  #drain(slot: KeySlot): void {
    const now = this.#clock.now();
    // Units: a store adds `window`, the bucket leaks β per ms, capacity β·window (exact in integers).
    slot.bucket = Math.max(0, slot.bucket - (now - slot.bucketAt) * this.#beta);
    slot.bucketAt = now;
  }

  #delete(slot: KeySlot, v: StoredValue, notify = true): void {
    if (!slot.values.includes(v)) return;
    slot.values = slot.values.filter((x) => x !== v);
    this.#ids.release(v.publisher);
    if (v.storedBy) this.#ids.release(v.storedBy);
    const size = v.value.length + STORE_ENTRY_OVERHEAD;
    this.#bytes -= size;
    this.#count--;
    if (v.source !== undefined) {
      const u = this.#sources.get(v.source);
      if (u) {
        u.values--;
        u.bytes -= size;
        if (u.values <= 0) this.#sources.delete(v.source);
      }
    }
    if (notify) this.onChange?.({ kind: 'delete', value: v });
  }
}
