/**
 * Locality hints: every node puts a record of itself, at level 0, under the keys of its /24, its /16
 * and its region label, so a new node (and the DNS server) can find nodes near an address by name.
 *
 *   key  = sha1("net:203.0.113.0/24"), sha1("net:203.0.0.0/16"), sha1("region:eu-west")
 *   value = MessagePack [id: bin20, ip, port, httpPort (0 = none), dnsPort (0 = none), region ("" = none)]
 *
 * IPv6 addresses get no network hints (only the region hint).
 */
import { isIPv4 } from 'node:net';
import { Packr, Unpackr } from 'msgpackr';
import type { Contact } from '../contact.js';
import { MAX_REGION_LENGTH } from '../constants.js';
import { idEquals, keyFromName, nodeIdFor, type Id } from '../id/id.js';

const packr = new Packr({ useRecords: false });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: false });

export type HintKind = 24 | 16 | 'region';

export interface HintKey {
  kind: HintKind;
  name: string;
  key: Id;
}

/** The network hint names of an IPv4 address (/24 first), or [] for IPv6 / invalid input. */
export function networkHintKeys(ip: string): HintKey[] {
  if (!isIPv4(ip)) return [];
  const [a, b, c] = ip.split('.');
  const n24 = `net:${a}.${b}.${c}.0/24`;
  const n16 = `net:${a}.${b}.0.0/16`;
  return [
    { kind: 24, name: n24, key: keyFromName(n24) },
    { kind: 16, name: n16, key: keyFromName(n16) },
  ];
}

export function regionHintKey(region: string): HintKey {
  const name = `region:${region}`;
  return { kind: 'region', name, key: keyFromName(name) };
}

/** Every hint key a node with this contact publishes under. */
export function hintKeysFor(contact: Contact): HintKey[] {
  const keys = networkHintKeys(contact.ip);
  if (contact.region) keys.push(regionHintKey(contact.region));
  return keys;
}

export function encodeNodeRecord(c: Contact): Uint8Array {
  return new Uint8Array(
    packr.pack([c.id, c.ip, c.port, c.httpPort ?? 0, c.dnsPort ?? 0, c.region ?? '']),
  );
}

/** Decode and check a hint record (its id must be SHA-1 of its address); undefined when invalid. */
export function decodeNodeRecord(data: Uint8Array): Contact | undefined {
  let t: unknown;
  try {
    t = unpackr.unpack(data);
  } catch {
    return undefined;
  }
  if (!Array.isArray(t) || t.length !== 6) return undefined;
  const [id, ip, port, httpPort, dnsPort, region] = t as unknown[];
  if (!(id instanceof Uint8Array) || typeof ip !== 'string' || typeof region !== 'string')
    return undefined;
  const ports = [port, httpPort, dnsPort];
  if (!ports.every((p) => typeof p === 'number' && Number.isInteger(p) && p >= 0 && p <= 65535))
    return undefined;
  if (port === 0 || region.length > MAX_REGION_LENGTH) return undefined;
  let expected: Id;
  try {
    expected = nodeIdFor(ip, port as number);
  } catch {
    return undefined;
  }
  if (!idEquals(expected, id)) return undefined;
  const c: Contact = { id: new Uint8Array(id), ip, port: port as number };
  if (httpPort) c.httpPort = httpPort as number;
  if (dnsPort) c.dnsPort = dnsPort as number;
  if (region) c.region = region;
  return c;
}
