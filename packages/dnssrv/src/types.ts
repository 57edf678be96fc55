/**
 * The words every layer of the DNS server uses — how a client was located, the configured
 * nameservers, views and SOA — in a module that imports nothing, so locate/, names/ and answer/
 * need not import server/ (the server's own options, in server/types.ts, are built of these).
 */

/** How the client was located, in the order tried. 'no-proxy' = nothing live (CNAME to origin). */
export type LocationMethod = 'view' | 'ecs' | 'rtt' | 'hint' | 'random' | 'no-proxy';

export interface NameserverConfig {
  /** Name of the nameserver, normally under a served zone (`ns1.nyud.net`). */
  name: string;
  ipv4?: string;
  ipv6?: string;
}

export interface ViewConfig {
  /** Client network (`10.0.0.0/8`, `2001:db8::/32`). Matched against the ECS subnet, then the resolver. */
  cidr: string;
  /** Answer with these node ids (the live ones) ... */
  nodes?: string[];
  /** ... or with live nodes of this region. */
  region?: string;
}

export interface SoaConfig {
  /** Primary nameserver (default: the first nameserver's name). */
  mname?: string;
  /** Responsible mailbox as a name (default `hostmaster.<zone>`). */
  rname?: string;
  serial?: number;
  refresh?: number;
  retry?: number;
  expire?: number;
  /** Negative-caching TTL (RFC 2308), default 60 s. */
  minimum?: number;
  /** TTL of the SOA record itself (default 3600 s). */
  ttl?: number;
}

export const DEFAULT_SOA = Object.freeze({
  serial: 1,
  refresh: 3600,
  retry: 600,
  expire: 604_800,
  minimum: 60,
  ttl: 3600,
});
