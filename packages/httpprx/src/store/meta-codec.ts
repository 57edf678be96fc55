/**
 * The metadata record of one stored variant, as bytes (LevelDB value), and its key.
 *
 * Key: the variant key, 28 bytes (`urlKey` then the secondary key of ../cache/vary.ts).
 * Value: a fixed 65-byte prefix that the store reads at start-up without decoding anything else,
 * then the rest in MessagePack (msgpackr: compact, fast, maintained):
 *
 *   0      u8   record version (1)
 *   1..8   f64  body size
 *   9..16  f64  body file number
 *   17..24 f64  clock time its freshness ends (ms)
 *   25..32 f64  clock time it was stored (ms)
 *   33..64      SHA-256 of the body
 *   65..        msgpack [url, status, [name, value, ...], vary, varyValues,
 *                        requestTime, responseTime, ageValue, dateValue | null]
 */
import { Packr } from 'msgpackr';
import type { HeaderRecord } from '../cache/directives.js';
import { KEY_BYTES, SHA256_BYTES } from './directory.js';
import type { StoredMeta } from './types.js';

const VERSION = 1;
export const PREFIX_BYTES = 1 + 8 * 4 + SHA256_BYTES;
// Plain arrays and maps only: no shared record structures to persist alongside the data.
const packr = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true });

export interface MetaPrefix {
  size: number;
  file: number;
  freshUntil: number;
  storedAt: number;
  sha256: Uint8Array;
}

export function encodeMeta(meta: StoredMeta): Uint8Array {
  const flat: string[] = [];
  for (const k in meta.headers) flat.push(k, meta.headers[k]!);
  const f = meta.facts;
  const rest = packr.pack([
    meta.url,
    meta.status,
    flat,
    meta.vary,
    meta.varyValues,
    f.requestTime,
    f.responseTime,
    f.ageValue,
    f.dateValue ?? null,
  ]);
  const out = Buffer.allocUnsafe(PREFIX_BYTES + rest.length);
  out.writeUInt8(VERSION, 0);
  out.writeDoubleLE(meta.size, 1);
  out.writeDoubleLE(meta.file ?? 0, 9);
  out.writeDoubleLE(meta.freshUntil, 17);
  out.writeDoubleLE(meta.storedAt, 25);
  const sha = Buffer.from(meta.sha256, 'hex');
  if (sha.length !== SHA256_BYTES) throw new Error('sha256 must be 32 bytes of hex');
  sha.copy(out, 33);
  rest.copy(out, PREFIX_BYTES);
  return out;
}

/** The fixed prefix only (start-up reads nothing else). Undefined for a record it cannot read. */
export function decodePrefix(value: Uint8Array): MetaPrefix | undefined {
  if (value.length < PREFIX_BYTES || value[0] !== VERSION) return undefined;
  const b = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  return {
    size: b.readDoubleLE(1),
    file: b.readDoubleLE(9),
    freshUntil: b.readDoubleLE(17),
    storedAt: b.readDoubleLE(25),
    sha256: value.subarray(33, PREFIX_BYTES),
  };
}

/** The whole record; undefined for a record it cannot read (the store drops such records). */
export function decodeMeta(key: Uint8Array, value: Uint8Array): StoredMeta | undefined {
  const p = decodePrefix(value);
  if (!p || key.length !== KEY_BYTES) return undefined;
  let rest: unknown;
  try {
    rest = packr.unpack(value.subarray(PREFIX_BYTES));
  } catch {
    return undefined;
  }
  if (!Array.isArray(rest) || rest.length !== 9) return undefined;
  const [url, status, flat, vary, varyValues, requestTime, responseTime, ageValue, dateValue] =
    rest as [
      string,
      number,
      string[],
      string[],
      (string | null)[],
      number,
      number,
      number,
      number | null,
    ];
  const headers: HeaderRecord = {};
  for (let i = 0; i + 1 < flat.length; i += 2) headers[flat[i]!] = flat[i + 1]!;
  const k = Buffer.from(key.buffer, key.byteOffset, key.byteLength);
  return {
    key: k.toString('hex'),
    primary: k.subarray(0, 20).toString('hex'),
    url,
    status,
    headers,
    vary,
    varyValues,
    facts: {
      requestTime,
      responseTime,
      ageValue,
      dateValue: dateValue ?? undefined,
    },
    size: p.size,
    sha256: Buffer.from(p.sha256).toString('hex'),
    storedAt: p.storedAt,
    freshUntil: p.freshUntil,
    file: p.file,
  };
}
