/**
 * Answer templates: an encoded response with the question left out, so that one template serves
 * every name it applies to. A miss for a new name is then a copy and a patch, not a build.
 *
 * A response is laid out as header · question · [CNAME] · body. The question is copied from the
 * query (so 0x20 case is echoed exactly); the body — answer, authority and additional records and
 * the OPT — was encoded once, with every name written relative to what it can point at:
 *
 * - the **answer name** (the owner of the answer records): the question name at offset 12, or the
 *   target of the CNAME record when the template has one;
 * - the **zone** (`nyud.net`): the suffix of the question name, wherever it ends;
 * - an earlier name inside the body (RFC 1035 §4.1.4 compression within the body itself).
 *
 * {@link BodyWriter} records where each such pointer is ("slots"); {@link instantiate} copies the
 * body after the question and writes each pointer for this question's length. The optional CNAME
 * (a short name aliased into a delegated sub-zone: `www.example.com.nyud.net` →
 * `www.example.com.l2.l1.l0.nyud.net`) is written per query from the question's own labels.
 *
 * Pure, no dns2: a template's byte offsets must be known to patch them, which dns2's encoder
 * (compressing against the question) does not give. Tests decode the output with dns2's parser.
 */
import { parseIp } from '../net/ip.js';
import { HEADER_SIZE, OPTION_ECS, TYPE } from './constants.js';
import type { Query } from './query.js';
import type { ResponseOpt } from './records.js';

/** A name offset this far into a body is not used as a compression target (pointers have 14 bits). */
const MAX_TARGET = 0x2000;

export interface Template {
  /** Header with id 0: flags (QR, AA, RCODE; RD/CD come from the query) and the four counts. */
  header: Buffer;
  /** When set, a CNAME from the question name to `<labels before the zone>.<sub>.<zone>` comes first. */
  cname: { ttl: number; sub: Buffer } | undefined;
  /** Wire length of the zone (labels and the root byte) the question name ends with. */
  zoneWire: number;
  body: Buffer;
  /** Offsets in `body` of pointers to body names (the body holds the pointer relative to itself). */
  bodySlots: Uint16Array;
  /** Offsets in `body` of pointers to the answer name. */
  answerSlots: Uint16Array;
  /** Offsets in `body` of pointers to the zone suffix of the question. */
  zoneSlots: Uint16Array;
}

/** Marks a record owned by the answer name. */
export const ANSWER = Symbol('answer name');
export type Owner = string | typeof ANSWER;

export interface SoaFields {
  mname: string;
  rname: string;
  serial: number;
  refresh: number;
  retry: number;
  expire: number;
  minimum: number;
}

/** Encodes the body of a template. Names are lowercase presentation form without the final dot. */
export class BodyWriter {
  readonly #zone: string;
  #buf = Buffer.allocUnsafe(512);
  #len = 0;
  readonly #names = new Map<string, number>();
  readonly #bodySlots: number[] = [];
  readonly #answerSlots: number[] = [];
  readonly #zoneSlots: number[] = [];
  readonly counts = { an: 0, ns: 0, ar: 0 };

  /** `zone`: the zone every question this template answers ends with ('' = none). */
  constructor(zone: string) {
    this.#zone = zone;
  }

