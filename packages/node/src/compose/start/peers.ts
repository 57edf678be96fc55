/**
 * Start step "peers": how this node talks to its members' admin APIs (purges, ACME, quarantine
 * reports). In keyed mode requests are signed with the fleet's keys, answers sealed with them, and
 * only requests addressed to this node's own admin address are taken (peer/requests.ts); members
 * reach this node at the admin port its record says (trust/admin-records.ts) and it reaches theirs
 * at the ports their records say.
 */
import type { PeerAuth } from '@coral/httpprx';
import { HttpPeerSigner, type Keyring } from '@coral/keyring';
import type { Logger } from 'pino';
import { PeerAnswerAuth } from '../../peer/answers.js';
import { PeerRequests, type PeerRequestsComponents } from '../../peer/requests.js';
import { AdminRecords } from '../../trust/admin-records.js';
import type { NodeState } from '../state.js';

export interface NodePeers {
  /** The keyring's signer of peer fetches (keyed mode), which the proxy takes. */
  signer: PeerAuth | undefined;
  /** Seals this node's answers and opens members' (keyed mode). */
  answerAuth: PeerAnswerAuth | undefined;
  /**
   * Who a node-to-node request goes to and how it is signed (the caller's signer, else the
   * keyring's) and checked, less its logger.
   */
  request: Omit<PeerRequestsComponents, 'logger'>;
  /** Node-to-node requests logged under `logger` (one per component: purge, trust). */
  requests(logger: Logger): PeerRequests;
}

/** The peer wiring; in keyed mode this node's admin record is published (into `s.adminRecords`). */
export function peerWiring(s: NodeState, keyring: Keyring | undefined): NodePeers {
  const signer = keyring ? new HttpPeerSigner({ keyring, clock: s.clock }) : undefined;
  const answerAuth = keyring ? new PeerAnswerAuth(keyring) : undefined;
  const adminRecords = new AdminRecords(
    { dsht: s.dsht, clock: s.clock, logger: s.log('admin-records') },
    { nodeId: s.nodeId, adminPort: s.config.admin.port },
  );
  if (keyring) {
    s.adminRecords = adminRecords;
    adminRecords.start();
  }
  const request: NodePeers['request'] = {
    peerAuth: s.components.peerAuth ?? signer,
    answerAuth,
    self: () => s.ownAdminAuthorities(),
    onRefused: (reason) => s.metrics.peerRefused(reason),
    members: () => s.otherMembers(),
    adminPorts: adminRecords.port.bind(adminRecords),
  };
  return {
    signer,
    answerAuth,
    request,
    requests: (logger) => new PeerRequests({ ...request, logger }),
  };
}
