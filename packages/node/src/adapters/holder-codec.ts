/**
 * The DSHT value stored under a URL key: who holds (or is fetching) the URL. A compact msgpack
 * array, validated field by field on the way back in, because anything in the DSHT was written by
 * some other node and may be garbage:
 *
 *   [version=1, nodeId: bin(20), ip: str, httpPort: uint, state: 0|1|2, at: uint, size?: uint, sha256?: bin(32)]
 *
 * `state` 0 = fetching, 1 = complete, 2 = withdrawn (a tombstone that replaces the publisher's
 * earlier value after a purge). `at` is the announcement time in milliseconds, so the newest record
 * of a node wins when a lookup sees several. An encoded holder is at most about 120 bytes, well
 * under the DSHT's 512-byte value limit.
 */
import { isIP } from 'node:net';
import { Packr } from 'msgpackr';
import type { Holder } from '@coral/httpprx';
import { HolderDecodeError } from '../errors.js';

export const HOLDER_RECORD_VERSION = 1;
/** Upper bound of an encoded record; the DSHT accepts values up to 512 bytes. */
export const MAX_HOLDER_RECORD_BYTES = 512;

export type HolderState = Holder['state'] | 'withdrawn';

/** A decoded record: a holder (without the lookup-time `level`), its state and its time. */
export interface HolderRecord {
  nodeId: string;
  ip: string;
  httpPort: number;
  state: HolderState;
  /** Announcement time, milliseconds since the epoch. */
  at: number;
  size?: number;
  sha256?: string;
}

const STATES: readonly HolderState[] = ['fetching', 'complete', 'withdrawn'];
const packr = new Packr({ useRecords: false, mapsAsObjects: true });

export function encodeHolder(record: HolderRecord): Uint8Array {
  const fields: unknown[] = [
    HOLDER_RECORD_VERSION,
    Buffer.from(record.nodeId, 'hex'),
    record.ip,
    record.httpPort,
    STATES.indexOf(record.state),
    Math.max(0, Math.floor(record.at)),
  ];
  if (record.size !== undefined || record.sha256 !== undefined) fields.push(record.size ?? null);
  if (record.sha256 !== undefined) fields.push(Buffer.from(record.sha256, 'hex'));
  const bytes = packr.pack(fields);
  if (bytes.length > MAX_HOLDER_RECORD_BYTES) {
    throw new HolderDecodeError(`holder record of ${bytes.length} bytes exceeds the value limit`);
  }
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
}

function isBytes(v: unknown, length: number): v is Uint8Array {
  return v instanceof Uint8Array && v.length === length;
}

function isUint(v: unknown, max = Number.MAX_SAFE_INTEGER): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v <= max;
}

/** Decode and validate; throws {@link HolderDecodeError} on anything malformed. */
export function decodeHolder(bytes: Uint8Array): HolderRecord {
  if (bytes.length === 0 || bytes.length > MAX_HOLDER_RECORD_BYTES) {
    throw new HolderDecodeError(`holder record has ${bytes.length} bytes`);
  }
  let raw: unknown;
  try {
    raw = packr.unpack(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length));
  } catch (err) {
    throw new HolderDecodeError(`holder record is not msgpack: ${(err as Error).message}`);
  }
  if (!Array.isArray(raw) || raw.length < 6 || raw.length > 8) {
    throw new HolderDecodeError('holder record is not an array of 6 to 8 fields');
  }
  const [version, nodeId, ip, httpPort, state, at, size, sha256] = raw as unknown[];
  if (version !== HOLDER_RECORD_VERSION) {
    throw new HolderDecodeError(`unknown holder record version ${String(version)}`);
  }
  if (!isBytes(nodeId, 20)) throw new HolderDecodeError('holder nodeId is not 20 bytes');
  if (typeof ip !== 'string' || ip.length > 45 || isIP(ip) === 0) {
    throw new HolderDecodeError('holder ip is not an IP address');
  }
  if (!isUint(httpPort, 65535) || httpPort === 0) {
    throw new HolderDecodeError('holder httpPort is out of range');
  }
  if (!isUint(state, STATES.length - 1)) throw new HolderDecodeError('holder state is unknown');
  if (!isUint(at)) throw new HolderDecodeError('holder time is not a non-negative integer');
  if (size !== undefined && size !== null && !isUint(size)) {
    throw new HolderDecodeError('holder size is not a non-negative integer');
  }
  if (sha256 !== undefined && !isBytes(sha256, 32)) {
    throw new HolderDecodeError('holder sha256 is not 32 bytes');
  }
  const record: HolderRecord = {
    nodeId: Buffer.from(nodeId).toString('hex'),
    ip,
    httpPort,
    state: STATES[state]!,
    at,
  };
  if (isUint(size)) record.size = size;
  if (sha256 !== undefined) record.sha256 = Buffer.from(sha256).toString('hex');
  return record;
}
