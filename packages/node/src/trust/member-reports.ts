/**
 * Fleet-wide member reports (httpprx src/audit/): when this node's audit quarantines a member,
 * the report — the member, the object (Host, path, origin URL) and the evidence — goes to every
 * other live member as a signed node-to-node request (peer/requests.ts, as purges and ACME
 * values do):
 *
 *   POST /v1/peer/member-reports/<sha256 of the body>     body: { reporter, report } (JSON)
 *
 * The signature covers method, authority and path, and the path the body's digest, so a report
 * cannot be forged or changed in flight by anyone without the fleet's keys; answers are sealed.
 * A member that takes one does not quarantine on it (a member may be the liar, and report honest
 * members): it hands it to its proxy (`memberReported`), which audits the accused itself
 * (docs/security.md, "Members are audited"). Open mode: nothing is sent or taken.
 */
import type { Logger } from 'pino';
import { z } from 'zod';
import { ReportError } from '../errors.js';
import { bodyDigest, type PeerRequests } from '../peer/requests.js';

/** Path of the peer endpoint on every member's admin port. */
export const PEER_REPORT_PATH = '/v1/peer/member-reports';

const hex = (n: number) => z.string().regex(new RegExp(`^[0-9a-f]{${n}}$`));
const copy = z.strictObject({
  size: z.number().int().min(-1),
  sha256: z.union([hex(64), z.literal('')]),
  etag: z.string().max(1024).optional(),
  lastModified: z.string().max(128).optional(),
  lifetime: z.number().nonnegative(),
});
const reportSchema = z.strictObject({
  reporter: hex(40),
  report: z.strictObject({
    member: hex(40),
    host: z.string().min(1).max(1024),
    path: z.string().startsWith('/').max(8192),
    url: z.string().url().max(8192),
    evidence: z.strictObject({
      url: z.string().max(8192),
      disagreements: z
        .array(z.enum(['bytes', 'validators', 'freshness']))
        .min(1)
        .max(3),
      proof: z.boolean(),
      member: copy,
      origin: copy,
    }),
  }),
});

export type MemberReportBody = z.infer<typeof reportSchema>;
type Report = MemberReportBody['report'];

export interface MemberReportsComponents {
  peers: PeerRequests;
  /** The proxy: a report taken from a member is audited there. */
  proxy: { memberReported?(report: Report, reporter: string): void };
  logger?: Pick<Logger, 'info' | 'warn'>;
  metrics?: { reportSent(outcome: 'ok' | 'failed'): void };
}

export class MemberReports {
  readonly #c: MemberReportsComponents;
  readonly #nodeId: string;

  constructor(components: MemberReportsComponents, options: { nodeId: string }) {
    this.#c = components;
    this.#nodeId = options.nodeId;
  }

  /** Tell every other live member (keyed mode); never throws. */
  async send(report: Report): Promise<void> {
    const { peers, logger, metrics } = this.#c;
    if (!peers.enabled) return;
    const body = JSON.stringify({ reporter: this.#nodeId, report } satisfies MemberReportBody);
    const to = peers.members().filter((m) => m.nodeId !== report.member);
    const results = await peers.sendAll(
      'POST',
      `${PEER_REPORT_PATH}/${bodyDigest(body)}`,
      body,
      to,
    );
    const failed = results.filter((r) => !r.ok);
    for (const r of results) metrics?.reportSent(r.ok ? 'ok' : 'failed');
    logger?.info(
      { member: report.member, url: report.url, told: results.length - failed.length, failed },
      'quarantine reported to the fleet',
    );
  }

  /** Check a peer request's signature (throws `PeerAuthError` unless it verifies). */
  verifyPeer(req: {
    method: string;
    url: string;
    headers: Record<string, string | string[] | undefined>;
  }): void {
    this.#c.peers.verify(req);
  }

  /** A member's report (already verified): checked, then handed to the proxy. */
  take(body: string, digest: string): { taken: true } {
    if (bodyDigest(body) !== digest) {
      throw new ReportError("the body's SHA-256 is not the one the signed path names");
    }
    let parsed: MemberReportBody;
    try {
      parsed = reportSchema.parse(JSON.parse(body));
    } catch (err) {
      throw new ReportError(`not a member report: ${(err as Error).message.slice(0, 200)}`);
    }
    this.#c.proxy.memberReported?.(parsed.report, parsed.reporter);
    return { taken: true };
  }
}
