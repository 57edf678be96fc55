/**
 * The Cache-Status facts of a response (RFC 9211), read from the header the proxy sent, so the
 * access log says exactly what the client was told. Parsed with `structured-headers` (an RFC 8941
 * parser) rather than by splitting on `;`: a `detail` string may hold any of the separators.
 */
import { parseList, Token } from 'structured-headers';
import type { BareItem, Parameters } from 'structured-headers';
import type { CacheFacts, CacheResult } from './record.js';

/** The facts of a response without a Cache-Status member of this cache: the node answered it. */
const NO_MEMBER: CacheFacts = Object.freeze({
  result: 'error',
  hit: false,
  stored: false,
  collapsed: false,
});

function text(v: BareItem | undefined): string | undefined {
  if (typeof v === 'string') return v;
  if (v instanceof Token) return v.toString();
  return undefined;
}

function int(v: BareItem | undefined): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) ? v : undefined;
}

/** The result the RFC 9211 parameters of one member add up to (see `CacheResult`). */
function resultOf(p: Parameters): CacheResult {
  const detail = text(p.get('detail')) ?? '';
  const stale = detail.includes('stale-');
  if (p.get('hit') === true) return stale ? 'stale' : 'hit';
  const fwd = text(p.get('fwd'));
  if (fwd === undefined) return 'error';
  if (fwd === 'stale') {
    if (stale) return 'stale';
    return int(p.get('fwd-status')) === 304 ? 'revalidated' : 'expired';
  }
  if (fwd === 'bypass' || fwd === 'method' || fwd === 'request') return 'bypass';
  return 'miss';
}

/**
 * The facts of the member named `cacheName` in a Cache-Status field value (the last such member:
 * RFC 9211 appends the cache nearest the client last), or those of a node-made answer when the
 * field is absent, unparseable or has no such member.
 */
export function cacheFacts(header: string | undefined, cacheName: string): CacheFacts {
  if (header === undefined || header === '') return NO_MEMBER;
  // A node sends few distinct values (a hit's differ by their ttl): parsed once each, the facts
  // shared (frozen) by every record that had them.
  const key = cacheName + '\n' + header;
  let facts = memo.get(key);
  if (facts === undefined) {
    facts = Object.freeze(parse(header, cacheName));
    if (memo.size >= MEMO_ENTRIES) memo.clear();
    memo.set(key, facts);
  }
  return facts;
}

/** Distinct Cache-Status values remembered (all forgotten at once when full). */
const MEMO_ENTRIES = 1024;
const memo = new Map<string, CacheFacts>();

function parse(header: string, cacheName: string): CacheFacts {
  let list;
  try {
    list = parseList(header);
  } catch {
    return NO_MEMBER;
  }
  for (let i = list.length - 1; i >= 0; i--) {
    const [item, p] = list[i]!;
    if (Array.isArray(item) || text(item) !== cacheName) continue;
    const facts: CacheFacts = {
      result: resultOf(p),
      hit: p.get('hit') === true,
      stored: p.get('stored') === true,
      collapsed: p.get('collapsed') === true,
    };
    const fwd = text(p.get('fwd'));
    if (fwd !== undefined) facts.fwd = fwd;
    const fwdStatus = int(p.get('fwd-status'));
    if (fwdStatus !== undefined) facts.fwdStatus = fwdStatus;
    const ttl = int(p.get('ttl'));
    if (ttl !== undefined) facts.ttl = ttl;
    const detail = text(p.get('detail'));
    if (detail !== undefined) facts.detail = detail;
    return facts;
  }
  return NO_MEMBER;
}
