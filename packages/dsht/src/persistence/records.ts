/**
 * Value records in the node's LevelDB, as bytes (pure codec; ./persistence.ts does the I/O).
 *
 * Key (binary): `v` 0x01 | level u8 | key length u8 | key | kind u8 (0 first-hand, 1 copy) |
 *   publisher length u8 | publisher | for a copy: copier length u8 | copier
 * Value (binary): expiresAt f64 LE | storedAt f64 LE | source: 0 (this node's own value) or
 *   1 | length u8 | host (utf8) | the value's bytes (the rest of the record)
 *
 * A record of 100 value bytes takes ~150 bytes on disk before compression, against ~290 for the
 * earlier layout (utf8 `v!<level>!<keyhex>!<entry>` keys and JSON with the value in base64), and
 * loads without a JSON parse or a base64 decode. The prefix `v` 0x01 sorts apart from that
 * layout's `v!` keys, which are still read (`decodeLegacyValue`) and rewritten on load.
 */
import { fromHex } from '../id/id.js';
import { ByteSlabs } from '../store/bytes.js';
import type { StoredValue } from '../store/value-store.js';

/** First bytes of every binary value record's key, and the end of their range. */
export const VALUE_PREFIX = Uint8Array.of(0x76, 0x01);
export const VALUE_PREFIX_END = Uint8Array.of(0x76, 0x02);
/** Key range of the earlier layout's value records (utf8). */
export const LEGACY_VALUE_RANGE = { gte: 'v!', lt: 'v~' } as const;
/** Source of persisted values written before sources were recorded: they share one quota. */
export const LEGACY_SOURCE = 'legacy';

const FIRST_HAND = 0;
const COPY = 1;
const OWN = 0;
const FROM_SOURCE = 1;
const utf8 = new TextEncoder();
const utf8Strict = new TextDecoder('utf-8', { fatal: true });

/** Where an encoder gets its output bytes: a new array by default, or a caller's slab. */
export type Alloc = (n: number) => Uint8Array;
const fresh: Alloc = (n) => new Uint8Array(n);

/**
 * Slabs for the records of write batches: the records go into a few shared 256 KiB buffers
 * (which malloc maps on their own and returns whole once they are dropped) instead of two small
 * buffers each, which would be scattered over malloc's heap and leave it fragmented.
 */
export function recordSlabs(): ByteSlabs {
  return new ByteSlabs({ slabBytes: 256 * 1024, maxCopy: 256 * 1024 });
}

/** The record key of a value: one per (level, key, entry). */
export function encodeValueKey(v: StoredValue, alloc: Alloc = fresh): Uint8Array {
  const by = v.copy ? (v.storedBy ?? v.publisher) : undefined;
  const n = 2 + 2 + v.key.length + 2 + v.publisher.length + (by ? 1 + by.length : 0);
  const out = alloc(n);
  out.set(VALUE_PREFIX, 0);
  let at = 2;
  out[at++] = v.level;
  at = putShort(out, at, v.key);
  out[at++] = by ? COPY : FIRST_HAND;
  at = putShort(out, at, v.publisher);
  if (by) putShort(out, at, by);
  return out;
}

/** The record's value: times, source and the value's bytes. */
export function encodeValueRecord(v: StoredValue, alloc: Alloc = fresh): Uint8Array {
  const src = v.source === undefined ? undefined : utf8.encode(v.source);
  if (src && src.length > 255) throw new RangeError('source host over 255 bytes');
  const out = alloc(17 + (src ? 1 + src.length : 0) + v.value.length);
  const dv = new DataView(out.buffer, out.byteOffset, out.byteLength);
  dv.setFloat64(0, v.expiresAt, true);
  dv.setFloat64(8, v.storedAt, true);
  let at = 16;
  if (src) {
    out[at++] = FROM_SOURCE;
    at = putShort(out, at, src);
  } else out[at++] = OWN;
  out.set(v.value, at);
  return out;
}