  #reserve(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#len + n));
    this.#buf.copy(grown, 0, 0, this.#len);
    this.#buf = grown;
  }

  #u8(v: number): void {
    this.#reserve(1);
    this.#buf[this.#len++] = v & 0xff;
  }

  #u16(v: number): void {
    this.#reserve(2);
    this.#buf.writeUInt16BE(v & 0xffff, this.#len);
    this.#len += 2;
  }

  #u32(v: number): void {
    this.#reserve(4);
    this.#buf.writeUInt32BE(v >>> 0, this.#len);
    this.#len += 4;
  }

  #bytes(b: Uint8Array): void {
    this.#reserve(b.length);
    this.#buf.set(b, this.#len);
    this.#len += b.length;
  }

  /** A name, compressed against the zone, the answer name (owner only) and earlier body names. */
  #name(owner: Owner): void {
    if (owner === ANSWER) {
      this.#answerSlots.push(this.#len);
      this.#u16(0xc000);
      return;
    }
    let rest = owner;
    while (rest !== '') {
      if (rest === this.#zone) {
        this.#zoneSlots.push(this.#len);
        this.#u16(0xc000);
        return;
      }
      const at = this.#names.get(rest);
      if (at !== undefined) {
        this.#bodySlots.push(this.#len);
        this.#u16(0xc000 | at);
        return;
      }
      if (this.#len < MAX_TARGET) this.#names.set(rest, this.#len);
      const dot = rest.indexOf('.');
      const n = dot < 0 ? rest.length : dot;
      this.#reserve(n + 1);
      this.#buf[this.#len] = n;
      this.#buf.write(rest.slice(0, n), this.#len + 1, 'latin1');
      this.#len += n + 1;
      rest = dot < 0 ? '' : rest.slice(dot + 1);
    }
    this.#u8(0);
  }

  /** One record of class IN; `section` counts it. */
  #record(
    section: 'an' | 'ns' | 'ar',
    owner: Owner,
    type: number,
    ttl: number,
    rdata: () => void,
  ): void {
    this.#name(owner);
    this.#u16(type);
    this.#u16(1);
    this.#u32(ttl);
    const lenAt = this.#len;
    this.#u16(0);
    rdata();
    this.#buf.writeUInt16BE(this.#len - lenAt - 2, lenAt);
    this.counts[section]++;
  }

  a(section: 'an' | 'ns' | 'ar', owner: Owner, ttl: number, address: string): void {
    const b = parseIp(address);
    if (b?.length !== 4) throw new Error(`not an IPv4 address: ${address}`);
    this.#record(section, owner, TYPE.A, ttl, () => this.#bytes(b));
  }

  aaaa(section: 'an' | 'ns' | 'ar', owner: Owner, ttl: number, address: string): void {
    const b = parseIp(address);
    if (b?.length !== 16) throw new Error(`not an IPv6 address: ${address}`);
    this.#record(section, owner, TYPE.AAAA, ttl, () => this.#bytes(b));
  }

  cname(section: 'an' | 'ns' | 'ar', owner: Owner, ttl: number, target: string): void {
    this.#record(section, owner, TYPE.CNAME, ttl, () => this.#name(target));
  }

  ns(section: 'an' | 'ns' | 'ar', owner: Owner, ttl: number, host: string): void {
    this.#record(section, owner, TYPE.NS, ttl, () => this.#name(host));
  }

  soa(section: 'an' | 'ns' | 'ar', owner: Owner, ttl: number, soa: SoaFields): void {
    this.#record(section, owner, TYPE.SOA, ttl, () => {
      this.#name(soa.mname);
      this.#name(soa.rname);
      this.#u32(soa.serial);
      this.#u32(soa.refresh);
      this.#u32(soa.retry);
      this.#u32(soa.expire);
      this.#u32(soa.minimum);
    });
  }

  /** One TXT record of one character-string (≤ 255 bytes). */
  txt(section: 'an' | 'ns' | 'ar', owner: Owner, ttl: number, text: string): void {
    const b = Buffer.from(text, 'latin1');
    if (b.length > 255) throw new Error('TXT string over 255 bytes');
    this.#record(section, owner, TYPE.TXT, ttl, () => {
      this.#u8(b.length);
      this.#bytes(b);
    });
  }

  /** The OPT pseudo-record (RFC 6891), with an ECS echo (RFC 7871) when given; counts in ar. */
  opt(opt: ResponseOpt, rcode: number): void {
    this.#u8(0); // root owner
    this.#u16(TYPE.OPT);
    this.#u16(opt.udpSize);
    this.#u8((rcode >> 4) & 0xff); // extended rcode
    this.#u8(0); // version
    this.#u16(opt.dnssecOk ? 0x8000 : 0);
    const ecs = opt.ecs;
    if (!ecs) {
      this.#u16(0);
    } else {
      const n = Math.ceil(ecs.sourcePrefix / 8);
      this.#u16(8 + n);
      this.#u16(OPTION_ECS);
      this.#u16(4 + n);
      this.#u16(ecs.family);
      this.#u8(ecs.sourcePrefix);
      this.#u8(ecs.scopePrefix);
      this.#bytes(ecs.address.subarray(0, n));
    }
    this.counts.ar++;
  }

  /** The template: header flags from `aa` and `rcode`, plus an optional leading CNAME. */
  finish(aa: boolean, rcode: number, cname?: { ttl: number; sub: readonly string[] }): Template {
    const header = Buffer.alloc(HEADER_SIZE); // id 0, counts below
    header[2] = 0x80 | (aa ? 0x04 : 0);
    header[3] = rcode & 0x0f;
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(this.counts.an + (cname ? 1 : 0), 6);
    header.writeUInt16BE(this.counts.ns, 8);
    header.writeUInt16BE(this.counts.ar, 10);
    return {
      header,
      cname: cname ? { ttl: cname.ttl, sub: labelsWire(cname.sub) } : undefined,
      zoneWire: this.#zone === '' ? 1 : this.#zone.length + 2,
      body: Buffer.from(this.#buf.subarray(0, this.#len)),
      bodySlots: Uint16Array.from(this.#bodySlots),
      answerSlots: Uint16Array.from(this.#answerSlots),
      zoneSlots: Uint16Array.from(this.#zoneSlots),
    };
  }
}

/** Labels in wire form, without a terminating root byte. */
function labelsWire(labels: readonly string[]): Buffer {
  return Buffer.concat(
    labels.map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, 'latin1')])),
  );
}

