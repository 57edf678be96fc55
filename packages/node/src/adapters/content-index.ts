/**
 * The DSHT as the proxy's `ContentIndex`: `announce` is a sloppy put of a holder record under the
 * URL key, `lookup` a hierarchical get whose values are decoded, validated and reduced to one
 * (the newest) record per node, and `withdraw` puts a tombstone that replaces this node's earlier
 * record wherever the put lands. Invalid values are counted and skipped, never thrown.
 */
import type { Clock } from '@coral/testkit';
import { systemClock } from '@coral/testkit';
import type { ContentIndex, Holder } from '@coral/httpprx';
import type { Logger } from 'pino';
import { decodeHolder, encodeHolder, type HolderRecord } from './holder-codec.js';

/** The part of the DSHT this adapter uses. */
export interface DshtValueStore {
  get(
    key: Uint8Array,
    opts?: { signal?: AbortSignal },
  ): Promise<{ values: Uint8Array[]; stats: { level?: number } }>;
  put(
    key: Uint8Array,
    value: Uint8Array,
    ttlSeconds: number,
    opts?: { signal?: AbortSignal },
  ): Promise<unknown>;
}

export interface DshtContentIndexComponents {
  dsht: DshtValueStore;
  clock?: Clock;
  logger?: Pick<Logger, 'debug' | 'warn'>;
}

export interface DshtContentIndexOptions {
  /** This node (hex id, advertised ip and proxy port): its own records are never returned. */
  self: { nodeId: string; ip: string; httpPort: number };
  /** TTL of the tombstone a withdraw puts (default {@link DEFAULT_WITHDRAW_TTL_SECONDS}). */
  withdrawTtlSeconds?: number;
}

export const DEFAULT_WITHDRAW_TTL_SECONDS = 600;

export class DshtContentIndex implements ContentIndex {
  readonly #dsht: DshtValueStore;
  readonly #clock: Clock;
  readonly #logger: Pick<Logger, 'debug' | 'warn'> | undefined;
  readonly #self: DshtContentIndexOptions['self'];
  readonly #withdrawTtl: number;
  /** Values found in the DSHT that failed validation, since start. */
  invalidValues = 0;

  constructor(components: DshtContentIndexComponents, options: DshtContentIndexOptions) {
    this.#dsht = components.dsht;
    this.#clock = components.clock ?? systemClock;
    this.#logger = components.logger;
    this.#self = options.self;
    this.#withdrawTtl = options.withdrawTtlSeconds ?? DEFAULT_WITHDRAW_TTL_SECONDS;
  }

  async lookup(urlKey: Uint8Array, opts?: { signal?: AbortSignal }): Promise<Holder[]> {
    const { values, stats } = await this.#dsht.get(urlKey, opts);
    const newest = new Map<string, HolderRecord>();
    for (const value of values) {
      let record: HolderRecord;
      try {
        record = decodeHolder(value);
      } catch (err) {
        this.invalidValues++;
        this.#logger?.debug({ err }, 'skipping an invalid holder record');
        continue;
      }
      const prev = newest.get(record.nodeId);
      if (!prev || record.at > prev.at || (record.at === prev.at && record.state === 'withdrawn')) {
        newest.set(record.nodeId, record);
      }
    }
    const holders: Holder[] = [];
    for (const r of newest.values()) {
      if (r.state === 'withdrawn' || r.nodeId === this.#self.nodeId) continue;
      const holder: Holder = { nodeId: r.nodeId, ip: r.ip, httpPort: r.httpPort, state: r.state };
      if (r.size !== undefined) holder.size = r.size;
      if (r.sha256 !== undefined) holder.sha256 = r.sha256;
      if (stats.level !== undefined) holder.level = stats.level;
      holders.push(holder);
    }
    // A complete copy serves at once; a fetching one makes the client wait on its origin fetch.
    return holders.sort((a, b) => rank(b) - rank(a));
  }

  async announce(urlKey: Uint8Array, holder: Holder, ttlSeconds: number): Promise<void> {
    const record: HolderRecord = {
      nodeId: holder.nodeId,
      ip: holder.ip,
      httpPort: holder.httpPort,
      state: holder.state,
      at: Math.floor(this.#clock.now()),
    };
    if (holder.size !== undefined) record.size = holder.size;
    if (holder.sha256 !== undefined) record.sha256 = holder.sha256;
    await this.#dsht.put(urlKey, encodeHolder(record), ttlSeconds);
  }

  async withdraw(urlKey: Uint8Array): Promise<void> {
    const record: HolderRecord = {
      ...this.#self,
      state: 'withdrawn',
      at: Math.floor(this.#clock.now()),
    };
    await this.#dsht.put(urlKey, encodeHolder(record), this.#withdrawTtl);
  }
}

function rank(r: { state: string }): number {
  return r.state === 'complete' ? 2 : r.state === 'fetching' ? 1 : 0;
}
