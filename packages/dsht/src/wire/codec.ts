/**
 * The datagram codec: one version byte, then a MessagePack array
 * `[type, txid, sender, ...fields]` (layout in docs/dsht.md). Decoding validates every field and
 * throws `MalformedMessageError` on anything unexpected; callers count and drop.
 */
import { isIP } from 'node:net';
import { Packr, RESET_BUFFER_MODE, Unpackr } from 'msgpackr';
import type { ClusterAdvert, Contact } from '../contact.js';
import {
  ID_BYTES,
  LEVEL_COUNT,
  MAX_DATAGRAM_BYTES,
  MAX_REGION_LENGTH,
  MAX_TTL_SECONDS,
  MAX_VALUE_BYTES,
  WIRE_VERSION,
} from '../constants.js';
import { MalformedMessageError, MessageTooLargeError } from '../errors.js';
import type { Message, Request, Response, WireValue } from './messages.js';

const packr = new Packr({ useRecords: false });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: false });

/** Type numbers on the wire. Requests < 0x80, answers ≥ 0x80. */
export const TypeCode = {
  PING: 0x01,
  FIND_NODE: 0x02,
  GET: 0x03,
  STORE_PROBE: 0x04,
  STORE: 0x05,
  PONG: 0x81,
  NODES: 0x82,
  VALUES: 0x83,
  PROBE_RESULT: 0x84,
  STORE_RESULT: 0x85,
  ERROR: 0xff,
} as const;

const MAX_CONTACTS = 32;
const MAX_VALUES = 16;
const MAX_ERROR_MESSAGE = 200;

function contactTuple(c: Contact): unknown[] {
  return [c.id, c.ip, c.port, c.httpPort ?? 0];
}

function senderTuple(c: Contact): unknown[] {
  const clusters = (c.clusters ?? []).map((a) => [a.level, a.clusterId, a.size, a.age]);
  return [c.id, c.ip, c.port, c.httpPort ?? 0, c.dnsPort ?? 0, c.region ?? '', clusters];
}

function valueTuple(v: WireValue): unknown[] {
  return [v.publisher, v.value, v.ttl];
}

function bodyFields(body: Request | Response): unknown[] {
  switch (body.type) {
    case 'PING':
    case 'PONG':
      return [];
    case 'FIND_NODE':
      return [body.level, body.target];
    case 'GET':
      return [body.level, body.key, body.max];
    case 'STORE_PROBE':
      return [body.level, body.key, body.ttl];
    case 'STORE':
      return [body.level, body.key, body.value, body.ttl, body.publisher];
    case 'NODES':
      return [body.contacts.map(contactTuple)];
    case 'VALUES':
      return [body.values.map(valueTuple), body.contacts.map(contactTuple)];
    case 'PROBE_RESULT':
      return [body.full, body.loaded, body.contacts.map(contactTuple)];
    case 'STORE_RESULT':
      return [body.status];
    case 'ERROR':
      return [body.code, body.message.slice(0, MAX_ERROR_MESSAGE)];
  }
}

/** Encode without the size check. */
function encodeRaw(msg: Message): Uint8Array {
  const arr = [TypeCode[msg.body.type], msg.txid, senderTuple(msg.sender), ...bodyFields(msg.body)];
  // RESET_BUFFER_MODE reuses msgpackr's scratch buffer: the payload is copied out right away.
  const payload = packr.pack(arr, RESET_BUFFER_MODE);
  const out = new Uint8Array(payload.length + 1);
  out[0] = WIRE_VERSION;
  out.set(payload, 1);
  return out;
}

/**
 * Encode a message. Answers carrying lists (contacts, values) are trimmed from the end until the
 * datagram fits; anything else that does not fit throws `MessageTooLargeError`.
 */
