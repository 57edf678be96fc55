/**
 * Origin opt-out for the whole fleet. An origin that answers a member's fetch with
 * `Coral-Control: redirect-home` (./coral-control.ts) is sent its clients back: for the time it
 * asked, every member answers requests for that origin with a redirect to the origin's own URL
 * (./redirect.ts) instead of serving or fetching — as CoralCDN let origins opt out (NSDI'10).
 *
 * Who may set it:
 * - only a response this node fetched from the origin itself (never a peer's copy, never a
 *   request field: the proxy neither forwards nor stores `Coral-Control`), and only for the
 *   origin it was fetched from — the site is the fetched URL's scheme, host and port, never a
 *   name the response carries, so an origin can opt out no one but itself;
 * - the fleet learns it from a record the member publishes in the index under the site's key
 *   (`ContentIndex.publishSiteControl`). Records are read, and published, only when the index
 *   authenticates its writers (keyed mode, `FleetMembers.recordsAuthenticated`): in open mode
 *   anyone could write one, so each node then acts on what its own fetches saw.
 *
 * Each member remembers a site's state (bounded, oldest forgotten first): an opt-out until it
 * ends, and "none" for `recheckMs`, after which the next request for the site has the index read
 * again in the background and is served meanwhile (one lookup per site at a time, bounded by the
 * index timeout; a failed lookup counts as "none"). Only the first request for a site this node
 * knows nothing of waits for the read. Of several records the newest wins, so `max-age=0` lifts an opt-out fleet-wide.
 */
import { createHash } from 'node:crypto';
import type { Clock } from '@coral/runtime';
import type { ContentIndex, SiteControlRecord } from '../content-index.js';
import { OPT_OUT_MAX_SECONDS } from '../constants.js';
import type { FleetMembers } from '../peer/members.js';
import type { Logger, ProxyMetrics } from '../kit/types.js';

/** The site (`scheme://host[:port]`, as `URL.origin` spells it) of a normalized URL. */
export function siteOf(url: string): string {
  const slash = url.indexOf('/', url.indexOf('//') + 2);
  return slash < 0 ? url : url.slice(0, slash);
}

/** The index key of a site's opt-out records: SHA-1 of `"site:" + origin` (20 bytes). */
export function siteKey(origin: string): Uint8Array {
  return new Uint8Array(
    createHash('sha1')
      .update('site:' + origin)
      .digest(),
  );
}

interface SiteState {
  /** Clients are sent home until then (ms); `<= now`: not opted out. */
  until: number;
  /** Time of the record this state comes from (newest wins). */
  at: number;
  /** When the index was last read for this site (ms); -Infinity: never (local knowledge only). */
  checkedAt: number;
}

export interface OptOutsComponents {
  clock: Clock;
  index: ContentIndex;
  members: FleetMembers | undefined;
  log: Logger;
  metrics: ProxyMetrics | undefined;
}

export interface OptOutsOptions {
  nodeId: string;
  /** How long "no opt-out" is believed before the index is read again (ms). */
  recheckMs: number;
  /** Bound on one index read (ms, injected clock). */
  lookupTimeoutMs: number;
  /** Sites remembered. */
  maxSites: number;
}

export class OptOuts {
  readonly #c: OptOutsComponents;
  readonly #o: OptOutsOptions;
  readonly #sites = new Map<string, SiteState>();
  readonly #pending = new Map<string, Promise<number>>();
  /** The end of the latest opt-out known: before it, the fast path looks sites up. */
  #lastUntil = 0;

  constructor(components: OptOutsComponents, options: OptOutsOptions) {
    this.#c = components;
    this.#o = options;
  }