/**
 * A binary record back into a value, or undefined when it is damaged. The value's byte fields are
 * views into `key` and `rec` (a store copies what it keeps).
 */
export function decodeValue(key: Uint8Array, rec: Uint8Array): StoredValue | undefined {
  const k = new Reader(key, VALUE_PREFIX.length);
  for (let i = 0; i < VALUE_PREFIX.length; i++) if (key[i] !== VALUE_PREFIX[i]) return undefined;
  const level = k.u8();
  const id = k.short();
  const kind = k.u8();
  const publisher = k.short();
  const storedBy = kind === COPY ? k.short() : undefined;
  if (!k.ok || !k.done || (kind !== FIRST_HAND && kind !== COPY)) return undefined;
  if (rec.length < 17) return undefined;
  const dv = new DataView(rec.buffer, rec.byteOffset, rec.byteLength);
  const r = new Reader(rec, 16);
  const tag = r.u8();
  let source: string | undefined;
  if (tag === FROM_SOURCE) {
    const host = r.short();
    if (!r.ok) return undefined;
    try {
      source = utf8Strict.decode(host);
    } catch {
      return undefined;
    }
  } else if (tag !== OWN) return undefined;
  const v: StoredValue = {
    level: level!,
    key: id!,
    publisher: publisher!,
    value: rec.subarray(r.at),
    expiresAt: dv.getFloat64(0, true),
    storedAt: dv.getFloat64(8, true),
  };
  if (!Number.isFinite(v.expiresAt) || !Number.isFinite(v.storedAt)) return undefined;
  if (storedBy) {
    v.copy = true;
    v.storedBy = storedBy;
  }
  if (source !== undefined) v.source = source;
  return v;
}

/** A record of the earlier layout (`v!…` key and its JSON), or undefined when it is damaged. */
export function decodeLegacyValue(k: string, v: string): StoredValue | undefined {
  try {
    const [, level, keyHex, entry] = k.split('!');
    const o = JSON.parse(v) as {
      value: string;
      expiresAt: number;
      storedAt: number;
      src?: string | null;
    };
    if (typeof o.value !== 'string' || typeof o.expiresAt !== 'number') return undefined;
    const copy = entry!.length === 81 && entry!.startsWith('c');
    const sv: StoredValue = {
      level: Number(level),
      key: fromHex(keyHex!),
      publisher: fromHex(copy ? entry!.slice(41) : entry!),
      value: new Uint8Array(Buffer.from(o.value, 'base64')),
      expiresAt: o.expiresAt,
      storedAt: o.storedAt,
    };
    if (copy) {
      sv.copy = true;
      sv.storedBy = fromHex(entry!.slice(1, 41));
    }
    // null = this node's own value; a missing field = written before sources were kept.
    if (o.src === undefined) sv.source = LEGACY_SOURCE;
    else if (o.src !== null) sv.source = o.src;
    return sv;
  } catch {
    return undefined;
  }
}

function putShort(out: Uint8Array, at: number, bytes: Uint8Array): number {
  if (bytes.length > 255) throw new RangeError('record field over 255 bytes');
  out[at] = bytes.length;
  out.set(bytes, at + 1);
  return at + 1 + bytes.length;
}

/** Bounds-checked reads: a short record sets `ok` false instead of throwing. */
class Reader {
  ok = true;
  constructor(
    readonly buf: Uint8Array,
    public at: number,
  ) {}

  get done(): boolean {
    return this.at === this.buf.length;
  }

  u8(): number | undefined {
    if (this.at >= this.buf.length) {
      this.ok = false;
      return undefined;
    }
    return this.buf[this.at++];
  }

  short(): Uint8Array | undefined {
    const n = this.u8();
    if (n === undefined || this.at + n > this.buf.length) {
      this.ok = false;
      return undefined;
    }
    const out = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
}
