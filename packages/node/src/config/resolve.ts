/**
 * Turning the names in a validated configuration into addresses. `advertise` is resolved once at
 * start and must give an address peers can reach (else the configuration is invalid: exit 2).
 * Bootstrap names are resolved at start and again on every join retry, because the member they
 * name may not exist yet (a container or pod still starting). `hosts` is consulted first, then the
 * system resolver (a docker-compose service or a Kubernetes pod name works).
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { ConfigError, type ConfigIssue } from '../errors.js';
import { isWildcardAddress, type CoralConfig } from './schema.js';

export interface ResolvedAddresses {
  /** Where the proxy, DSHT, DNS and admin servers bind. */
  bind: { proxy: string; dsht: string; dns: string; admin: string };
  /**
   * This node's one identity: the IP it advertises to the fleet as its DSHT contact, in DNS answers
   * (its own and other members') and in its holder records. Its node id is SHA-1 of it and the
   * DSHT port.
   */
  advertiseIp: string;
}

export interface BootstrapResolution {
  /** Contacts to join through as `ip:port` (IPv6 in brackets), this node's own address excluded. */
  contacts: string[];
  /** Entries whose name did not resolve (yet), with the reason. */
  unresolved: { entry: string; reason: string }[];
  /** An entry names this node itself: it is one of the fleet's seeds, ready without the others. */
  self: boolean;
}

export type NameLookup = (name: string) => Promise<string>;

const systemLookup: NameLookup = async (name) => (await lookup(name)).address;

/** Resolve `name` through a `hosts` map, then `fallback` (the system resolver). */
export async function resolveName(
  hosts: Readonly<Record<string, string>>,
  name: string,
  fallback: NameLookup = systemLookup,
): Promise<string> {
  if (isIP(name)) return name;
  const mapped = hosts[name.toLowerCase()];
  if (mapped !== undefined) return mapped;
  return fallback(name);
}

/**
 * The problem with an `advertise` value, if any: its name does not resolve, or it resolves to a
 * wildcard. Resolves to the address otherwise.
 */
export async function checkAdvertise(
  hosts: Readonly<Record<string, string>>,
  advertise: string,
  fallback: NameLookup = systemLookup,
): Promise<{ ip: string } | { issue: ConfigIssue }> {
  let ip: string;
  try {
    ip = await resolveName(hosts, advertise, fallback);
  } catch (err) {
    const code = (err as { code?: string }).code;
    return {
      issue: {
        path: 'advertise',
        message: `"${advertise}" does not resolve (${code ?? (err as Error).message}; not in hosts either)`,
      },
    };
  }
  if (isWildcardAddress(ip)) {
    return {
      issue: {
        path: 'advertise',
        message: `"${advertise}" resolves to the wildcard ${ip}, not an address peers can reach`,
      },
    };
  }
  return { ip };
}

/**
 * Bind addresses and the advertised identity. Throws {@link ConfigError} when `advertise` does not
 * resolve or resolves to a wildcard.
 */
export async function resolveAddresses(
  config: CoralConfig,
  fallback: NameLookup = systemLookup,
): Promise<ResolvedAddresses> {
  const proxyHost = config.proxy.host ?? config.host;
  const dshtHost = config.dsht.host ?? config.host;
  let advertiseIp: string;
  if (config.advertise !== undefined) {
    const checked = await checkAdvertise(config.hosts, config.advertise, fallback);
    if ('issue' in checked) throw new ConfigError([checked.issue]);
    advertiseIp = checked.ip;
  } else if (!isWildcardAddress(dshtHost)) {
    advertiseIp = dshtHost;
  } else if (!isWildcardAddress(proxyHost)) {
    advertiseIp = proxyHost;
  } else {
    advertiseIp = '127.0.0.1';
  }
  // The DSHT checks each datagram's source against the sender's advertised address, so its socket
  // binds a specific address: the advertised one when the configured host is a wildcard.
  const dshtBind = isWildcardAddress(dshtHost) ? advertiseIp : dshtHost;
  return {
    bind: { proxy: proxyHost, dsht: dshtBind, dns: config.dns.host, admin: config.admin.host },
    advertiseIp,
  };
}

/**
 * Resolve the bootstrap list. `self` holds this node's own DSHT addresses (advertised and bound):
 * an entry naming one of them is left out and marks this node as a seed.
 */
export async function resolveBootstrap(
  config: CoralConfig,
  self: { ips: readonly string[]; port: number },
  fallback: NameLookup = systemLookup,
): Promise<BootstrapResolution> {
  const out: BootstrapResolution = { contacts: [], unresolved: [], self: false };
  const results = await Promise.all(
    config.bootstrap.map(async (entry) => {
      const colon = entry.lastIndexOf(':');
      const host = entry.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
      const port = Number(entry.slice(colon + 1));
      try {
        return { entry, ip: await resolveName(config.hosts, host, fallback), port };
      } catch (err) {
        const code = (err as { code?: string }).code;
        return { entry, reason: code ?? (err as Error).message };
      }
    }),
  );
  for (const r of results) {
    if ('reason' in r) {
      out.unresolved.push({ entry: r.entry, reason: r.reason! });
    } else if (r.port === self.port && self.ips.includes(r.ip)) {
      out.self = true;
    } else {
      const contact = isIP(r.ip) === 6 ? `[${r.ip}]:${r.port}` : `${r.ip}:${r.port}`;
      if (!out.contacts.includes(contact)) out.contacts.push(contact);
    }
  }
  return out;
}
