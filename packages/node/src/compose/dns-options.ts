/**
 * The DNS server's options from the node's configuration, in a module of its own: the main
 * thread's services and each worker thread (workers/worker-main.ts) build their DnsServer from it,
 * and a worker loads none of the DSHT or the proxy to get it.
 */
import { isIP } from 'node:net';
import type { DnsServerOptions } from '@coral/dnssrv';
import type { CoralConfig } from '../config/schema.js';

/** The DNS server's options from the node's configuration (the main thread's and each worker's). */
export function dnsServerOptions(config: CoralConfig): DnsServerOptions {
  return {
    zones: [config.zone],
    answerCount: config.dns.answerCount,
    ttl: config.dns.ttl,
    nameservers:
      config.dns.nameservers.length > 0
        ? config.dns.nameservers.map((ns) =>
            isIP(ns.ip) === 6 ? { name: ns.name, ipv6: ns.ip } : { name: ns.name, ipv4: ns.ip },
          )
        : undefined,
    views: config.dns.views.map((v) => ({ ...v, nodes: v.nodes ? [...v.nodes] : undefined })),
    rrl: { responsesPerSecond: config.dns.rateLimitPerSecond },
    delegation: { enabled: config.dns.delegation, port: config.dns.delegationPort },
  };
}
