/**
 * A `ContentIndex` in one process's memory: for tests, and for a single node without a fleet.
 * Several proxies sharing one instance behave like a fleet whose index answers instantly.
 */
import { systemClock } from '@coral/runtime';
import type { Clock } from '@coral/runtime';
import type { ContentIndex, Holder, SiteControlRecord } from './content-index.js';

export class InMemoryContentIndex implements ContentIndex {
  readonly #clock: Clock;
  /** hex key → nodeId → holder and expiry. */
  readonly #entries = new Map<string, Map<string, { holder: Holder; expiresAt: number }>>();
  /** hex site key → opt-out records and their expiry. */
  readonly #sites = new Map<string, Array<{ record: SiteControlRecord; expiresAt: number }>>();
  /** Every call, in order (tests inspect it). */
  readonly log: Array<{
    op: 'announce' | 'withdraw' | 'lookup';
    key: string;
    holder?: Holder;
    ttl?: number;
  }> = [];

  constructor(components: { clock?: Clock } = {}) {
    this.#clock = components.clock ?? systemClock;
  }

  async lookup(urlKey: Uint8Array, opts?: { signal?: AbortSignal }): Promise<Holder[]> {
    opts?.signal?.throwIfAborted();
    const key = Buffer.from(urlKey).toString('hex');
    this.log.push({ op: 'lookup', key });
    const m = this.#entries.get(key);
    if (!m) return [];
    const now = this.#clock.now();
    const out: Holder[] = [];
    for (const [id, e] of m) {
      if (e.expiresAt <= now) m.delete(id);
      else out.push({ ...e.holder });
    }
    // Complete holders first: they can serve the whole object now.
    return out.sort((a, b) => (a.state === b.state ? 0 : a.state === 'complete' ? -1 : 1));
  }

  async announce(urlKey: Uint8Array, holder: Holder, ttlSeconds: number): Promise<void> {
    const key = Buffer.from(urlKey).toString('hex');
    this.log.push({ op: 'announce', key, holder: { ...holder }, ttl: ttlSeconds });
    let m = this.#entries.get(key);
    if (!m) this.#entries.set(key, (m = new Map<string, { holder: Holder; expiresAt: number }>()));
    m.set(holder.nodeId, {
      holder: { ...holder },
      expiresAt: this.#clock.now() + ttlSeconds * 1000,
    });
  }

  /** Withdraw every announcement for `urlKey` made under `nodeId` (all of them when omitted). */
  async withdraw(urlKey: Uint8Array, nodeId?: string): Promise<void> {
    const key = Buffer.from(urlKey).toString('hex');
    this.log.push({ op: 'withdraw', key });
    if (nodeId === undefined) this.#entries.delete(key);
    else this.#entries.get(key)?.delete(nodeId);
  }

  async publishSiteControl(
    siteKey: Uint8Array,
    record: SiteControlRecord,
    ttlSeconds: number,
  ): Promise<void> {
    const key = Buffer.from(siteKey).toString('hex');
    const list = this.#sites.get(key) ?? [];
    list.push({ record: { ...record }, expiresAt: this.#clock.now() + ttlSeconds * 1000 });
    this.#sites.set(key, list);
  }

  async siteControl(
    siteKey: Uint8Array,
    opts?: { signal?: AbortSignal },
  ): Promise<SiteControlRecord[]> {
    opts?.signal?.throwIfAborted();
    const now = this.#clock.now();
    const list = (this.#sites.get(Buffer.from(siteKey).toString('hex')) ?? []).filter(
      (e) => e.expiresAt > now,
    );
    return list.map((e) => ({ ...e.record }));
  }

  /**
   * This index as seen by one node: `withdraw(urlKey)` then removes only that node's
   * announcement (what a per-node DSHT client does). Give each proxy of an in-process fleet its view.
   */
  forNode(nodeId: string): ContentIndex {
    return {
      lookup: (k, opts) => this.lookup(k, opts),
      announce: (k, holder, ttl) => this.announce(k, holder, ttl),
      withdraw: (k) => this.withdraw(k, nodeId),
      publishSiteControl: (k, r, ttl) => this.publishSiteControl(k, r, ttl),
      siteControl: (k, opts) => this.siteControl(k, opts),
    };
  }

  /** Put an announcement in directly (tests: a lying or dead holder). */
  set(urlKey: Uint8Array, holder: Holder, ttlSeconds = 60): void {
    void this.announce(urlKey, holder, ttlSeconds);
  }
}
