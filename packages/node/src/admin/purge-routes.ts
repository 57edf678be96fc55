/**
 * The admin API's purge endpoints (docs/admin-api.md, "Purge"):
 *
 *   POST /v1/purge              { url } | { prefix } | { tag }: here and on every live member
 *                               (502 CORAL_ERR_FLEET_INCOMPLETE when one was not reached)
 *   GET  /v1/purge/log          the newest entries of this node's purge log and its catch-up state
 *
 * and the node-to-node endpoints (purge/fleet-purge.ts), which take no admin token but the
 * fleet's peer signature (peer/requests.ts):
 *
 *   POST /v1/peer/purges/<sha256 of the body>     a member's purge
 *   GET  /v1/peer/purges?after=&limit=&log=       a page of the log, for a member's catch-up
 */
import { z } from 'zod';
import { AdminRequestError } from '../errors.js';
import {
  MAX_PURGE_VALUE_LENGTH,
  PEER_PURGE_PATH,
  PURGE_PAGE_LIMIT,
  type FleetPurge,
} from '../purge/fleet-purge.js';
import { fleetAnswer } from './fleet-answer.js';
import { json, parseBody, type AdminRequest, type AdminRoute } from './http.js';

/** Longest URL or prefix (as Fastly's 8 KB URL limit); members refuse longer entries. */
const value = z.string().min(1).max(MAX_PURGE_VALUE_LENGTH);
const purgeBody = z.union([
  z.strictObject({ url: value }),
  z.strictObject({ prefix: value }),
  z.strictObject({ tag: value }),
]);

export function purgeRoutes(purges: FleetPurge): AdminRoute[] {
  const peerPath = PEER_PURGE_PATH.replaceAll('/', '\\/');
  return [
    [
      'POST',
      /^\/v1\/purge$/,
      async (req) => {
        const body = parseBodyOneOf(req);
        const spec =
          'url' in body
            ? { kind: 'url' as const, value: body.url }
            : 'prefix' in body
              ? { kind: 'prefix' as const, value: body.prefix }
              : { kind: 'tag' as const, value: body.tag };
        return fleetAnswer('the purge was', await purges.purge(spec));
      },
    ],
    [
      'GET',
      /^\/v1\/purge\/log$/,
      async (_req, url) => {
        const limit = intParam(url, 'limit', 100, 1, PURGE_PAGE_LIMIT);
        return json(200, {
          propagating: purges.propagating,
          size: purges.log.size,
          completeSince: new Date(purges.completeSince()).toISOString(),
          lastSync: purges.lastSync ?? null,
          entries: (await purges.log.recent(limit)).map((e) => ({
            ...e,
            at: new Date(e.at).toISOString(),
          })),
        });
      },
    ],
    [
      'POST',
      new RegExp(`^${peerPath}\\/([0-9a-f]{64})$`),
      async (req, _url, [digest]) => {
        purges.verifyPeer(req);
        return json(200, await purges.applyPeer(req.body ?? '', digest!));
      },
    ],
    [
      'GET',
      new RegExp(`^${peerPath}$`),
      async (req, url) => {
        purges.verifyPeer(req);
        const after = intParam(url, 'after', 0, 0, Number.MAX_SAFE_INTEGER);
        const limit = intParam(url, 'limit', PURGE_PAGE_LIMIT, 1, PURGE_PAGE_LIMIT);
        const log = url.searchParams.get('log') ?? undefined;
        if (log !== undefined && !/^[0-9a-f]{1,64}$/.test(log)) {
          throw new AdminRequestError('CORAL_ERR_ADMIN_BAD_REQUEST', 'log is not a log id');
        }
        return json(200, await purges.page(after, limit, log));
      },
    ],
  ];
}

/** Exactly one of url, prefix and tag, with a message that says so. */
function parseBodyOneOf(req: AdminRequest): z.infer<typeof purgeBody> {
  try {
    return parseBody(purgeBody, req);
  } catch (err) {
    if (err instanceof AdminRequestError && err.code === 'CORAL_ERR_ADMIN_BAD_REQUEST') {
      throw new AdminRequestError(
        'CORAL_ERR_ADMIN_BAD_REQUEST',
        'the body is exactly one of {"url": ...}, {"prefix": ...} or {"tag": ...}',
      );
    }
    throw err;
  }
}

function intParam(url: URL, name: string, dflt: number, min: number, max: number): number {
  const raw = url.searchParams.get(name);
  if (raw === null) return dflt;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min || n > max) {
    throw new AdminRequestError(
      'CORAL_ERR_ADMIN_BAD_REQUEST',
      `${name} must be an integer from ${min} to ${max}`,
    );
  }
  return n;
}
