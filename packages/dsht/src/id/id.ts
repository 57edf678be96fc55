/**
 * 160-bit identifiers: node ids and keys share one space, distance is XOR read as an unsigned
 * big-endian integer. A node id is SHA-1 of its advertised `ip:port`, so nobody picks its place.
 */
import { createHash } from 'node:crypto';
import { ID_BYTES } from '../constants.js';
import { InvalidArgumentError } from '../errors.js';
import type { Random } from '@coral/runtime';
import type { Contact } from '../contact.js';

export type Id = Uint8Array;

export function sha1(data: string | Uint8Array): Id {
  return new Uint8Array(createHash('sha1').update(data).digest());
}

/** A key from a name: `sha1(name)`, e.g. `keyFromName('url:http://example.com/')`. */
export function keyFromName(name: string): Id {
  return sha1(name);
}

/** The address string that a node id hashes: `ip:port`, IPv6 in brackets. */
export function addressString(ip: string, port: number): string {
  return ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/** Node id for an advertised address. */
export function nodeIdFor(ip: string, port: number): Id {
  return sha1(addressString(ip, port));
}

/**
 * The memo of `isIdOf`: per IP, its canonical string and, per port seen, the id and address
 * string. The first port seen is held inline (nearly every IP runs one node): a look-up then reads
 * one map and one record instead of a second map per IP.
 */
interface HostIds {
  ip: string;
  first: AddressIds;
  /** Ports seen after the first, when there are any. */
  ports: Map<number, AddressIds> | undefined;
}

interface AddressIds {
  id: Id;
  port: number;
  /** The host's canonical IP string (`HostIds.ip`). */
  ip: string;
  /** `addressString(ip, port)`, one string per address for every map keyed by it. */
  addr: string;
  /** The shared, frozen contact of this address without optional fields but `httpPort` (`sharedContact`). */
  contact?: Contact;
}
const expectedIds = new Map<string, HostIds>();
let expectedCount = 0;
const EXPECTED_MAX = 65_536;
/**
 * The hex of each id the memo holds, made once with it: `toHex` of a verified contact's id (every
 * sender and listed contact the RPC layer keeps) then returns one shared string instead of
 * building one per call, and every per-peer map keyed by it shares that string. Weak, so ids the
 * memo dropped (and the strings) go with the last contact holding them.
 */
const memoHex = new WeakMap<Id, string>();

/**
 * Does `id` equal SHA-1(ip:port)? Memoised per address (bounded), so checking the contacts listed
 * in every answer costs a hash once per address, not once per sighting. The memo is a pure
 * function of the address: nothing anyone sends can make it lie.
 */
export function isIdOf(id: Id, ip: string, port: number): boolean {
  return verifiedId(id, ip, port) !== undefined;
}

/**
 * `isIdOf` for a decoded contact: when its id is SHA-1 of its address, the memo's copy of that id
 * and IP (one shared, never-mutated `Id` and string per address) is put in place of the decoded
 * ones, so the contacts a node keeps share them instead of each holding its own copy. Returns
 * false, leaving the contact as it was, when the id does not match.
 */
export function adoptVerifiedId(c: { id: Id; ip: string; port: number }): boolean {
  const memo = verifiedMemo(c.id, c.ip, c.port);
  if (!memo) return false;
  c.id = memo.id;
  c.ip = memo.ip;
  return true;
}

/**
 * `adoptVerifiedId(c)` then `sharedContact(c)` with one look-up of the memo (the receive path
 * does both for every sender and every listed contact): the shared contact of a plain address,
 * else `c` with the memo's id and IP; undefined, leaving `c` as it was, when the id does not match.
 */
export function verifiedContact(c: Contact): Contact | undefined {
  const memo = verifiedMemo(c.id, c.ip, c.port);
  if (!memo) return undefined;
  c.id = memo.id;
  c.ip = memo.ip;
  if (c.dnsPort !== undefined || c.region !== undefined || c.clusters !== undefined) return c;
  return shareOf(memo, c);
}

/**
 * One contact object per address for the plain contacts (id, ip, port and at most an `httpPort`:
 * every answer's listed contacts, and the senders that advertise nothing else): after
 * `adoptVerifiedId(c)` succeeded, the memo's frozen contact equal to `c`, else `c` itself. Every
 * sighting of a peer then leaves the same object in the registry and the routing tables, instead of
 * each datagram's decoded copy replacing the last one (kept until the next datagram from that
 * peer, long enough to reach the old generation). Frozen: nobody may change a shared contact
 * (`mergeContact` makes a new one).
 */
export function sharedContact(c: Contact): Contact {
  if (c.dnsPort !== undefined || c.region !== undefined || c.clusters !== undefined) return c;
  const memo = memoOf(c.ip, c.port);
  if (!memo || memo.id !== c.id) return c;
  return shareOf(memo, c);
}

/** The memo's frozen contact equal to plain contact `c` (made or remade when it differs). */
function shareOf(memo: AddressIds, c: Contact): Contact {
  const shared = memo.contact;
  if (shared !== undefined && shared.httpPort === c.httpPort) return shared;
  const fresh: Contact = { id: memo.id, ip: c.ip, port: c.port };
  if (c.httpPort !== undefined) fresh.httpPort = c.httpPort;
  memo.contact = Object.freeze(fresh);
  return memo.contact;
}

/**
 * `addressString(ip, port)`, the memo's copy when the address was verified before (every sender
 * the RPC layer accepts was): the per-peer maps keyed by it then share one string per peer, and a
 * datagram builds none. Same value as `addressString` either way.
 */
export function addressKey(ip: string, port: number): string {
  return memoOf(ip, port)?.addr ?? addressString(ip, port);
}

/** The memo's entry for `ip:port`, if any. */
function memoOf(ip: string, port: number): AddressIds | undefined {
  return portOf(expectedIds.get(ip), port);
}

/** A memo host's entry for `port`, if any. */
function portOf(host: HostIds | undefined, port: number): AddressIds | undefined {
  if (host === undefined) return undefined;
  return host.first.port === port ? host.first : host.ports?.get(port);
}

/** The memo's id for `ip:port` when `id` equals it, else undefined. */
function verifiedId(id: Id, ip: string, port: number): Id | undefined {
  return verifiedMemo(id, ip, port)?.id;
}

/** The memo's entry for `ip:port` when `id` equals its id, else undefined. */
function verifiedMemo(id: Id, ip: string, port: number): AddressIds | undefined {
  let host = expectedIds.get(ip);
  let expected = portOf(host, port);
  if (!expected) {
    const addr = addressString(ip, port);
    let hashed: Id;
    try {
      hashed = sha1(addr);
    } catch {
      return undefined;
    }
    if (expectedCount >= EXPECTED_MAX) {
      expectedIds.clear();
      expectedCount = 0;
      host = undefined;
    }
    expected = { id: hashed, port, ip: host?.ip ?? ip, addr };
    memoHex.set(hashed, hexOf(hashed));
    if (!host) expectedIds.set(ip, { ip, first: expected, ports: undefined });
    else (host.ports ??= new Map()).set(port, expected);
    expectedCount++;
  }
  return expected.id === id || idEquals(expected.id, id) ? expected : undefined;
}

export function isId(x: unknown): x is Id {
  return x instanceof Uint8Array && x.length === ID_BYTES;
}

export function assertId(x: unknown, what = 'id'): asserts x is Id {
  if (!isId(x)) throw new InvalidArgumentError(`${what} must be a ${ID_BYTES}-byte Uint8Array`);
}

/**
 * Lower-case hex of the bytes: one flat string (no chain of concatenations left to flatten). A
 * verified contact's id (the memo's) gives the memo's string, made when the id was.
 */
export function toHex(id: Uint8Array): string {
  return memoHex.get(id) ?? hexOf(id);
}

function hexOf(id: Uint8Array): string {
  return Buffer.from(id.buffer, id.byteOffset, id.length).toString('hex');
}

export function fromHex(hex: string): Id {
  if (!/^[0-9a-fA-F]{40}$/.test(hex))
    throw new InvalidArgumentError(`not a 40-hex-digit id: ${hex}`);
  return new Uint8Array(Buffer.from(hex, 'hex'));
}

export function idEquals(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function xor(a: Id, b: Id): Id {
  const out = new Uint8Array(ID_BYTES);
  for (let i = 0; i < ID_BYTES; i++) out[i] = a[i]! ^ b[i]!;
  return out;
}

/** Compare two big-endian unsigned integers of equal length: <0, 0, >0. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < a.length; i++) {
    const d = a[i]! - b[i]!;
    if (d !== 0) return d;
  }
  return 0;
}

/** Which of `a`, `b` is closer to `target`: <0 when a is closer, 0 when equal, >0 when b is. */
export function compareDistance(a: Id, b: Id, target: Id): number {
  for (let i = 0; i < ID_BYTES; i++) {
    const d = (a[i]! ^ target[i]!) - (b[i]! ^ target[i]!);
    if (d !== 0) return d;
  }
  return 0;
}

/** Number of leading bits `a` and `b` share (160 when equal). */
export function commonPrefixLength(a: Id, b: Id): number {
  for (let i = 0; i < ID_BYTES; i++) {
    const x = a[i]! ^ b[i]!;
    if (x !== 0) return i * 8 + Math.clz32(x) - 24;
  }
  return ID_BYTES * 8;
}

/**
 * log2 of the XOR distance, as a float: the bit length of the distance minus a fraction from the
 * next bits. 0-distance gives -Infinity. Used by the halving walk, which needs "about half".
 */
export function logDistance(a: Id, b: Id): number {
  const cpl = commonPrefixLength(a, b);
  if (cpl >= ID_BYTES * 8) return -Infinity;
  // Take 32 bits of the distance starting at the leading one bit.
  let v = 0;
  for (let bit = cpl; bit < cpl + 32; bit++) {
    const byte = bit >> 3;
    const x = byte < ID_BYTES ? a[byte]! ^ b[byte]! : 0;
    v = v * 2 + ((x >> (7 - (bit & 7))) & 1);
  }
  return ID_BYTES * 8 - cpl - 1 + Math.log2(v / 2 ** 31);
}

/** A random id whose common prefix with `self` is exactly `cpl` bits (a point in bucket `cpl`). */
export function randomIdInBucket(self: Id, cpl: number, rng: Random): Id {
  const id = rng.bytes(new Uint8Array(ID_BYTES));
  for (let bit = 0; bit <= cpl && bit < ID_BYTES * 8; bit++) {
    const byte = bit >> 3;
    const mask = 0x80 >> (bit & 7);
    const selfBit = self[byte]! & mask;
    const want = bit < cpl ? selfBit : selfBit ^ mask;
    id[byte] = (id[byte]! & ~mask) | want;
  }
  return id;
}
