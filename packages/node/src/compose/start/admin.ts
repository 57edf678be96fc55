/**
 * Start step "admin": ACME DNS-01 values for the whole fleet (acme/fleet-challenges.ts) and the
 * admin API over the node's admin view, its purges, member reports and peer answers.
 */
import { FleetChallenges } from '../../acme/fleet-challenges.js';
import type { AdminBackend } from '../../admin/backend.js';
import { AdminApi } from '../../admin/server.js';
import type { MemberReports } from '../../trust/member-reports.js';
import type { Listening } from '../banner.js';
import type { NodeState } from '../state.js';
import type { NodePeers } from './peers.js';
import { step } from './step.js';

/** What the admin API serves, from the steps before it. */
export interface AdminInputs {
  /** The node's admin view (compose/admin-view.ts). */
  view: AdminBackend;
  peers: NodePeers;
  /** The member reports the proxy's audit sends (start/proxy.ts). */
  reports: MemberReports;
  /** Where the proxy's http listener is (the dashboard's links). */
  proxy: Listening;
}

export async function startAdmin(
  s: NodeState,
  { view, peers, reports, proxy }: AdminInputs,
): Promise<void> {
  const { config, addresses } = s;
  s.acme = new FleetChallenges(
    {
      ...peers.request,
      store: s.challenges,
      cutOff: () => s.cutOff(),
      logger: s.log('acme'),
    },
    { zone: config.zone },
  );
  const admin = new AdminApi(
    {
      backend: view,
      metrics: s.metrics,
      logger: s.log('admin'),
      clock: s.clock,
      acme: s.acme,
      purges: s.purges,
      members: {
        reports,
        view: {
          quarantine: () => s.proxy.quarantine?.() ?? { quarantined: [], suspects: [] },
        },
      },
      connections: s.connections,
      ...(s.logHub ? { logs: s.logHub } : {}),
      ...(peers.answerAuth ? { peerAnswers: peers.answerAuth } : {}),
    },
    {
      token: config.admin.token,
      publicMetrics: config.admin.publicMetrics,
      dashboard: {
        proxy: { listening: proxy, zones: [config.zone], sites: config.proxy.sites },
      },
    },
  );
  s.admin = admin;
  s.listening.admin = await step('admin', () =>
    admin.listen(config.admin.port, addresses.bind.admin),
  );
}
