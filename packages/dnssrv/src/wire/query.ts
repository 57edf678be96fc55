/**
 * A strict decoder for incoming DNS queries. Pure, allocation-light and total: it never throws,
 * whatever the bytes. Every problem is reported as a result the server turns into FORMERR,
 * NOTIMP or a silent drop:
 *
 * - fewer than 12 bytes, or the QR bit set (a response, possibly reflected) → drop;
 * - opcode other than QUERY → NOTIMP;
 * - QDCOUNT ≠ 1, labels with reserved length bits, names over 255 bytes, compression pointers
 *   that do not point strictly backwards (which also rules out loops), records or counts that run
 *   past the end, trailing bytes, several OPT records, a malformed OPT or ECS option → FORMERR.
 */
import { CLASSIC_UDP_LIMIT, HEADER_SIZE, OPTION_ECS, TYPE } from './constants.js';

/** EDNS Client Subnet as sent by the resolver (RFC 7871 §6). */
export interface EcsOption {
  /** 1 = IPv4, 2 = IPv6. */
  family: 1 | 2;
  sourcePrefix: number;
  scopePrefix: number;
  /** The address, zero-padded to 4 or 16 bytes. */
  address: Uint8Array;
  /** The option data exactly as sent (family .. address), for keys and echoing. */
  raw: Uint8Array;
}

export interface OptRecord {
  /** Requestor's UDP payload size as sent (clamped to ≥ 512 when used). */
  udpSize: number;
  version: number;
  dnssecOk: boolean;
  ecs?: EcsOption;
}

export interface Query {
  id: number;
  /** The second header word (flags) as sent. */
  flags: number;
  rd: boolean;
  cd: boolean;
  /**
   * Lowercased presentation form without the trailing dot ('' = root). Bytes other than letters,
   * digits, '-' and '_' are escaped as \DDD, so a '.' inside a label cannot fake a zone suffix.
   * The labels as sent (case kept) are {@link questionLabels}.
   */
  qname: string;
  /** True when some label needed escaping (such a name is never a Coralized origin). */
  escaped: boolean;
  qtype: number;
  qclass: number;
  /**
   * Offset of the question name and the byte after the question's class. The question name is
   * never compressed (a pointer there would have nothing before it to point to, and is rejected),
   * so its wire bytes can be copied as they are.
   */
  questionStart: number;
  questionEnd: number;
  opt?: OptRecord;
}

export type DecodeResult =
  | { ok: true; query: Query }
  | {
      ok: false;
      /** 'drop' = no answer at all; otherwise answer with this rcode. */
      action: 'drop' | 'formerr' | 'notimp';
      reason: string;
      id?: number;
      flags?: number;
      /** Set when the question itself decoded, so the error answer can echo it. */
      query?: Query;
    };

// One name walk at a time (decoding is synchronous), so its results live in module state rather
// than in an object per name: the decoder runs once per query and allocates next to nothing.
const walked = { end: 0, escaped: false, textLength: 0 };
/**
 * The presentation form of the last name walked with `text`. At most 1,003 bytes: 250 bytes of
 * labels (four labels of 63, 63, 63 and 61 in a 255-byte name), each escaped as \DDD, and 3 dots.
 */
const TEXT = Buffer.allocUnsafeSlow(1024);

function isSimpleByte(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 45 || c === 95;
}

/**
 * Check one name at `offset` and fill `walked` (where it ends, whether it needed escapes); with `text`
 * also write its lowercased presentation form into TEXT. Returns an error reason, or undefined.
 */
