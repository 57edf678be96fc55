/**
 * Start step "dsht": the DSHT (its UDP socket, its LevelDB under `dataDir/dsht`, the join through
 * the bootstrap list), what the node logs and counts of its members, and the two adapters over it
 * the proxy takes: the content index (holder records, claims) and the verified fleet members.
 */
import { join } from 'node:path';
import type { Keyring } from '@coral/keyring';
import { DshtContentIndex } from '../../adapters/content-index.js';
import { openStore } from '../../storage/open-store.js';
import { DshtFleetMembers } from '../../trust/members.js';
import { rendezvousRank } from '../rendezvous.js';
import type { NodeState } from '../state.js';
import type { NodeStorage } from './storage.js';
import { step } from './step.js';
import { logIsolation, logKeyRejected } from './trust.js';

/** What the proxy is given of this node and its fleet. */
export interface ProxyFleet {
  self: { nodeId: string; ip: string; httpPort: number };
  /** Peer fetches go only to the DSHT's verified members, at the address each was verified at. */
  members: DshtFleetMembers;
}

/** Start the DSHT (into `s.dsht`) and its content index (`s.index`). */
export async function startDsht(
  s: NodeState,
  storage: NodeStorage,
  keyring: Keyring | undefined,
): Promise<ProxyFleet> {
  const { config, addresses, logger, metrics } = s;
  const dir = join(storage.dataDir, 'dsht');
  // One identity: the DSHT contact carries the advertised address, and everything else (holder
  // records, DNS answers, the banner) takes it from that contact.
  const bootstrap = await s.join.resolve();
  s.dsht = await step('dsht', () =>
    openStore({ ...storage, store: 'dsht', dir }, async () => {
      const dsht = await s.components.services.dsht({
        config,
        metrics,
        logger: s.log('dsht'),
        bind: { host: addresses.bind.dsht, port: config.dsht.port },
        advertise: addresses.advertiseIp,
        dataDir: dir,
        service: {
          httpPort: config.proxy.port,
          dnsPort: config.dns.enabled ? config.dns.port : undefined,
          region: config.region,
        },
        ...(keyring ? { keyring } : {}),
      });
      // Before the bootstrap pings: their key notices come back while start() waits.
      dsht.on('key-rejected', (r) => logKeyRejected(logger, r));
      try {
        await dsht.start({ bootstrap: bootstrap.contacts });
      } catch (err) {
        await dsht.stop().catch(() => undefined);
        throw err;
      }
      return dsht;
    }),
  );
  const dsht = s.dsht;
  const contact = dsht.contact;
  dsht.on('isolated', (state) => logIsolation(logger, state));
  for (const event of ['suspect', 'dead', 'left', 'alive'] as const) {
    dsht.on(`member-${event}`, (m) => {
      metrics.memberEvent(event);
      const entry = { member: m.id, ip: m.ip, port: m.port, incarnation: m.incarnation };
      if (event === 'dead') logger.warn(entry, 'fleet member dead: no answer to probes');
      else if (event === 'left') logger.info(entry, 'fleet member left');
      else if (event === 'alive') logger.info(entry, 'fleet member back');
      else logger.debug(entry, 'fleet member suspect');
    });
  }
  metrics.bindMembership({
    states: () => dsht.failureDetection()?.states,
    tableSizes: () => Array.from({ length: dsht.levels }, (_, l) => dsht.routes(l).length),
  });
  metrics.bindTrust({
    counters: () => ({ ...dsht.authState().counters }),
    isolated: () => dsht.authState().isolated,
    keys: () => keyring?.size ?? 0,
  });
  s.listening.dsht = { host: addresses.bind.dsht, port: contact.port };
  if (addresses.bind.dsht !== contact.ip) {
    logger.warn(
      { bind: addresses.bind.dsht, advertise: contact.ip },
      'the DSHT sends from its bind address but advertises another one: fleet members drop ' +
        'its datagrams unless they run with dsht.allowNat (a NAT or forwarder in front of it)',
    );
  }
  s.join.started(dsht);

  const nodeId = s.nodeId;
  const self = { nodeId, ip: contact.ip, httpPort: config.proxy.port };
  s.index = new DshtContentIndex(
    {
      dsht,
      clock: s.clock,
      logger: s.log('index'),
      metrics: metrics.index,
      rank: (key) => rendezvousRank(nodeId, key, s.liveProxies()),
    },
    {
      self,
      claimOnMiss: config.index.claims,
      claimStepMs: config.index.claimStepMs,
      claimRankCap: config.index.claimRankCap,
    },
  );
  // In keyed mode holder records are authenticated and peer requests are signed and checked.
  const members = new DshtFleetMembers(dsht, keyring !== undefined, {
    designated: config.index.designated,
    clock: s.clock,
  });
  return { self, members };
}
