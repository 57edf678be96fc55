/**
 * Start steps "proxy": open the caching proxy (its cache under `dataDir/cache`, the DSHT as its
 * `ContentIndex`, peer fetches from the verified members), with the member reports its audit
 * sends and the blocklist's gate in front of its handler; then, once the purge catch-up is done,
 * listen on http and (with a certificate) https.
 */
import { join } from 'node:path';
import { openStore } from '../../storage/open-store.js';
import { MemberReports } from '../../trust/member-reports.js';
import { gateBlockedOrigins } from '../blocklist.js';
import type { Listening } from '../banner.js';
import type { NodeState } from '../state.js';
import type { ProxyFleet } from './dsht.js';
import type { NodePeers } from './peers.js';
import type { NodeStorage } from './storage.js';
import { step } from './step.js';
import { listenTls } from './tls.js';

/** Open the proxy (into `s.proxy`) without listening; the member reports its audit sends. */
export async function openProxy(
  s: NodeState,
  storage: NodeStorage,
  fleet: ProxyFleet,
  peers: NodePeers,
): Promise<MemberReports> {
  const { config, logger, metrics } = s;
  const dir = join(storage.dataDir, 'cache');
  s.proxy = await step('proxy', () =>
    openStore({ ...storage, store: 'cache', dir }, async () => {
      const proxy = await s.components.services.proxy({
        config,
        metrics,
        logger, // the proxy labels its lines itself (component: httpprx)
        index: s.index,
        self: fleet.self,
        dataDir: dir,
        members: fleet.members,
        ...(peers.signer ? { peerAuth: peers.signer } : {}),
        // A fetch a purge overtook is not stored (the purge log is opened just after the proxy).
        admit: (c) => (s.purges ? s.purges.admits(c) : true),
        connections: s.connections,
        // The audit quarantined a member: every other member hears of it (and checks it).
        onQuarantine: (report) => void s.reports?.send(report),
        // One record per request, at its response's end (start/access-log.ts).
        ...(s.accessLog ? { onAccess: s.accessLog.log.bind(s.accessLog) } : {}),
      });
      try {
        await proxy.open();
      } catch (err) {
        await proxy.close().catch(() => undefined);
        throw err;
      }
      return proxy;
    }),
  );
  const trustLogger = s.log('trust');
  const reports = new MemberReports(
    { peers: peers.requests(trustLogger), proxy: s.proxy, logger: trustLogger, metrics },
    { nodeId: s.nodeId },
  );
  s.reports = reports;
  metrics.bindQuarantine(() => {
    const q = s.proxy.quarantine?.();
    return { quarantined: q?.quarantined.length ?? 0, suspects: q?.suspects.length ?? 0 };
  });
  // Blocked origins are refused before the proxy's handler: wrap it before it is mounted.
  await gateBlockedOrigins(s);
  return reports;
}

/** The proxy's http listener (where it is), then its TLS one; both timed by the metrics. */
export async function listenProxy(s: NodeState, storage: NodeStorage): Promise<Listening> {
  const { config, addresses } = s;
  await step('proxy', () => s.proxy.listen(config.proxy.port, addresses.bind.proxy));
  const http = { host: addresses.bind.proxy, port: config.proxy.port };
  s.listening.proxy = http;
  await listenTls(s, storage.dataDir);
  s.metrics.timeProxy([http, s.listening.proxyTls].filter((l) => l !== undefined));
  return http;
}