function walkName(msg: Uint8Array, offset: number, text: boolean): string | undefined {
  let pos = offset;
  let end = -1;
  let total = 1;
  let lowest = offset; // pointers must go strictly below every position visited so far
  let t = 0;
  let escaped = false;
  for (;;) {
    if (pos >= msg.length) return 'name runs past the end';
    const len = msg[pos]!;
    if (len === 0) {
      if (end < 0) end = pos + 1;
      walked.end = end;
      walked.escaped = escaped;
      walked.textLength = t;
      return undefined;
    }
    const kind = len & 0xc0;
    if (kind === 0xc0) {
      if (pos + 1 >= msg.length) return 'compression pointer runs past the end';
      const target = ((len & 0x3f) << 8) | msg[pos + 1]!;
      if (end < 0) end = pos + 2;
      if (target >= lowest || target < HEADER_SIZE) return 'compression pointer not backwards';
      lowest = target;
      pos = target;
      continue;
    }
    if (kind !== 0) return 'reserved label type';
    total += len + 1;
    if (total > 255) return 'name longer than 255 bytes';
    if (pos + 1 + len > msg.length) return 'label runs past the end';
    if (text) {
      if (t > 0) TEXT[t++] = 46; // '.'
      for (let i = pos + 1; i <= pos + len; i++) {
        let c = msg[i]!;
        if (c >= 65 && c <= 90) c += 32;
        if (isSimpleByte(c)) {
          TEXT[t++] = c;
        } else {
          escaped = true;
          TEXT[t++] = 92; // '\'
          TEXT[t++] = 48 + Math.floor(c / 100);
          TEXT[t++] = 48 + (Math.floor(c / 10) % 10);
          TEXT[t++] = 48 + (c % 10);
        }
      }
    }
    pos += 1 + len;
  }
}

/**
 * The question's labels exactly as sent (latin1, case kept), for a query `decodeQuery` accepted
 * (its question name is plain labels, no compression, ending before `questionEnd - 4`).
 */
export function questionLabels(msg: Uint8Array, query: Query): string[] {
  const bytes = Buffer.isBuffer(msg) ? msg : Buffer.from(msg.buffer, msg.byteOffset, msg.length);
  const labels: string[] = [];
  const end = query.questionEnd - 5; // the root label's zero byte
  for (let pos = query.questionStart; pos < end; pos += 1 + bytes[pos]!) {
    labels.push(bytes.toString('latin1', pos + 1, pos + 1 + bytes[pos]!));
  }
  return labels;
}

/** Skip one resource record; returns its end or an error reason. */
function skipRecord(msg: Uint8Array, offset: number): number | string {
  const err = walkName(msg, offset, false);
  if (err !== undefined) return err;
  const p = walked.end;
  if (p + 10 > msg.length) return 'record header runs past the end';
  const rdlen = (msg[p + 8]! << 8) | msg[p + 9]!;
  if (p + 10 + rdlen > msg.length) return 'record data runs past the end';
  return p + 10 + rdlen;
}

function readOpt(msg: Uint8Array, offset: number): { end: number; opt: OptRecord } | string {
  // OPT owner must be the root name (a single zero byte).
  if (msg[offset] !== 0) return 'OPT owner is not the root';
  const p = offset + 1;
  if (p + 10 > msg.length) return 'OPT header runs past the end';
  const udpSize = (msg[p + 2]! << 8) | msg[p + 3]!;
  const version = msg[p + 5]!;
  const dnssecOk = (msg[p + 6]! & 0x80) !== 0;
  const rdlen = (msg[p + 8]! << 8) | msg[p + 9]!;
  const end = p + 10 + rdlen;
  if (end > msg.length) return 'OPT data runs past the end';
  const opt: OptRecord = { udpSize, version, dnssecOk };
  let q = p + 10;
  while (q < end) {
    if (q + 4 > end) return 'EDNS option header runs past OPT';
    const code = (msg[q]! << 8) | msg[q + 1]!;
    const len = (msg[q + 2]! << 8) | msg[q + 3]!;
    const data = q + 4;
    if (data + len > end) return 'EDNS option runs past OPT';
    if (code === OPTION_ECS) {
      if (opt.ecs) return 'two ECS options';
      const ecs = readEcs(msg.subarray(data, data + len));
      if (typeof ecs === 'string') return ecs;
      opt.ecs = ecs;
    }
    q = data + len;
  }
  return { end, opt };
}