  /** Are the index's records trusted (and worth publishing)? */
  get #fleet(): boolean {
    return this.#c.members?.recordsAuthenticated === true;
  }

  /**
   * For the fast path (no I/O): must a request for `site` take the full path, because the site
   * is sent home or its state must be read from the index first?
   */
  mustCheck(site: string, now: number): boolean {
    if (now >= this.#lastUntil && !(this.#fleet && this.#c.index.siteControl)) return false;
    const s = this.#sites.get(site);
    if (!s) return this.#fleet && this.#c.index.siteControl !== undefined;
    return s.until > now || (this.#fleet && now - s.checkedAt >= this.#o.recheckMs);
  }

  /**
   * Until when requests for `site` are sent home (ms; `<= now`: they are not). Reads the index
   * when the site's state is unknown or old (keyed mode), unless `localOnly` (a member's peer
   * request: the member looked before it asked).
   */
  until(site: string, localOnly = false): number | Promise<number> {
    const now = this.#c.clock.now();
    const s = this.#sites.get(site);
    const read = !localOnly && this.#fleet && this.#c.index.siteControl !== undefined;
    if (s && (s.until > now || !read || now - s.checkedAt < this.#o.recheckMs)) return s.until;
    if (!read) return 0;
    let p = this.#pending.get(site);
    if (!p) {
      p = this.#read(site).finally(() => this.#pending.delete(site));
      this.#pending.set(site, p);
    }
    // A site known to be served keeps being served while its state is read again (in the
    // background, as stale-while-revalidate): only a site never read waits for the index.
    if (s) {
      p.catch((e: unknown) =>
        this.#c.log.debug({ site, err: String(e) }, 'opt-out re-read failed; serving the site'),
      );
      return s.until;
    }
    return p;
  }

  async #read(site: string): Promise<number> {
    const { clock, index, log } = this.#c;
    const ac = new AbortController();
    const timer = clock.setTimeout(() => ac.abort(), this.#o.lookupTimeoutMs);
    let records: SiteControlRecord[] = [];
    try {
      records = await index.siteControl!(siteKey(site), { signal: ac.signal });
    } catch (e) {
      log.debug({ site, err: String(e) }, 'opt-out lookup failed; serving the site');
    } finally {
      timer.cancel();
    }
    const now = clock.now();
    // Records are under the site's key; one naming another site (or a time beyond what an origin
    // may ask for) is garbage.
    const horizon = now + (OPT_OUT_MAX_SECONDS + 60) * 1000;
    let newest: SiteControlRecord | undefined;
    for (const r of records) {
      if (r.origin !== site || r.until > horizon || r.at > horizon) continue;
      if (!newest || r.at > newest.at) newest = r;
    }
    const prev = this.#sites.get(site);
    const state: SiteState =
      newest && (!prev || newest.at > prev.at)
        ? { until: newest.until, at: newest.at, checkedAt: now }
        : { until: prev?.until ?? 0, at: prev?.at ?? 0, checkedAt: now };
    if (state.until > now && !(prev && prev.until > now)) {
      log.info(
        { site, until: new Date(state.until).toISOString(), by: newest?.nodeId },
        'origin opted out (learned from the fleet): clients are sent home',
      );
      this.#c.metrics?.optOut?.('learned');
    }
    this.#set(site, state);
    return state.until;
  }

  /**
   * The origin of `site` answered this node's fetch with `redirect-home` for `seconds` (0: lift):
   * remember it and publish it to the fleet (keyed mode).
   */
  record(site: string, seconds: number): void {
    const { clock, index, log } = this.#c;
    const now = clock.now();
    const until = now + seconds * 1000;
    const prev = this.#sites.get(site);
    this.#set(site, { until, at: now, checkedAt: prev?.checkedAt ?? -Infinity });
    if (seconds > 0) {
      log.info(
        { site, until: new Date(until).toISOString() },
        'origin opted out (Coral-Control: redirect-home): clients are sent home',
      );
      this.#c.metrics?.optOut?.('recorded');
    } else if (prev && prev.until > now) {
      log.info({ site }, 'origin lifted its opt-out');
    }
    if (!this.#fleet || !index.publishSiteControl) return;
    const record: SiteControlRecord = { origin: site, until, at: now, nodeId: this.#o.nodeId };
    // A lift is kept as long as the longest opt-out it may have to override.
    const ttl = seconds > 0 ? seconds : OPT_OUT_MAX_SECONDS;
    index.publishSiteControl(siteKey(site), record, ttl).catch((e: unknown) => {
      log.warn({ site, err: String(e) }, 'publishing an opt-out failed');
    });
  }

  #set(site: string, state: SiteState): void {
    this.#sites.delete(site);
    this.#sites.set(site, state);
    this.#lastUntil = Math.max(this.#lastUntil, state.until);
    while (this.#sites.size > this.#o.maxSites) {
      this.#sites.delete(this.#sites.keys().next().value as string);
    }
  }

  /** Sites sent home now, with the time each opt-out ends (admin and tests). */
  list(): Array<{ site: string; until: number }> {
    const now = this.#c.clock.now();
    const out: Array<{ site: string; until: number }> = [];
    for (const [site, s] of this.#sites) if (s.until > now) out.push({ site, until: s.until });
    return out;
  }
}
