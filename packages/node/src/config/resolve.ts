/**
 * Turning the names in a validated configuration into addresses, once at start: the advertised
 * address and the bootstrap list may be host names (a docker-compose service name, or a name the
 * `hosts` map gives a loopback address in tests). `hosts` is consulted first, then the system
 * resolver.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { CoralConfig } from './schema.js';

export interface ResolvedAddresses {
  /** Where the proxy, DSHT, DNS and admin servers bind. */
  bind: { proxy: string; dsht: string; dns: string; admin: string };
  /** The IP this node advertises to the fleet (DSHT contact, DNS answers, peer fetches). */
  advertiseIp: string;
  /** Bootstrap contacts as `ip:port` (IPv6 in brackets). Unresolvable entries are reported. */
  bootstrap: string[];
  /** Bootstrap entries that could not be resolved, with the reason. */
  unresolved: { entry: string; reason: string }[];
}

export type NameLookup = (name: string) => Promise<string>;

const systemLookup: NameLookup = async (name) => (await lookup(name)).address;

function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::';
}

/** Resolve `name` through the configuration's `hosts` map, then `fallback` (the system resolver). */
export async function resolveName(
  config: CoralConfig,
  name: string,
  fallback: NameLookup = systemLookup,
): Promise<string> {
  if (isIP(name)) return name;
  const mapped = config.hosts[name.toLowerCase()];
  if (mapped !== undefined) return mapped;
  return fallback(name);
}

export async function resolveAddresses(
  config: CoralConfig,
  fallback: NameLookup = systemLookup,
): Promise<ResolvedAddresses> {
  const proxyHost = config.proxy.host ?? config.host;
  const dshtHost = config.dsht.host ?? config.host;
  let advertiseIp: string;
  if (config.advertise !== undefined) {
    advertiseIp = await resolveName(config, config.advertise, fallback);
  } else if (!isWildcard(dshtHost)) {
    advertiseIp = dshtHost;
  } else if (!isWildcard(proxyHost)) {
    advertiseIp = proxyHost;
  } else {
    advertiseIp = '127.0.0.1';
  }
  const bootstrap: string[] = [];
  const unresolved: { entry: string; reason: string }[] = [];
  for (const entry of config.bootstrap) {
    const colon = entry.lastIndexOf(':');
    const host = entry.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
    const port = entry.slice(colon + 1);
    try {
      const ip = await resolveName(config, host, fallback);
      bootstrap.push(isIP(ip) === 6 ? `[${ip}]:${port}` : `${ip}:${port}`);
    } catch (err) {
      unresolved.push({ entry, reason: (err as Error).message });
    }
  }
  // The DSHT checks each datagram's source against the sender's advertised address, so its socket
  // must bind a specific address: the advertised one when the configured host is a wildcard.
  const dshtBind = isWildcard(dshtHost) ? advertiseIp : dshtHost;
  return {
    bind: { proxy: proxyHost, dsht: dshtBind, dns: config.dns.host, admin: config.admin.host },
    advertiseIp,
    bootstrap,
    unresolved,
  };
}
