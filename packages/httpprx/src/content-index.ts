/**
 * The boundary between the proxy and the fleet's index. httpprx only ever sees this interface;
 * `@coral/node` adapts the DSHT to it, and tests use an in-memory implementation.
 */

/** One proxy that announced it holds (or is fetching) a URL. */
export interface Holder {
  /** Hex node ID of the announcing node (40 hex chars). */
  nodeId: string;
  /** Address the holder's HTTP proxy listens on. */
  ip: string;
  /** Port of the holder's HTTP proxy. */
  httpPort: number;
  /** `fetching`: an upstream fetch is in flight there; `complete`: the whole body is stored there. */
  state: 'fetching' | 'complete';
  /** Body size in bytes, when complete. */
  size?: number;
  /** Lowercase hex SHA-256 of the body, when complete. */
  sha256?: string;
  /** Cluster level at which the index found this holder (2 nearest, 0 global), when known. */
  level?: number;
}

export interface ContentIndex {
  /**
   * Holders of `urlKey` (20-byte SHA-1 of `"url:" + normalizedUrl`), nearest clusters first.
   * Resolves to an empty array when nobody announced it; rejects only when aborted.
   */
  lookup(urlKey: Uint8Array, opts?: { signal?: AbortSignal }): Promise<Holder[]>;
  /** Announce (or refresh) that this node holds `urlKey`; the announcement expires after `ttlSeconds`. */
  announce(urlKey: Uint8Array, holder: Holder, ttlSeconds: number): Promise<void>;
  /** Withdraw this node's announcement for `urlKey` (after a purge or eviction), best effort. */
  withdraw?(urlKey: Uint8Array): Promise<void>;
  /**
   * Claim `urlKey`, which nobody holds: record this node as `fetching` and see who else claimed
   * it; the earliest claim wins (a total order, so two nodes never defer to each other). Used only
   * when no designated fetcher answered (membership views disagree, or none is known). `won`:
   * this node fetches, and its claim already announces it as `fetching`; otherwise the holders to
   * ask, the winner first.
   */
  claim?(urlKey: Uint8Array, opts?: { signal?: AbortSignal }): Promise<ClaimResult>;
  /**
   * Publish a site's opt-out (`Coral-Control: redirect-home`, ./site-control/) under `siteKey`
   * (20-byte SHA-1 of `"site:" + origin`) for `ttlSeconds`, best effort. Only a member that
   * fetched the response carrying it publishes; readers trust such records only when the index
   * authenticates its writers (keyed mode: `FleetMembers.recordsAuthenticated`).
   */
  publishSiteControl?(
    siteKey: Uint8Array,
    record: SiteControlRecord,
    ttlSeconds: number,
  ): Promise<void>;
  /** The opt-out records published under `siteKey` (any order; empty when none). */
  siteControl?(siteKey: Uint8Array, opts?: { signal?: AbortSignal }): Promise<SiteControlRecord[]>;
}

/** A member's record that an origin asked the fleet to send its clients home. */
export interface SiteControlRecord {
  /** The origin it is about: `scheme://host[:port]` as `URL.origin` spells it. */
  origin: string;
  /** Until when clients are sent home (ms since the epoch); `until <= at` lifts an opt-out. */
  until: number;
  /** When the member saw the origin's response (ms since the epoch): the newest record wins. */
  at: number;
  /** Hex id of the member that fetched the response. */
  nodeId: string;
}

export type ClaimResult = { won: true } | { won: false; holders: Holder[] };
