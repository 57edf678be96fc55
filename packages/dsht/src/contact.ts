/**
 * What a node knows about a peer. Every message carries the sender's contact, and answers carry
 * lists of contacts; the optional service fields let the node package build a NodeDirectory.
 */
import { InvalidArgumentError } from './errors.js';
import { nodeIdFor } from './id/id.js';

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

/** `ip:port` or `[v6]:port` (a bootstrap address) → Address; InvalidArgumentError otherwise. */
export function parseAddress(s: string): Address {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(s.trim());
  if (!m) throw new InvalidArgumentError(`bad address "${s}" (expected ip:port)`);
  const port = Number(m[2]);
  if (!(port > 0 && port < 65536)) throw new InvalidArgumentError(`bad port in "${s}"`);
  return { ip: m[1]!, port };
}

/** A node's own contact: its id is SHA-1 of its advertised address; its service ports and region. */
export function selfContact(addr: Address, service: ServiceInfo = {}): Contact {
  const contact: Contact = { id: nodeIdFor(addr.ip, addr.port), ip: addr.ip, port: addr.port };
  if (service.httpPort) contact.httpPort = service.httpPort;
  if (service.dnsPort) contact.dnsPort = service.dnsPort;
  if (service.region) contact.region = service.region;
  return contact;
}