export function encode(msg: Message, limit = MAX_DATAGRAM_BYTES): Uint8Array {
  let out = encodeRaw(msg);
  if (out.length <= limit) return out;
  if (msg.kind === 'response') {
    const body = { ...msg.body } as Response;
    if (body.type === 'NODES' || body.type === 'VALUES' || body.type === 'PROBE_RESULT') {
      const b = body as { contacts: Contact[]; values?: WireValue[] };
      b.contacts = [...b.contacts];
      if (b.values) b.values = [...b.values];
      while (out.length > limit) {
        if (b.contacts.length > 0) b.contacts.pop();
        else if (b.values && b.values.length > 1) b.values.pop();
        else break;
        out = encodeRaw({ ...msg, body });
      }
      if (out.length <= limit) return out;
    }
  }
  throw new MessageTooLargeError(out.length, limit);
}

// ---- decoding -------------------------------------------------------------------------------

function fail(what: string): never {
  throw new MalformedMessageError(what);
}

function arr(x: unknown, what: string, min: number, max: number): unknown[] {
  if (!Array.isArray(x) || x.length < min || x.length > max) fail(`${what}: bad array`);
  return x;
}

function u32(x: unknown, what: string): number {
  if (typeof x !== 'number' || !Number.isInteger(x) || x < 0 || x > 0xffffffff)
    fail(`${what}: not a u32`);
  return x;
}

function port(x: unknown, what: string, allowZero: boolean): number {
  const p = u32(x, what);
  if (p > 65535 || (!allowZero && p === 0)) fail(`${what}: bad port`);
  return p;
}

function bytes(x: unknown, what: string, min: number, max: number): Uint8Array {
  if (!(x instanceof Uint8Array) || x.length < min || x.length > max) fail(`${what}: bad bytes`);
  return new Uint8Array(x);
}

function id(x: unknown, what: string): Uint8Array {
  return bytes(x, what, ID_BYTES, ID_BYTES);
}

function bool(x: unknown, what: string): boolean {
  if (typeof x !== 'boolean') fail(`${what}: not a boolean`);
  return x;
}

function str(x: unknown, what: string, max: number): string {
  if (typeof x !== 'string' || x.length > max) fail(`${what}: bad string`);
  return x;
}

function ip(x: unknown, what: string): string {
  const s = str(x, what, 45);
  if (isIP(s) === 0) fail(`${what}: not an IP address`);
  return s;
}

function level(x: unknown): number {
  const l = u32(x, 'level');
  if (l >= LEVEL_COUNT) fail('level out of range');
  return l;
}

function ttl(x: unknown): number {
  const t = u32(x, 'ttl');
  if (t < 1 || t > MAX_TTL_SECONDS) fail('ttl out of range');
  return t;
}

function decodeContact(x: unknown): Contact {
  const t = arr(x, 'contact', 4, 4);
  const c: Contact = {
    id: id(t[0], 'contact id'),
    ip: ip(t[1], 'contact ip'),
    port: port(t[2], 'contact port', false),
  };
  const http = port(t[3], 'contact httpPort', true);
  if (http !== 0) c.httpPort = http;
  return c;
}

function decodeContacts(x: unknown): Contact[] {
  return arr(x, 'contacts', 0, MAX_CONTACTS).map(decodeContact);
}

function decodeSender(x: unknown): Contact {
  const t = arr(x, 'sender', 7, 7);
  const c: Contact = {
    id: id(t[0], 'sender id'),
    ip: ip(t[1], 'sender ip'),
    port: port(t[2], 'sender port', false),
  };
  const http = port(t[3], 'httpPort', true);
  const dns = port(t[4], 'dnsPort', true);
  const region = str(t[5], 'region', MAX_REGION_LENGTH);
  if (http !== 0) c.httpPort = http;
  if (dns !== 0) c.dnsPort = dns;
  if (region !== '') c.region = region;
  const clusters: ClusterAdvert[] = arr(t[6], 'clusters', 0, LEVEL_COUNT).map((a) => {
    const f = arr(a, 'cluster', 4, 4);
    return {
      level: level(f[0]),
      clusterId: bytes(f[1], 'clusterId', 1, ID_BYTES),
      size: u32(f[2], 'cluster size'),
      age: u32(f[3], 'cluster age'),
    };
  });
  if (clusters.length > 0) c.clusters = clusters;
  return c;
}

