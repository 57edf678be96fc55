/**
 * A node's start sequence, in dependency order, one named step each (the files beside this one).
 * Every step puts what it started into the node's state, so whatever fails, `stop()` closes what
 * had started; a step's failure is a `StartError` naming it (step.ts).
 *
 *  1. data directory   create it; what opening its databases needs          storage.ts
 *  2. connections      the open-file limit and the client-connection ceiling process.ts
 *  3. fleet keys       keyed or open, before anything listens                trust.ts
 *  4. dsht             the DSHT and its join, the content index, members     dsht.ts
 *  5. peers            signed node-to-node requests, this node's admin record peers.ts
 *  6. access log       log.access's destination, the live stream's hub      access-log.ts
 *  7. proxy            the caching proxy opened, the blocklist's gate        proxy.ts
 *  8. purge log        the purge log, fleet purges, the catch-up at start    purge.ts
 *  9. proxy listen     http, then https with a certificate                   proxy.ts, tls.ts
 * 10. dns              the directory adapter and the DNS server              dns.ts
 * 11. admin            ACME for the fleet and the admin API                  admin.ts
 * 12. heap trim        the periodic heap trim                                process.ts
 */
import type { AdminBackend } from '../../admin/backend.js';
import type { NodeState } from '../state.js';
import { openAccessLog } from './access-log.js';
import { startAdmin } from './admin.js';
import { startDns } from './dns.js';
import { startDsht } from './dsht.js';
import { peerWiring } from './peers.js';
import { connectionBudget, heapTrim } from './process.js';
import { listenProxy, openProxy } from './proxy.js';
import { startPurges } from './purge.js';
import { dataDirectory } from './storage.js';
import { fleetKeys } from './trust.js';

/** Start every service of the node in `s`; the admin API serves `view`. */
export async function startSequence(s: NodeState, view: AdminBackend): Promise<void> {
  const storage = await dataDirectory(s);
  s.connections = await connectionBudget(s);
  const keyring = await fleetKeys(s, storage.dataDir);
  const fleet = await startDsht(s, storage, keyring);
  const peers = peerWiring(s, keyring);
  await openAccessLog(s);
  const reports = await openProxy(s, storage, fleet, peers);
  await startPurges(s, storage, peers);
  const proxy = await listenProxy(s, storage);
  await startDns(s);
  await startAdmin(s, { view, peers, reports, proxy });
  s.heapTrimmer = await heapTrim(s);
  s.logger.info({ nodeId: s.nodeId, listening: s.listening }, 'coral node started');
}
