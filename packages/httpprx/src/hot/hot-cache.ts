/**
 * Hot objects: small stored bodies kept in memory (lru-cache, byte budget) with their response
 * header block prepared once, Age and Cache-Status included as its last two fields: a hit
 * patches those two values in place, and only when the age in whole seconds has changed.
 *
 * Routes: the raw Host value and request target of requests that were served an entry (after
 * full admission and mapping) lead straight to it on the fast path (../serve/fast-path.ts),
 * without parsing the target or hashing the URL again. A route also keeps what the mapping
 * decided beyond the URL: whether the origin's opt-out applies (a Coralized name) or not (a
 * configured site, whose origin is the operator's own) — one object can be reached both ways.
 * Routes live and die with their entry, so they cost nothing per object beyond the hot budget.
 */
import { LRUCache } from 'lru-cache';
import { CACHE_NAME } from '../constants.js';
import type { StoredMeta } from '../store/types.js';
import { INLINE_BODY_MAX_BYTES, serializeHead } from './prepared.js';

/** Raw (Host, target) spellings remembered per hot entry. */
const MAX_ROUTES_PER_ENTRY = 4;
/**
 * Memory of an entry besides its body and header block: its metadata object (header record, URL,
 * key and digest strings, age facts), the Buffer, the routes and the LRU's bookkeeping. Measured
 * at about 2.4 KB of heap per entry (1 KiB bodies, an origin's eight fields; heap used after a
 * full GC with and without a hot budget, divided by the objects), so that the budget bounds what
 * the entries really hold.
 */
const ENTRY_OVERHEAD_BYTES = 2048;
/** Fields the block ends with; their values are patched per age: [..., 'age', a, 'cache-status', s]. */
const PATCHED_FIELDS = 2;

function blockBytes(flat: readonly string[]): number {
  let n = 0;
  for (const s of flat) n += s.length + 16;
  return n;
}

/** The prepared strings' bytes: the head and the body text, each also in `wire`. */
function preparedBytes(e: HotEntry): number {
  return 2 * ((e.head?.length ?? 0) + (e.bodyText?.length ?? 0));
}

export interface HotEntry {
  meta: StoredMeta;
  body: Buffer;
  /** Freshness lifetime (s). */
  lifetime: number;
  /** May the fast path serve it (no Vary, no Location to rewrite, no no-cache)? */
  fast: boolean;
  /**
   * The response's header block as a flat [name, value, ...] array for `writeHead`, ending with
   * Age and Cache-Status whose values are those for age `blockAge` (see `HotCache.block`).
   */
  block: string[];
  blockAge: number;
  /**
   * The status line and fields of `block` but Age and Cache-Status, serialized as node:http's
   * `writeHead` would (./prepared.ts); undefined when the entry is sent with `writeHead`.
   */
  head: string | undefined;
  /** The body as a one-byte string, when `head` is prepared and the body is small. */
  bodyText: string | undefined;
  /**
   * The response as written (see `HotCache.wire`): for age `wireAge` with the connection fields
   * `wireConnection`.
   */
  wire: string;
  wireAge: number;
  wireConnection: string;
  /** Raw (Host, target) pairs routed to this entry. */
  routes: Array<[string, string]>;
  /** Clock time the fast path last refreshed its recency (here and in the store's LRU). */
  touchedAt: number;
  /** The origin domain its bytes are accounted to (../fairness/), set on first use. */
  domain?: string;
  /** Its site (scheme and authority, ../site-control/), set on first use. */
  site?: string;
  /** Still in the cache (false once evicted, replaced or deleted: its routes are gone too). */
  live: boolean;
}

/** Where a raw (Host, target) pair leads, as the full path mapped it. */
export interface HotRoute {
  entry: HotEntry;
  /**
   * Mapped as a Coralized name: the origin's opt-out (../site-control/opt-outs.ts) is checked
   * before a hit is served. False for a configured site (site mode), as on the full path.
   */
  optOut: boolean;
}

/**
 * `body` in memory of its own, of exactly its size. A body handed over is often a view of a larger
 * allocation — the socket read it arrived in (undici's chunks are views of it), or an 8 KiB slice
 * pool of `Buffer.allocUnsafe` — and a hot entry kept for hours would keep all of that alive, in
 * the middle of malloc's heap, where freed space around it is never given back to the system.
 */
function ownCopy(body: Buffer): Buffer {
  if (body.byteOffset === 0 && body.buffer.byteLength === body.length) return body;
  const own = Buffer.allocUnsafeSlow(body.length);
  body.copy(own);
  return own;
}

export class HotCache {
  readonly #lru: LRUCache<string, HotEntry>;
  readonly #routes = new Map<string, Map<string, HotRoute>>();
  readonly maxObjectBytes: number;
  /** The byte budget the entries' sizes are held within. */
  readonly budgetBytes: number;
  #evictions = 0;