function decodeValue(x: unknown): WireValue {
  const t = arr(x, 'value', 3, 3);
  return {
    publisher: id(t[0], 'publisher'),
    value: bytes(t[1], 'value', 0, MAX_VALUE_BYTES),
    ttl: ttl(t[2]),
  };
}

function decodeBody(code: number, f: unknown[]): Request | Response {
  const n = (count: number): void => {
    if (f.length !== count) fail(`type ${code}: expected ${count} fields, got ${f.length}`);
  };
  switch (code) {
    case TypeCode.PING:
      n(0);
      return { type: 'PING' };
    case TypeCode.PONG:
      n(0);
      return { type: 'PONG' };
    case TypeCode.FIND_NODE:
      n(2);
      return { type: 'FIND_NODE', level: level(f[0]), target: id(f[1], 'target') };
    case TypeCode.GET: {
      n(3);
      const max = u32(f[2], 'max');
      if (max < 1 || max > MAX_VALUES) fail('max out of range');
      return { type: 'GET', level: level(f[0]), key: id(f[1], 'key'), max };
    }
    case TypeCode.STORE_PROBE:
      n(3);
      return { type: 'STORE_PROBE', level: level(f[0]), key: id(f[1], 'key'), ttl: ttl(f[2]) };
    case TypeCode.STORE:
      n(5);
      return {
        type: 'STORE',
        level: level(f[0]),
        key: id(f[1], 'key'),
        value: bytes(f[2], 'value', 0, MAX_VALUE_BYTES),
        ttl: ttl(f[3]),
        publisher: id(f[4], 'publisher'),
      };
    case TypeCode.NODES:
      n(1);
      return { type: 'NODES', contacts: decodeContacts(f[0]) };
    case TypeCode.VALUES:
      n(2);
      return {
        type: 'VALUES',
        values: arr(f[0], 'values', 0, MAX_VALUES).map(decodeValue),
        contacts: decodeContacts(f[1]),
      };
    case TypeCode.PROBE_RESULT:
      n(3);
      return {
        type: 'PROBE_RESULT',
        full: bool(f[0], 'full'),
        loaded: bool(f[1], 'loaded'),
        contacts: decodeContacts(f[2]),
      };
    case TypeCode.STORE_RESULT: {
      n(1);
      const status = u32(f[0], 'status');
      if (status > 3) fail('bad store status');
      return { type: 'STORE_RESULT', status: status as 0 | 1 | 2 | 3 };
    }
    case TypeCode.ERROR:
      n(2);
      return {
        type: 'ERROR',
        code: u32(f[0], 'error code'),
        message: str(f[1], 'error message', MAX_ERROR_MESSAGE),
      };
    default:
      fail(`unknown message type ${code}`);
  }
}

/** Decode and validate one datagram. Throws `MalformedMessageError`; never anything else. */
export function decode(data: Uint8Array, limit = MAX_DATAGRAM_BYTES): Message {
  if (!(data instanceof Uint8Array)) fail('not bytes');
  if (data.length < 2) fail('truncated datagram');
  if (data.length > limit) fail(`datagram of ${data.length} bytes exceeds ${limit}`);
  if (data[0] !== WIRE_VERSION) fail(`unsupported version ${data[0]}`);
  let raw: unknown;
  try {
    raw = unpackr.unpack(data.subarray(1));
  } catch (err) {
    fail(`undecodable payload: ${(err as Error).message}`);
  }
  const t = arr(raw, 'message', 3, 8);
  const code = u32(t[0], 'type');
  const txid = u32(t[1], 'txid');
  const sender = decodeSender(t[2]);
  const body = decodeBody(code, t.slice(3));
  return code >= 0x80
    ? { kind: 'response', txid, sender, body: body as Response }
    : { kind: 'request', txid, sender, body: body as Request };
}
