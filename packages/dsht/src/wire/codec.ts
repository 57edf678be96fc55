/**
 * The message codec (wire version 2): one MessagePack array per message,
 *
 *   [type, txid, flags, sender, token, ...fields]
 *
 * optionally followed by zero bytes (padding: a first-contact request is padded so the answer may
 * be as large as the request; see docs/dsht.md). `encodePayload` / `decodePayload` handle the
 * payload; the datagram around it — one version byte in open mode, a MAC'd header and tag in keyed
 * mode — and the padding are added by `auth/datagram-auth.ts`. `encode` / `decode` are the
 * open-mode datagram (version byte + payload). Decoding validates every field and throws
 * `MalformedMessageError` on anything unexpected (a non-zero byte after the message included);
 * callers count and drop.
 */
import { isIP } from 'node:net';
import { Packr, RESET_BUFFER_MODE, Unpackr } from 'msgpackr';
import type { ClusterAdvert, Contact } from '../contact.js';
import {
  ID_BYTES,
  LEVEL_COUNT,
  MAX_DATAGRAM_BYTES,
  MAX_REGION_LENGTH,
  MAX_TOKEN_BYTES,
  MAX_TTL_SECONDS,
  MAX_VALUE_BYTES,
  WIRE_VERSION,
} from '../constants.js';
import { MalformedMessageError, MessageTooLargeError } from '../errors.js';
import type {
  MemberState,
  Message,
  Request,
  Response,
  SwimFields,
  WireMemberUpdate,
  WireValue,
} from './messages.js';

const packr = new Packr({ useRecords: false });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: false });

/** Type numbers on the wire. Requests < 0x80, answers ≥ 0x80. */
export const TypeCode = {
  PING: 0x01,
  FIND_NODE: 0x02,
  GET: 0x03,
  STORE_PROBE: 0x04,
  STORE: 0x05,
  PING_REQ: 0x06,
  LEAVE: 0x07,
  PONG: 0x81,
  NODES: 0x82,
  VALUES: 0x83,
  PROBE_RESULT: 0x84,
  STORE_RESULT: 0x85,
  INDIRECT_ACK: 0x86,
  ERROR: 0xff,
} as const;

/** Bits of the flags field. */
export const Flag = {
  /** Answer trimmed to the request's size because the request proved no round trip. */
  TRUNCATED: 0x01,
} as const;
const KNOWN_FLAGS = Flag.TRUNCATED;

const MAX_CONTACTS = 32;
const MAX_VALUES = 16;
const MAX_ERROR_MESSAGE = 200;
const MAX_STORE_STATUS = 4;
/** Membership updates in one PING / PONG. */
export const MAX_MEMBER_UPDATES = 8;
/** Longest indirect probe a PING_REQ may ask for. */
export const MAX_PING_REQ_TIMEOUT_MS = 5_000;
/** Member states on the wire, by number. */
const MEMBER_STATES: readonly MemberState[] = ['alive', 'suspect', 'dead', 'left'];
const EMPTY = new Uint8Array(0);
const ZEROS = Buffer.alloc(MAX_DATAGRAM_BYTES);

function contactTuple(c: Contact): unknown[] {
  return [c.id, c.ip, c.port, c.httpPort ?? 0];
}

function senderTuple(c: Contact): unknown[] {
  const clusters = (c.clusters ?? []).map((a) => [a.level, a.clusterId, a.size, a.age]);
  return [c.id, c.ip, c.port, c.httpPort ?? 0, c.dnsPort ?? 0, c.region ?? '', clusters];
}

function valueTuple(v: WireValue): unknown[] {
  return [v.publisher, v.value, v.ttl, v.copy === true];
}

/** PING / PONG: nothing, or [incarnation, updates] when the sender runs failure detection. */
function swimFields(body: SwimFields): unknown[] {
  if (body.incarnation === undefined) return [];
  const updates = (body.updates ?? []).map((u) => [
    u.id,
    MEMBER_STATES.indexOf(u.state),
    u.incarnation,
  ]);
  return [body.incarnation, updates];
}