/** RFC 7871 §6 and §7.1.1: a malformed ECS option is a FORMERR. */
function readEcs(d: Uint8Array): EcsOption | string {
  if (d.length < 4) return 'ECS option too short';
  const family = (d[0]! << 8) | d[1]!;
  if (family !== 1 && family !== 2) return 'ECS family not IPv4/IPv6';
  const sourcePrefix = d[2]!;
  const scopePrefix = d[3]!;
  const size = family === 1 ? 4 : 16;
  if (sourcePrefix > size * 8) return 'ECS source prefix too long';
  const need = Math.ceil(sourcePrefix / 8);
  if (d.length - 4 !== need) return 'ECS address length does not match the source prefix';
  const address = new Uint8Array(size);
  address.set(d.subarray(4));
  const rest = sourcePrefix & 7;
  if (rest !== 0 && (address[need - 1]! & (0xff >> rest)) !== 0) {
    return 'ECS address has bits beyond the source prefix';
  }
  return {
    family,
    sourcePrefix,
    scopePrefix,
    address,
    raw: d.slice(),
  };
}

function formerr(reason: string, id: number, flags: number, query?: Query): DecodeResult {
  return query
    ? { ok: false, action: 'formerr', reason, id, flags, query }
    : { ok: false, action: 'formerr', reason, id, flags };
}

/** Decode a query. Never throws. */
export function decodeQuery(msg: Uint8Array): DecodeResult {
  if (msg.length < HEADER_SIZE) return { ok: false, action: 'drop', reason: 'short header' };
  const id = (msg[0]! << 8) | msg[1]!;
  const flags = (msg[2]! << 8) | msg[3]!;
  if (flags & 0x8000) return { ok: false, action: 'drop', reason: 'QR set', id, flags };
  const opcode = (flags >> 11) & 0xf;
  if (opcode !== 0) return { ok: false, action: 'notimp', reason: `opcode ${opcode}`, id, flags };
  const qd = (msg[4]! << 8) | msg[5]!;
  const an = (msg[6]! << 8) | msg[7]!;
  const ns = (msg[8]! << 8) | msg[9]!;
  const ar = (msg[10]! << 8) | msg[11]!;
  if (qd !== 1) return formerr(`QDCOUNT ${qd}`, id, flags);
  const bad = walkName(msg, HEADER_SIZE, true);
  if (bad !== undefined) return formerr(bad, id, flags);
  const qend = walked.end;
  if (qend + 4 > msg.length) return formerr('question runs past the end', id, flags);
  const query: Query = {
    id,
    flags,
    rd: (flags & 0x0100) !== 0,
    cd: (flags & 0x0010) !== 0,
    qname: TEXT.toString('latin1', 0, walked.textLength),
    escaped: walked.escaped,
    qtype: (msg[qend]! << 8) | msg[qend + 1]!,
    qclass: (msg[qend + 2]! << 8) | msg[qend + 3]!,
    questionStart: HEADER_SIZE,
    questionEnd: qend + 4,
  };
  let pos = query.questionEnd;
  // Answer and authority sections of a query are unusual but legal; skip them strictly.
  for (let i = 0; i < an + ns; i++) {
    const next = skipRecord(msg, pos);
    if (typeof next === 'string') return formerr(next, id, flags, query);
    pos = next;
  }
  for (let i = 0; i < ar; i++) {
    // Peek at the type: an OPT is parsed, anything else skipped.
    const bad = walkName(msg, pos, false);
    if (bad !== undefined) return formerr(bad, id, flags, query);
    const ownerEnd = walked.end;
    if (ownerEnd + 2 <= msg.length && ((msg[ownerEnd]! << 8) | msg[ownerEnd + 1]!) === TYPE.OPT) {
      if (query.opt) return formerr('more than one OPT', id, flags, query);
      const opt = readOpt(msg, pos);
      if (typeof opt === 'string') return formerr(opt, id, flags, query);
      query.opt = opt.opt;
      pos = opt.end;
    } else {
      const next = skipRecord(msg, pos);
      if (typeof next === 'string') return formerr(next, id, flags, query);
      pos = next;
    }
  }
  if (pos !== msg.length) return formerr(`${msg.length - pos} trailing bytes`, id, flags, query);
  return { ok: true, query };
}

/** The UDP payload limit this query allows for its answer. */
export function udpLimit(query: Query | undefined, serverMax: number): number {
  if (!query?.opt) return CLASSIC_UDP_LIMIT;
  return Math.max(CLASSIC_UDP_LIMIT, Math.min(query.opt.udpSize, serverMax));
}
