/**
 * Responses without records, written by hand: header + question (+ OPT) for REFUSED, FORMERR,
 * NOTIMP, BADVERS, truncated (TC) answers and rate-limit slips. The question's wire bytes are
 * copied, so odd names (a '.' inside a label, any byte) are echoed exactly. Answers with records
 * are templates (`template.ts`).
 */
import { HEADER_SIZE, OPTION_ECS, TYPE } from './constants.js';
import type { Query } from './query.js';
import type { ResponseOpt } from './records.js';

function optTtl(rcode: number, dnssecOk: boolean): number {
  return (((rcode >> 4) & 0xff) << 24) + (dnssecOk ? 0x8000 : 0);
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
