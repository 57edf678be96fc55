/**
 * The values this node stores for others, keyed by (level, key, publisher), with Coral's rules:
 *
 * - *full*: `fullValues` (l = 4) values for the key whose remaining TTL is at least half the new
 *   value's TTL — a new publisher is refused, a publisher already present may still replace.
 * - *loaded*: a leaky bucket per (level, key) holding at most `loadedStores` (β = 12) accepted
 *   stores and draining β per `loadedWindowMs` (one minute). When it is full the key is loaded and
 *   stores are refused until it drains, so a loaded key accepts about one store every 5 s.
 * - a publisher's new value replaces its old one;
 * - expiry by TTL (`sweep()`), hard caps on values per key and on total bytes.
 */
import type { Clock, Random } from '@coral/testkit';
import {
  FULL_VALUES,
  LOADED_STORES,
  LOADED_WINDOW_MS,
  MAX_STORE_BYTES,
  MAX_VALUES_PER_KEY,
  STORE_ENTRY_OVERHEAD,
} from '../constants.js';
import { toHex, type Id } from '../id/id.js';
import { StoreStatus } from '../wire/messages.js';

export interface StoredValue {
  level: number;
  key: Id;
  publisher: Id;
  value: Uint8Array;
  /** Clock time (ms) at which the value expires. */
  expiresAt: number;
  /** Clock time (ms) it was stored. */
  storedAt: number;
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
}

interface KeySlot {
  level: number;
  key: Id;
  values: Map<string, StoredValue>;
  /** Leaky bucket level and the time it was last drained. */
  bucket: number;
  bucketAt: number;
}

export interface StoreChange {
  kind: 'put' | 'delete';
  value: StoredValue;
}

export class ValueStore {
  #clock: Clock;
  #random: Random | undefined;
  #l: number;
  #beta: number;
  #window: number;
  #maxPerKey: number;
  #maxBytes: number;
  #slots = new Map<string, KeySlot>();
  #bytes = 0;
  #count = 0;
  /** Called on every accepted store and every removal (persistence listens). */
  onChange: ((change: StoreChange) => void) | undefined;
  /** Accepted stores, by slot key `level:keyhex` (for the hot-key measurement). */
  readonly accepted = new Map<string, number>();
  /** Store requests (accepted or refused), by slot key. */
  readonly requests = new Map<string, number>();

