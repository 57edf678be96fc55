/**
 * Start step "dns": the DNS server's view of the fleet (the `NodeDirectory` adapter over the
 * DSHT), and the DNS server itself when `dns.enabled`, answering `_acme-challenge` from the
 * node's challenge store. With `workers` ≥ 2 the DNS server is that many worker threads
 * (workers/dns-workers.ts) on the same port, answering from copies of the directory.
 */
import type { NodeState } from '../state.js';
import { DnsWorkers } from '../../workers/dns-workers.js';
import { step } from './step.js';

export async function startDns(s: NodeState): Promise<void> {
  const { config, addresses } = s;
  s.directory = s.components.services.directory({ config, dsht: s.dsht });
  if (!config.dns.enabled) return;
  // Like the proxy, the DNS server labels its own lines (component: dnssrv).
  const dns = await step('dns', () =>
    config.workers >= 2
      ? // workers ≥ 2: one DNS server per worker thread on the same port (workers/).
        new DnsWorkers(
          {
            directory: s.directory,
            challenges: s.challenges,
            clock: s.clock,
            logger: s.log('workers'),
            metrics: s.metrics.workers,
          },
          { config },
        )
      : s.components.services.dns({
          config,
          metrics: s.metrics,
          logger: s.logger,
          directory: s.directory,
          challenges: s.challenges,
          connections: s.connections,
        }),
  );
  s.dns = dns;
  if (dns instanceof DnsWorkers) {
    // A member dead, gone or back, a contact learned: the workers' copies follow within 50 ms.
    for (const e of ['member-dead', 'member-left', 'member-alive'] as const) {
      s.dsht.on(e, () => dns.changed());
    }
    s.dsht.on('contact', () => dns.changed());
  }
  await step('dns', () => dns.listen({ port: config.dns.port, host: addresses.bind.dns }));
  s.listening.dns = { host: addresses.bind.dns, port: config.dns.port };
}
