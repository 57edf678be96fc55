/**
 * The metadata record of one stored variant, as bytes (LevelDB value), under its variant key.
 *
 * Key: the variant key, 28 bytes (`urlKey` then the secondary key of ../cache/vary.ts).
 * Value, in three parts, each readable without the next:
 *
 *   prefix (65 bytes, read at start-up for the directory)
 *     0      u8   record version (1)
 *     1..8   f64  body size
 *     9..16  f64  body file number
 *     17..24 f64  clock time its freshness ends (ms)
 *     25..32 f64  clock time it was stored (ms)
 *     33..64      SHA-256 of the body
 *   listing (what the admin API's cache listing shows)
 *     u16 status, then three u16-length-prefixed UTF-8 strings: URL, Content-Type, Vary names
 *     joined by ","
 *   rest (msgpackr: compact, fast, maintained)
 *     [[name, value, ...], varyValues, requestTime, responseTime, ageValue, dateValue | null]
 */
import { Packr } from 'msgpackr';
import type { HeaderRecord } from '../cache/directives.js';
import { KEY_BYTES, PRIMARY_BYTES } from './directory.js';
import type { StoredMeta } from './types.js';

const VERSION = 1;
export const SHA256_BYTES = 32;
export const PREFIX_BYTES = 1 + 8 * 4 + SHA256_BYTES;
// Plain arrays only: no shared record structures to persist alongside the data.
const packr = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true });

export interface MetaPrefix {
  size: number;
  file: number;
  freshUntil: number;
  storedAt: number;
  sha256: Uint8Array;
}

/** What the cache listing needs, read without decoding the headers. */
export interface MetaListing extends MetaPrefix {
  status: number;
  url: string;
  contentType: string | undefined;
  vary: string[];
}

function str(s: string): Buffer {
  const b = Buffer.from(s, 'utf8');
  if (b.length > 0xffff) throw new Error('metadata string too long');
  const out = Buffer.allocUnsafe(2 + b.length);
  out.writeUInt16LE(b.length, 0);
  b.copy(out, 2);
  return out;
}

export function encodeMeta(meta: StoredMeta): Uint8Array {
  const flat: string[] = [];
  for (const k in meta.headers) flat.push(k, meta.headers[k]!);
  const f = meta.facts;
  const prefix = Buffer.allocUnsafe(PREFIX_BYTES + 2);
  prefix.writeUInt8(VERSION, 0);
  prefix.writeDoubleLE(meta.size, 1);
  prefix.writeDoubleLE(meta.file ?? 0, 9);
  prefix.writeDoubleLE(meta.freshUntil, 17);
  prefix.writeDoubleLE(meta.storedAt, 25);
  const sha = Buffer.from(meta.sha256, 'hex');
  if (sha.length !== SHA256_BYTES) throw new Error('sha256 must be 32 bytes of hex');
  sha.copy(prefix, 33);
  prefix.writeUInt16LE(meta.status, PREFIX_BYTES);
  const rest = packr.pack([
    flat,
    meta.varyValues,
    f.requestTime,
    f.responseTime,
    f.ageValue,
    f.dateValue ?? null,
  ]);
  return Buffer.concat([
    prefix,
    str(meta.url),
    str(meta.headers['content-type'] ?? ''),
    str(meta.vary.join(',')),
    rest,
  ]);
}

function view(value: Uint8Array): Buffer {
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

/** The fixed prefix only (start-up reads nothing else). Undefined for a record it cannot read. */
export function decodePrefix(value: Uint8Array): MetaPrefix | undefined {
  if (value.length < PREFIX_BYTES || value[0] !== VERSION) return undefined;
  const b = view(value);
  return {
    size: b.readDoubleLE(1),
    file: b.readDoubleLE(9),
    freshUntil: b.readDoubleLE(17),
    storedAt: b.readDoubleLE(25),
    sha256: value.subarray(33, PREFIX_BYTES),
  };
}

/** Prefix and listing, and where the rest starts. */
function decodeListing(value: Uint8Array): (MetaListing & { restAt: number }) | undefined {
  const p = decodePrefix(value);
  if (!p || value.length < PREFIX_BYTES + 2) return undefined;
  const b = view(value);
  let at = PREFIX_BYTES + 2;
  const strings: string[] = [];
  for (let i = 0; i < 3; i++) {
    if (at + 2 > b.length) return undefined;
    const n = b.readUInt16LE(at);
    if (at + 2 + n > b.length) return undefined;
    strings.push(b.toString('utf8', at + 2, at + 2 + n));
    at += 2 + n;
  }
  const [url, contentType, vary] = strings as [string, string, string];
  return {
    ...p,
    status: b.readUInt16LE(PREFIX_BYTES),
    url,
    contentType: contentType === '' ? undefined : contentType,
    vary: vary === '' ? [] : vary.split(','),
    restAt: at,
  };
}

/** The listing part of a record (no headers decoded). */
export function decodeList(value: Uint8Array): MetaListing | undefined {
  return decodeListing(value);
}

/** The whole record; undefined for a record it cannot read (the store drops such records). */
export function decodeMeta(key: Uint8Array, value: Uint8Array): StoredMeta | undefined {
  const l = decodeListing(value);
  if (!l || key.length !== KEY_BYTES) return undefined;
  let rest: unknown;
  try {
    rest = packr.unpack(value.subarray(l.restAt));
  } catch {
    return undefined;
  }
  if (!Array.isArray(rest) || rest.length !== 6) return undefined;
  const [flat, varyValues, requestTime, responseTime, ageValue, dateValue] = rest as [
    string[],
    (string | null)[],
    number,
    number,
    number,
    number | null,
  ];
  const headers: HeaderRecord = {};
  for (let i = 0; i + 1 < flat.length; i += 2) headers[flat[i]!] = flat[i + 1]!;
  const k = view(key);
  return {
    key: k.toString('hex'),
    primary: k.toString('hex', 0, PRIMARY_BYTES),
    url: l.url,
    status: l.status,
    headers,
    vary: l.vary,
    varyValues,
    facts: { requestTime, responseTime, ageValue, dateValue: dateValue ?? undefined },
    size: l.size,
    sha256: Buffer.from(l.sha256).toString('hex'),
    storedAt: l.storedAt,
    freshUntil: l.freshUntil,
    file: l.file,
  };
}