/** Bytes a template's response takes for this question (the UDP size check needs it first). */
export function instantiatedLength(t: Template, query: Query): number {
  const qlen = query.questionEnd - query.questionStart;
  let len = HEADER_SIZE + qlen + t.body.length;
  if (t.cname) {
    const xWire = query.questionEnd - 4 - t.zoneWire - HEADER_SIZE;
    len += 12 + xWire + t.cname.sub.length + 2;
  }
  return len;
}

/**
 * The response to `query` (whose bytes are `msg`) from template `t`: its id, RD and CD, its
 * question as sent, and every pointer written for where this question's names are. The question
 * name must end with the template's zone (the caller classified it so).
 */
export function instantiate(t: Template, msg: Uint8Array, query: Query): Buffer {
  const qend = query.questionEnd;
  const qlen = qend - query.questionStart;
  const zoneOff = qend - 4 - t.zoneWire;
  const cname = t.cname;
  const xWire = zoneOff - HEADER_SIZE;
  const cnameLen = cname ? 12 + xWire + cname.sub.length + 2 : 0;
  const body = t.body;
  const out = Buffer.allocUnsafe(HEADER_SIZE + qlen + cnameLen + body.length);
  t.header.copy(out, 0);
  out[0] = msg[0]!;
  out[1] = msg[1]!;
  out[2] = out[2]! | (msg[2]! & 0x01); // RD
  out[3] = out[3]! | (msg[3]! & 0x10); // CD
  out.set(msg.subarray(query.questionStart, qend), HEADER_SIZE);
  let p = HEADER_SIZE + qlen;
  let answerOff = HEADER_SIZE;
  if (cname) {
    out[p] = 0xc0;
    out[p + 1] = HEADER_SIZE;
    out.writeUInt16BE(TYPE.CNAME, p + 2);
    out.writeUInt16BE(1, p + 4);
    out.writeUInt32BE(cname.ttl, p + 6);
    out.writeUInt16BE(xWire + cname.sub.length + 2, p + 10);
    answerOff = p + 12;
    out.set(msg.subarray(HEADER_SIZE, zoneOff), answerOff);
    cname.sub.copy(out, answerOff + xWire);
    const z = answerOff + xWire + cname.sub.length;
    out[z] = 0xc0 | (zoneOff >> 8);
    out[z + 1] = zoneOff & 0xff;
    p += cnameLen;
  }
  const start = p;
  body.copy(out, start);
  const bs = t.bodySlots;
  for (let i = 0; i < bs.length; i++) {
    const at = start + bs[i]!;
    const v = start + (((body[bs[i]!]! & 0x3f) << 8) | body[bs[i]! + 1]!);
    out[at] = 0xc0 | (v >> 8);
    out[at + 1] = v & 0xff;
  }
  const as = t.answerSlots;
  for (let i = 0; i < as.length; i++) {
    const at = start + as[i]!;
    out[at] = 0xc0 | (answerOff >> 8);
    out[at + 1] = answerOff & 0xff;
  }
  const zs = t.zoneSlots;
  for (let i = 0; i < zs.length; i++) {
    const at = start + zs[i]!;
    out[at] = 0xc0 | (zoneOff >> 8);
    out[at + 1] = zoneOff & 0xff;
  }
  return out;
}
