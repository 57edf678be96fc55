/**
 * Response encoding.
 *
 * - {@link encodeResponse}: the general path, built on dns2's `Packet` codec (records, name
 *   compression, the OPT record and its ECS option), writing into a {@link ByteWriter} because
 *   dns2's own writer stores one array element per bit. The server also caches the output.
 * - {@link encodeBare}: a hand-written header + question (+ OPT) encoder for answers without
 *   records (REFUSED, FORMERR, NOTIMP, truncated TC answers, rate-limit slips). It copies the
 *   question's wire bytes, so odd names (a '.' inside a label, any byte) are echoed exactly.
 * - {@link patchCached}: per-query patch of a cached encoded answer: transaction id, RD/CD, and the
 *   question name's bytes as sent (0x20 case echo).
 */
import dns2 from 'dns2';
import { formatIp } from '../net/ip.js';
import { ByteWriter, type Dns2Writer } from './byte-writer.js';
import { HEADER_SIZE, OPTION_ECS, TYPE } from './constants.js';
import type { Query } from './query.js';
import type { ResourceRecord, ResponseOpt, ResponseSpec } from './records.js';

const { Packet } = dns2;

interface Dns2Record {
  name: string;
  type: number;
  class: number;
  ttl: number;
  [k: string]: unknown;
}

// Object literals, not `{ ...base, ... }`: objects made by spreading here were found to survive
// scavenges (and be promoted) although nothing kept them — ~600 KB per scavenge while encoding —
// which made GC pauses twice as long whenever many answers were being built.
function toDns2(rr: ResourceRecord): Dns2Record {
  switch (rr.type) {
    case 'A':
      return { name: rr.name, class: 1, ttl: rr.ttl, type: TYPE.A, address: rr.address };
    case 'AAAA':
      return { name: rr.name, class: 1, ttl: rr.ttl, type: TYPE.AAAA, address: rr.address };
    case 'CNAME':
      return { name: rr.name, class: 1, ttl: rr.ttl, type: TYPE.CNAME, domain: rr.target };
    case 'NS':
      return { name: rr.name, class: 1, ttl: rr.ttl, type: TYPE.NS, ns: rr.host };
    case 'TXT':
      return { name: rr.name, class: 1, ttl: rr.ttl, type: TYPE.TXT, data: [rr.text] };
    case 'SOA':
      return {
        name: rr.name,
        class: 1,
        ttl: rr.ttl,
        type: TYPE.SOA,
        primary: rr.mname,
        admin: rr.rname,
        serial: rr.serial,
        refresh: rr.refresh,
        retry: rr.retry,
        expiration: rr.expire,
        minimum: rr.minimum,
      };
  }
}

function optToDns2(opt: ResponseOpt, rcode: number): Dns2Record {
  const rdata = opt.ecs
    ? [
        {
          ednsCode: OPTION_ECS,
          family: opt.ecs.family,
          sourcePrefixLength: opt.ecs.sourcePrefix,
          scopePrefixLength: opt.ecs.scopePrefix,
          ip: formatIp(opt.ecs.address),
        },
      ]
    : [];
  const rec = Packet.Resource.EDNS(rdata) as unknown as Dns2Record;
  rec.name = '';
  rec.class = opt.udpSize;
  rec.ttl = optTtl(rcode, opt.dnssecOk);
  return rec;
}

function optTtl(rcode: number, dnssecOk: boolean): number {
  return (((rcode >> 4) & 0xff) << 24) + (dnssecOk ? 0x8000 : 0);
}

/**
 * Encode a full response with dns2's codec, through a {@link ByteWriter} unless told otherwise
 * (dns2's own bit-array writer gives the same bytes, ~50× slower).
 */
