/**
 * Start step "purge log": the purge log (`dataDir/purge`), fleet purge propagation over the peer
 * wiring, and the purge gate's catch-up with the fleet's purges before clients are served
 * (purge-gate.ts, docs/node.md "Purge").
 */
import { join } from 'node:path';
import { FleetPurge } from '../../purge/fleet-purge.js';
import { PurgeLog } from '../../purge/purge-log.js';
import { openStore } from '../../storage/open-store.js';
import { PurgeGate } from '../purge-gate.js';
import type { NodeState } from '../state.js';
import type { NodePeers } from './peers.js';
import type { NodeStorage } from './storage.js';
import { step } from './step.js';

export async function startPurges(
  s: NodeState,
  storage: NodeStorage,
  peers: NodePeers,
): Promise<void> {
  const { config } = s;
  const dir = join(storage.dataDir, 'purge');
  let opens = 0;
  const log = await step('purge log', () =>
    openStore({ ...storage, store: 'purge', dir }, async () => {
      const purgeLog = new PurgeLog({
        dir,
        maxEntries: config.purge.logMaxEntries,
        retentionMs: config.purge.logRetentionSeconds * 1000,
      });
      // A second open is on an empty directory after the corrupt one was moved aside.
      await purgeLog.open(s.clock.now(), { replaced: ++opens > 1 });
      return purgeLog;
    }),
  );
  s.purgeLog = log;
  const logger = s.log('purge');
  s.purges = new FleetPurge(
    {
      store: s.proxy,
      log,
      peers: peers.requests(logger),
      clock: s.clock,
      logger,
      metrics: s.metrics.purge,
      cutOff: () => s.cutOff(),
    },
    { nodeId: s.nodeId, syncIntervalMs: config.purge.syncIntervalMs },
  );
  s.purgeGate = new PurgeGate({
    purges: s.purges,
    join: s.join,
    dsht: s.dsht,
    otherMembers: () => s.otherMembers().length,
    stopping: () => s.stopping !== undefined,
    clock: s.clock,
    logger: s.logger,
  });
  await s.purgeGate.atStart();
  s.purges.start();
}