  constructor(options: { budgetBytes: number; maxObjectBytes: number }) {
    this.maxObjectBytes = options.maxObjectBytes;
    this.budgetBytes = Math.max(1, options.budgetBytes);
    this.#lru = new LRUCache<string, HotEntry>({
      maxSize: this.budgetBytes,
      // The body, its header block and the metadata object: what an entry really holds.
      sizeCalculation: (e) =>
        e.body.length + ENTRY_OVERHEAD_BYTES + blockBytes(e.block) + preparedBytes(e),
      dispose: (e, _key, reason) => {
        if (reason === 'evict') this.#evictions++;
        this.#unroute(e);
      },
    });
  }

  get(key: string): HotEntry | undefined {
    return this.#lru.get(key);
  }

  get size(): number {
    return this.#lru.size;
  }

  /** Bytes held against the budget: bodies, header blocks and prepared strings (`sizeCalculation`). */
  get bytes(): number {
    return this.#lru.calculatedSize;
  }

  /** Entries dropped since start to make room within the budget (least recently used first). */
  get evictions(): number {
    return this.#evictions;
  }

  put(
    meta: StoredMeta,
    body: Buffer,
    e: { lifetime: number; fast: boolean; headers: string[] },
  ): HotEntry | undefined {
    if (meta.size > this.maxObjectBytes || body.length !== meta.size) return undefined;
    const head = serializeHead(meta.status, e.headers);
    const entry: HotEntry = {
      meta,
      body: ownCopy(body),
      lifetime: e.lifetime,
      fast: e.fast,
      block: e.headers.concat('age', '', 'cache-status', ''),
      blockAge: -1,
      head,
      bodyText:
        head !== undefined && body.length <= INLINE_BODY_MAX_BYTES
          ? body.toString('latin1')
          : undefined,
      wire: '',
      wireAge: -1,
      wireConnection: '',
      routes: [],
      touchedAt: 0,
      live: true,
    };
    this.#lru.set(meta.key, entry);
    return this.#lru.get(meta.key) === entry ? entry : undefined;
  }

  delete(key: string): void {
    this.#lru.delete(key);
  }

  /**
   * The route of a raw Host and target, if its entry is still hot. It does not mark the entry
   * used: the fast path calls `touch` at most once a second per entry, which keeps the LRU order
   * to within a second without the LRU's bookkeeping on every hit.
   */
  route(host: string, target: string): HotRoute | undefined {
    const r = this.#routes.get(host)?.get(target);
    return r?.entry.live ? r : undefined;
  }

  /** Mark `e` used (most recent in the LRU order). */
  touch(e: HotEntry): void {
    if (e.live) this.#lru.get(e.meta.key);
  }

  /**
   * Route a raw Host and target (already admitted and mapped to `e`'s URL) to `e`; `optOut`: it
   * was mapped as a Coralized name (see {@link HotRoute}).
   */
  addRoute(e: HotEntry, host: string, target: string, optOut: boolean): void {
    if (!e.fast || this.#lru.peek(e.meta.key) !== e) return;
    let byTarget = this.#routes.get(host);
    const old = byTarget?.get(target);
    if (old?.entry === e) {
      old.optOut = optOut;
      return;
    }
    if (e.routes.length >= MAX_ROUTES_PER_ENTRY) return;
    if (!byTarget) this.#routes.set(host, (byTarget = new Map<string, HotRoute>()));
    if (old) old.entry.routes = old.entry.routes.filter(([h, t]) => h !== host || t !== target);
    byTarget.set(target, { entry: e, optOut });
    e.routes.push([host, target]);
  }

  #unroute(e: HotEntry): void {
    e.live = false;
    for (const [host, target] of e.routes) {
      const byTarget = this.#routes.get(host);
      if (byTarget?.get(target)?.entry === e) {
        byTarget.delete(target);
        if (byTarget.size === 0) this.#routes.delete(host);
      }
    }
    e.routes = [];
  }

  /**
   * The full header block for a hit at `age` seconds (RFC 9111 §5.1 Age, RFC 9211 Cache-Status
   * with its ttl). The same array every time: its last two values are replaced when the age
   * changes, so use it at once (`writeHead` copies it into the response head before returning).
   */
  static block(e: HotEntry, age: number): string[] {
    if (e.blockAge !== age) {
      const b = e.block;
      const n = b.length;
      b[n - 2 * PATCHED_FIELDS + 1] = String(age);
      b[n - 1] = `${CACHE_NAME}; hit; ttl=${e.lifetime - age}`;
      e.blockAge = age;
    }
    return e.block;
  }

  /**
   * The response of a prepared entry (`e.head` set) at `age` seconds with node:http's connection
   * fields `connection`, as written on the socket: head, Age, Cache-Status, `connection`, the blank
   * line and, for a GET (`withBody`) of an entry with `bodyText`, the body. The GET's string is
   * kept on the entry and built again only when the age or the connection fields change.
   */
  static wire(e: HotEntry, age: number, connection: string, withBody: boolean): string {
    if (withBody && e.wireAge === age && e.wireConnection === connection) return e.wire;
    const b = HotCache.block(e, age);
    const n = b.length;
    const head = `${e.head!}age: ${b[n - 3]!}\r\ncache-status: ${b[n - 1]!}\r\n${connection}\r\n`;
    if (!withBody) return head;
    e.wire = head + (e.bodyText ?? '');
    e.wireAge = age;
    e.wireConnection = connection;
    return e.wire;
  }
}