export function encodeResponse(spec: ResponseSpec, writer: Dns2Writer = new ByteWriter()): Buffer {
  const packet = new Packet();
  const header = packet.header as unknown as Record<string, number>;
  header.id = spec.id;
  header.qr = 1;
  header.opcode = 0;
  header.aa = spec.aa ? 1 : 0;
  header.tc = 0;
  header.rd = spec.rd ? 1 : 0;
  header.ra = 0;
  header.z = 0;
  header.ad = 0;
  header.cd = spec.cd ? 1 : 0;
  header.rcode = spec.rcode & 0xf;
  packet.questions = [spec.question as never];
  packet.answers = spec.answers.map(toDns2) as never[];
  packet.authorities = spec.authorities.map(toDns2) as never[];
  const additionals = spec.additionals.map(toDns2);
  if (spec.opt) additionals.push(optToDns2(spec.opt, spec.rcode));
  packet.additionals = additionals as never[];
  // dns2's typings omit the writer parameter its toBuffer takes. Copied: a ByteWriter returns a
  // view of its own (larger) buffer.
  return Buffer.from((packet as unknown as { toBuffer(w: Dns2Writer): Buffer }).toBuffer(writer));
}

export interface BareSpec {
  id: number;
  /** Flags word of the query (RD and CD are copied from it). */
  queryFlags: number;
  aa: boolean;
  tc: boolean;
  rcode: number;
  /** The query bytes and its decoded question, to echo; omit for no question. */
  question?: { msg: Uint8Array; query: Query };
  opt?: ResponseOpt;
}

/** Header + question (+ OPT) — no records. */
export function encodeBare(spec: BareSpec): Buffer {
  const q = spec.question;
  const qbytes = q ? q.msg.subarray(q.query.questionStart, q.query.questionEnd) : undefined;
  const optLen = spec.opt
    ? 11 + (spec.opt.ecs ? 8 + Math.ceil(spec.opt.ecs.sourcePrefix / 8) : 0)
    : 0;
  const out = Buffer.alloc(HEADER_SIZE + (qbytes?.length ?? 0) + optLen);
  out.writeUInt16BE(spec.id, 0);
  out[2] = 0x80 | (spec.aa ? 0x04 : 0) | (spec.tc ? 0x02 : 0) | ((spec.queryFlags >> 8) & 0x01);
  out[3] = (spec.queryFlags & 0x10) | (spec.rcode & 0x0f);
  out.writeUInt16BE(qbytes ? 1 : 0, 4);
  out.writeUInt16BE(spec.opt ? 1 : 0, 10);
  let p = HEADER_SIZE;
  if (qbytes) {
    out.set(qbytes, p);
    p += qbytes.length;
  }
  if (spec.opt) {
    const o = spec.opt;
    out[p] = 0; // root owner
    out.writeUInt16BE(TYPE.OPT, p + 1);
    out.writeUInt16BE(o.udpSize, p + 3);
    out.writeUInt32BE(optTtl(spec.rcode, o.dnssecOk) >>> 0, p + 5);
    out.writeUInt16BE(optLen - 11, p + 9);
    p += 11;
    if (o.ecs) {
      const n = Math.ceil(o.ecs.sourcePrefix / 8);
      out.writeUInt16BE(OPTION_ECS, p);
      out.writeUInt16BE(4 + n, p + 2);
      out.writeUInt16BE(o.ecs.family, p + 4);
      out[p + 6] = o.ecs.sourcePrefix;
      out[p + 7] = o.ecs.scopePrefix;
      out.set(o.ecs.address.subarray(0, n), p + 8);
    }
  }
  return out;
}

/**
 * Copy a cached answer for a new query: its id, its RD and CD bits and its question name bytes
 * (same name up to case, so same length: only the letters' case changes).
 */
export function patchCached(cached: Uint8Array, msg: Uint8Array, query: Query): Buffer {
  const out = Buffer.allocUnsafe(cached.length);
  out.set(cached);
  out[0] = msg[0]!;
  out[1] = msg[1]!;
  out[2] = (out[2]! & 0xfe) | (msg[2]! & 0x01);
  out[3] = (out[3]! & 0xef) | (msg[3]! & 0x10);
  // The question name as sent (a byte loop: no view object for ~40 bytes).
  for (let i = query.questionStart, o = HEADER_SIZE; i < query.questionEnd - 4; i++, o++) {
    out[o] = msg[i]!;
  }
  return out;
}
