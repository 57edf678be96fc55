/**
 * What a node knows about a peer. Every message carries the sender's contact, and answers carry
 * lists of contacts; the optional service fields let the node package build a NodeDirectory.
 */

/** A node's membership of one cluster level, as advertised in every message. */
export interface ClusterAdvert {
  /** 0 global, 1, 2 (more local). */
  level: number;
  /** Id of the cluster (the founder's node id in the cluster module; level 0 uses all zeros). */
  clusterId: Uint8Array;
  /** Estimated number of members. */
  size: number;
  /** Seconds since the cluster was founded. */
  age: number;
}

export interface Contact {
  /** The 160-bit node id (`Id` of id/id.ts: SHA-1 of its advertised address). */
  id: Uint8Array;
  ip: string;
  port: number;
  /** Port of the node's HTTP proxy, when it runs one. */
  httpPort?: number;
  /** Port of the node's DNS server, when it runs one. */
  dnsPort?: number;
  /** Configured region label. */
  region?: string;
  /** Cluster membership per level (sender contacts only; contacts in answer lists omit it). */
  clusters?: ClusterAdvert[];
}

/** Optional service info a node advertises about itself. */
export interface ServiceInfo {
  httpPort?: number;
  dnsPort?: number;
  region?: string;
}

export interface Address {
  ip: string;
  port: number;
}

/** Keep what was known, updated with what a newer sighting says (a minimal sender keeps the rest). */
export function mergeContact(old: Contact, fresh: Contact): Contact {
  if (old === fresh) return old;
  return {
    ...old,
    ...fresh,
    clusters: fresh.clusters ?? old.clusters,
    httpPort: fresh.httpPort ?? old.httpPort,
    dnsPort: fresh.dnsPort ?? old.dnsPort,
    region: fresh.region ?? old.region,
  };
}