function bodyFields(body: Request | Response): unknown[] {
  switch (body.type) {
    case 'PING':
    case 'PONG':
      return swimFields(body);
    case 'PING_REQ':
      return [body.target, body.timeoutMs];
    case 'LEAVE':
      return [body.incarnation];
    case 'INDIRECT_ACK':
      return [body.acked];
    case 'FIND_NODE':
      return body.count === undefined
        ? [body.level, body.target]
        : [body.level, body.target, body.count];
    case 'GET':
      return [body.level, body.key, body.max];
    case 'STORE_PROBE':
      return [body.level, body.key, body.ttl];
    case 'STORE':
      return [body.level, body.key, body.value, body.ttl, body.copyOf ?? EMPTY];
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

function packRaw(msg: Message): Uint8Array {
  const arr = [
    TypeCode[msg.body.type],
    msg.txid,
    msg.truncated ? Flag.TRUNCATED : 0,
    senderTuple(msg.sender),
    msg.token ?? EMPTY,
    ...bodyFields(msg.body),
  ];
  // RESET_BUFFER_MODE reuses msgpackr's scratch buffer: the payload is copied out right away.
  return new Uint8Array(packr.pack(arr, RESET_BUFFER_MODE));
}

export interface EncodeOptions {
  /** Largest payload allowed. Default MAX_DATAGRAM_BYTES - 1 (the open-mode version byte). */
  limit?: number;
  /**
   * Trim an answer's lists down to nothing (values included) to fit, and mark it truncated. For
   * answers to requests that proved no round trip, whose size must not exceed the request's.
   */
  truncate?: boolean;
}

/**
 * Encode a message's payload. Answers carrying lists (contacts, values) are trimmed from the end
 * until they fit (contacts first, then values; at least one value is kept unless `truncate`);
 * anything else that does not fit throws `MessageTooLargeError`.
 */
export function encodePayload(msg: Message, opts: EncodeOptions = {}): Uint8Array {
  const limit = opts.limit ?? MAX_DATAGRAM_BYTES - 1;
  let out = packRaw(msg);
  if (out.length <= limit) return out;
  if (msg.kind === 'response') {
    const body = { ...msg.body };
    if (body.type === 'NODES' || body.type === 'VALUES' || body.type === 'PROBE_RESULT') {
      const b = body as { contacts: Contact[]; values?: WireValue[] };
      b.contacts = [...b.contacts];
      if (b.values) b.values = [...b.values];
      const minValues = opts.truncate ? 0 : 1;
      const trimmed: Message = { ...msg, body, truncated: msg.truncated || opts.truncate };
      while (out.length > limit) {
        if (b.contacts.length > 0) b.contacts.pop();
        else if (b.values && b.values.length > minValues) b.values.pop();
        else break;
        out = packRaw(trimmed);
      }
      if (out.length <= limit) return out;
    }
  }
  throw new MessageTooLargeError(out.length, limit);
}

/**
 * Encode a message as an open-mode datagram (version byte + payload, zero-padded to `padTo`), at
 * most `limit` bytes; see `encodePayload` for trimming.
 */
export function encode(msg: Message, limit = MAX_DATAGRAM_BYTES, padTo = 0): Uint8Array {
  const payload = encodePayload(msg, { limit: limit - 1 });
  const out = new Uint8Array(Math.min(limit, Math.max(payload.length + 1, padTo)));
  out[0] = WIRE_VERSION;
  out.set(payload, 1);
  return out;
}

/** True when every byte of `b` is zero (native compare). */
function allZero(b: Uint8Array): boolean {
  return Buffer.from(b.buffer, b.byteOffset, b.length).equals(ZEROS.subarray(0, b.length));
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

/** A non-negative safe integer (incarnations: milliseconds since the epoch and up). */
function uint(x: unknown, what: string): number {
  if (typeof x !== 'number' || !Number.isSafeInteger(x) || x < 0) fail(`${what}: not a uint`);
  return x;
}

function port(x: unknown, what: string, allowZero: boolean): number {
  const p = u32(x, what);
  if (p > 65535 || (!allowZero && p === 0)) fail(`${what}: bad port`);
  return p;
}

/** `x` itself (a view into the datagram) when it is `min..max` bytes. */
function bytesView(x: unknown, what: string, min: number, max: number): Uint8Array {
  if (!(x instanceof Uint8Array) || x.length < min || x.length > max) fail(`${what}: bad bytes`);
  return x;
}

function bytes(x: unknown, what: string, min: number, max: number): Uint8Array {
  return new Uint8Array(bytesView(x, what, min, max));
}

function id(x: unknown, what: string): Uint8Array {
  return bytes(x, what, ID_BYTES, ID_BYTES);
}

/**
 * A contact's id as a view into the datagram, not a copy: the receive path puts the id memo's own
 * copy in its place once it verified the id against the address (see `verifiedContact`) and drops
 * the contact otherwise, so the view is never kept. Saves an allocation for the sender and each of
 * the up to 20 contacts an answer lists.
 */
function idView(x: unknown, what: string): Uint8Array {
  return bytesView(x, what, ID_BYTES, ID_BYTES);
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
    id: idView(t[0], 'contact id'),
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
    id: idView(t[0], 'sender id'),
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
  const t = arr(x, 'value', 4, 4);
  const v: WireValue = {
    publisher: id(t[0], 'publisher'),
    value: bytes(t[1], 'value', 0, MAX_VALUE_BYTES),
    ttl: ttl(t[2]),
  };
  if (bool(t[3], 'copy')) v.copy = true;
  return v;
}

function decodeSwim(f: unknown[], code: number): SwimFields {
  if (f.length === 0) return {};
  if (f.length !== 2) fail(`type ${code}: expected 0 or 2 fields, got ${f.length}`);
  const out: SwimFields = { incarnation: uint(f[0], 'incarnation') };
  const updates = arr(f[1], 'updates', 0, MAX_MEMBER_UPDATES).map((x): WireMemberUpdate => {
    const t = arr(x, 'update', 3, 3);
    const state = MEMBER_STATES[u32(t[1], 'member state')];
    if (state === undefined) fail('member state out of range');
    return { id: id(t[0], 'member id'), state, incarnation: uint(t[2], 'member incarnation') };
  });
  if (updates.length > 0) out.updates = updates;
  return out;
}

function decodeBody(code: number, f: unknown[]): Request | Response {
  const n = (count: number): void => {
    if (f.length !== count) fail(`type ${code}: expected ${count} fields, got ${f.length}`);
  };
  switch (code) {
    case TypeCode.PING:
      return { type: 'PING', ...decodeSwim(f, code) };
    case TypeCode.PONG:
      return { type: 'PONG', ...decodeSwim(f, code) };
    case TypeCode.PING_REQ: {
      n(2);
      const timeoutMs = u32(f[1], 'timeoutMs');
      if (timeoutMs < 1 || timeoutMs > MAX_PING_REQ_TIMEOUT_MS) fail('timeoutMs out of range');
      return { type: 'PING_REQ', target: id(f[0], 'target'), timeoutMs };
    }
    case TypeCode.LEAVE:
      n(1);
      return { type: 'LEAVE', incarnation: uint(f[0], 'incarnation') };
    case TypeCode.INDIRECT_ACK:
      n(1);
      return { type: 'INDIRECT_ACK', acked: bool(f[0], 'acked') };
    case TypeCode.FIND_NODE: {
      if (f.length !== 2 && f.length !== 3)
        fail(`type ${code}: expected 2 or 3 fields, got ${f.length}`);
      const req: Extract<Request, { type: 'FIND_NODE' }> = {
        type: 'FIND_NODE',
        level: level(f[0]),
        target: id(f[1], 'target'),
      };
      if (f.length === 3) {
        const count = u32(f[2], 'count');
        if (count < 1 || count > MAX_CONTACTS) fail('count out of range');
        req.count = count;
      }
      return req;
    }
    case TypeCode.GET: {
      n(3);
      const max = u32(f[2], 'max');
      if (max < 1 || max > MAX_VALUES) fail('max out of range');
      return { type: 'GET', level: level(f[0]), key: id(f[1], 'key'), max };
    }
    case TypeCode.STORE_PROBE:
      n(3);
      return { type: 'STORE_PROBE', level: level(f[0]), key: id(f[1], 'key'), ttl: ttl(f[2]) };
    case TypeCode.STORE: {
      n(5);
      const store: Request = {
        type: 'STORE',
        level: level(f[0]),
        key: id(f[1], 'key'),
        value: bytes(f[2], 'value', 0, MAX_VALUE_BYTES),
        ttl: ttl(f[3]),
      };
      const copyOf = bytes(f[4], 'copyOf', 0, ID_BYTES);
      if (copyOf.length === ID_BYTES) store.copyOf = copyOf;
      else if (copyOf.length !== 0) fail('copyOf: bad bytes');
      return store;
    }
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
      if (status > MAX_STORE_STATUS) fail('bad store status');
      return { type: 'STORE_RESULT', status: status as 0 | 1 | 2 | 3 | 4 };
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

/**
 * Decode and validate one payload. Throws `MalformedMessageError`; never anything else. The ids of
 * the sender and of listed contacts are views into `data` (see `idView`); every other byte field is
 * a copy.
 */
export function decodePayload(data: Uint8Array): Message {
  if (data.length < 1) fail('empty payload');
  if (data.length > MAX_DATAGRAM_BYTES) fail('payload too large');
  let raw: unknown;
  let end = -1;
  try {
    // The first MessagePack value only; what follows must be padding (zero bytes).
    unpackr.unpackMultiple(data, (value: unknown, _start?: number, stop?: number) => {
      raw = value;
      end = stop ?? -1;
      return false;
    });
  } catch (err) {
    fail(`undecodable payload: ${(err as Error).message}`);
  }
  if (end < 0 || end > data.length) fail('undecodable payload');
  if (end < data.length && !allZero(data.subarray(end))) fail('non-zero bytes after the message');
  const t = arr(raw, 'message', 5, 10);
  const code = u32(t[0], 'type');
  const txid = u32(t[1], 'txid');
  const flags = u32(t[2], 'flags');
  if ((flags & ~KNOWN_FLAGS) !== 0) fail('unknown flags');
  const sender = decodeSender(t[3]);
  const token = bytes(t[4], 'token', 0, MAX_TOKEN_BYTES);
  const body = decodeBody(code, t.slice(5));
  const isResponse = code >= 0x80;
  if (!isResponse && flags !== 0) fail('flags on a request');
  const msg: Message = isResponse
    ? { kind: 'response', txid, sender, body: body as Response }
    : { kind: 'request', txid, sender, body: body as Request };
  if (token.length > 0) msg.token = token;
  if (flags & Flag.TRUNCATED) msg.truncated = true;
  return msg;
}

/** Decode and validate one open-mode datagram. Throws `MalformedMessageError`; never anything else. */
export function decode(data: Uint8Array, limit = MAX_DATAGRAM_BYTES): Message {
  if (!(data instanceof Uint8Array)) fail('not bytes');
  if (data.length < 2) fail('truncated datagram');
  if (data.length > limit) fail(`datagram of ${data.length} bytes exceeds ${limit}`);
  if (data[0] !== WIRE_VERSION) fail(`unsupported version ${data[0]}`);
  return decodePayload(data.subarray(1));
}