  constructor(components: ValueStoreComponents, options: ValueStoreOptions = {}) {
    this.#clock = components.clock;
    this.#random = components.random;
    this.#l = options.fullValues ?? FULL_VALUES;
    this.#beta = options.loadedStores ?? LOADED_STORES;
    this.#window = options.loadedWindowMs ?? LOADED_WINDOW_MS;
    this.#maxPerKey = options.maxValuesPerKey ?? MAX_VALUES_PER_KEY;
    this.#maxBytes = options.maxBytes ?? MAX_STORE_BYTES;
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
    for (const s of this.#slots.values()) if (s.values.size > 0) n++;
    return n;
  }

  static slotKey(level: number, key: Id): string {
    return `${level}:${toHex(key)}`;
  }

  /** Would a store of a value with `ttlSeconds` from `publisher` be refused as full? */
  isFull(level: number, key: Id, ttlSeconds: number, publisher?: Id): boolean {
    const slot = this.#slots.get(ValueStore.slotKey(level, key));
    if (!slot) return false;
    if (publisher && slot.values.has(toHex(publisher))) return false;
    const now = this.#clock.now();
    const half = (ttlSeconds * 1000) / 2;
    let long = 0;
    for (const v of slot.values.values()) if (v.expiresAt - now >= half) long++;
    return long >= this.#l;
  }

  /** Is the key's leaky bucket full (more than β stores in the past window)? */
  isLoaded(level: number, key: Id): boolean {
    const slot = this.#slots.get(ValueStore.slotKey(level, key));
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

  /** Try to store; returns the wire status (ACCEPTED or why not). */
  store(level: number, key: Id, publisher: Id, value: Uint8Array, ttlSeconds: number): StoreStatus {
    const sk = ValueStore.slotKey(level, key);
    this.requests.set(sk, (this.requests.get(sk) ?? 0) + 1);
    let slot = this.#slots.get(sk);
    if (!slot) {
      slot = { level, key, values: new Map(), bucket: 0, bucketAt: this.#clock.now() };
      this.#slots.set(sk, slot);
    }
    this.#drain(slot);
    const pub = toHex(publisher);
    const old = slot.values.get(pub);
    if (!old && this.isFull(level, key, ttlSeconds)) return StoreStatus.FULL;
    if (slot.bucket + this.#window > this.#beta * this.#window) return StoreStatus.LOADED;
    const size = value.length + STORE_ENTRY_OVERHEAD;
    const freed = old ? old.value.length + STORE_ENTRY_OVERHEAD : 0;
    if (this.#bytes - freed + size > this.#maxBytes) return StoreStatus.LIMIT;
    if (!old && slot.values.size >= this.#maxPerKey) {
      // Make room by dropping the value closest to expiry, if it expires sooner than the new one.
      const now = this.#clock.now();
      let victim: StoredValue | undefined;
      for (const v of slot.values.values())
        if (!victim || v.expiresAt < victim.expiresAt) victim = v;
      if (!victim || victim.expiresAt > now + ttlSeconds * 1000) return StoreStatus.LIMIT;
      this.#delete(slot, victim);
    }
    const now = this.#clock.now();
    const sv: StoredValue = {
      level,
      key,
      publisher,
      value,
      expiresAt: now + ttlSeconds * 1000,
      storedAt: now,
    };
    if (old) this.#delete(slot, old, false);
    slot.values.set(pub, sv);
    this.#bytes += size;
    this.#count++;
    slot.bucket += this.#window;
    this.accepted.set(sk, (this.accepted.get(sk) ?? 0) + 1);
    this.onChange?.({ kind: 'put', value: sv });
    return StoreStatus.ACCEPTED;
  }

  /** Put back a value loaded from disk (no rules applied except expiry and caps). */
  restore(v: StoredValue): boolean {
    if (v.expiresAt <= this.#clock.now()) return false;
    const sk = ValueStore.slotKey(v.level, v.key);
    let slot = this.#slots.get(sk);
    if (!slot) {
      slot = {
        level: v.level,
        key: v.key,
        values: new Map(),
        bucket: 0,
        bucketAt: this.#clock.now(),
      };
      this.#slots.set(sk, slot);
    }
    const size = v.value.length + STORE_ENTRY_OVERHEAD;
    if (slot.values.size >= this.#maxPerKey || this.#bytes + size > this.#maxBytes) return false;
    const old = slot.values.get(toHex(v.publisher));
    if (old) this.#delete(slot, old, false);
    slot.values.set(toHex(v.publisher), v);
    this.#bytes += size;
    this.#count++;
    return true;
  }

  /** Live values for a key at a level; a random subset of at most `max` when given. */
  get(level: number, key: Id, max?: number): StoredValue[] {
    const slot = this.#slots.get(ValueStore.slotKey(level, key));
    if (!slot) return [];
    const now = this.#clock.now();
    const live = [...slot.values.values()].filter((v) => v.expiresAt > now);
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
      for (const v of s.values.values()) if (v.expiresAt > now) out.push(v);
    return out;
  }

  /** Drop expired values and idle slots; returns how many values were removed. */
  sweep(): number {
    const now = this.#clock.now();
    let removed = 0;
    for (const [sk, slot] of this.#slots) {
      for (const v of [...slot.values.values()]) {
        if (v.expiresAt <= now) {
          this.#delete(slot, v);
          removed++;
        }
      }
      this.#drain(slot);
      if (slot.values.size === 0 && slot.bucket <= 0) {
        this.#slots.delete(sk);
        this.accepted.delete(sk);
        this.requests.delete(sk);
      }
    }
    return removed;
  }

  #drain(slot: KeySlot): void {
    const now = this.#clock.now();
    // Units: a store adds `window`, the bucket leaks β per ms, capacity β·window (exact in integers).
    slot.bucket = Math.max(0, slot.bucket - (now - slot.bucketAt) * this.#beta);
    slot.bucketAt = now;
  }

  #delete(slot: KeySlot, v: StoredValue, notify = true): void {
    const pub = toHex(v.publisher);
    if (slot.values.get(pub) !== v) return;
    slot.values.delete(pub);
    this.#bytes -= v.value.length + STORE_ENTRY_OVERHEAD;
    this.#count--;
    if (notify) this.onChange?.({ kind: 'delete', value: v });
  }
}
