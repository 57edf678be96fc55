/**
 * The admin API's view of member trust (docs/admin-api.md, "Members"):
 *
 *   GET  /v1/members/quarantine     members this node quarantined (with the evidence) and suspects
 *
 * and the node-to-node endpoint members report quarantines through (trust/member-reports.ts),
 * which takes no admin token but the fleet's peer signature:
 *
 *   POST /v1/peer/member-reports/<sha256 of the body>
 */
import { PEER_REPORT_PATH, type MemberReports } from '../trust/member-reports.js';
import { json, type AdminRoute } from './http.js';

export interface MemberTrustView {
  quarantine(): { quarantined: unknown[]; suspects: unknown[] };
}

export function memberRoutes(reports: MemberReports, view: MemberTrustView): AdminRoute[] {
  const peerPath = PEER_REPORT_PATH.replaceAll('/', '\\/');
  return [
    [
      'GET',
      /^\/v1\/members\/quarantine$/,
      async () => {
        const { quarantined, suspects } = view.quarantine();
        const iso = (ms: unknown) => new Date(Number(ms)).toISOString();
        return json(200, {
          quarantined: quarantined.map((e) => {
            const q = e as { since: number; until: number };
            return { ...q, since: iso(q.since), until: iso(q.until) };
          }),
          suspects: suspects.map((e) => {
            const s = e as { until: number };
            return { ...s, until: iso(s.until) };
          }),
        });
      },
    ],
    [
      'POST',
      new RegExp(`^${peerPath}\\/([0-9a-f]{64})$`),
      async (req, _url, [digest]) => {
        reports.verifyPeer(req);
        return json(200, reports.take(req.body ?? '', digest!));
      },
    ],
  ];
}
