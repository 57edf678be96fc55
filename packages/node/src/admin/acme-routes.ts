/**
 * The admin API's ACME DNS-01 endpoints (docs/admin-api.md, "ACME DNS-01"):
 *
 *   GET    /v1/acme/challenges            the values answered at _acme-challenge.<zone>
 *   POST   /v1/acme/challenges            { value, ttlSeconds? }: set here and on every member
 *   DELETE /v1/acme/challenges/<value>    remove one value, here and on every member
 *   DELETE /v1/acme/challenges            remove every value
 *
 * (502 CORAL_ERR_FLEET_INCOMPLETE, with the answer, when a live member did not apply a change)
 * and the node-to-node endpoints the fleet uses to pass them on (`/v1/peer/...`), which are not
 * subject to the admin token or loopback rule but to the fleet's peer signature instead.
 */
import { z } from 'zod';
import { DnsChallengeError } from '@coral/dnssrv';
import type { FleetChallenges } from '../acme/fleet-challenges.js';
import { PEER_ACME_PATH } from '../acme/fleet-challenges.js';
import { AdminRequestError } from '../errors.js';
import { fleetAnswer } from './fleet-answer.js';
import { json, parseBody, type AdminRequest, type AdminRoute } from './http.js';

/** Longest lifetime of a value (dnssrv's store allows 24 h). */
const MAX_TTL_SECONDS = 86_400;

const setBody = z.strictObject({
  value: z.string().min(1),
  ttlSeconds: z.number().int().min(1).max(MAX_TTL_SECONDS).optional(),
});

/** True for paths that authenticate with the fleet's keys instead of the admin rules. */
export function isPeerPath(path: string): boolean {
  return path.startsWith('/v1/peer/');
}

export function acmeRoutes(acme: FleetChallenges): AdminRoute[] {
  const challenge = /^\/v1\/acme\/challenges\/([^/]+)$/;
  const peerOne = new RegExp(`^${PEER_ACME_PATH.replaceAll('/', '\\/')}\\/([^/]+)$`);
  const peerAll = new RegExp(`^${PEER_ACME_PATH.replaceAll('/', '\\/')}$`);
  const verify = (req: AdminRequest) => acme.verifyPeer(req);
  return [
    [
      'GET',
      /^\/v1\/acme\/challenges$/,
      async () => json(200, { zone: acme.zone, challenges: acme.list() }),
    ],
    [
      'POST',
      /^\/v1\/acme\/challenges$/,
      async (req) => {
        const body = parseBody(setBody, req);
        const r = await challengeCall(() => acme.set(body.value, body.ttlSeconds));
        return fleetAnswer('the challenge value was', r);
      },
    ],
    [
      'DELETE',
      challenge,
      async (_r, _u, [value]) =>
        fleetAnswer('the removal was', await acme.remove(pathValue(value!))),
    ],
    [
      'DELETE',
      /^\/v1\/acme\/challenges$/,
      async () => fleetAnswer('the removal was', await acme.remove()),
    ],
    [
      'PUT',
      peerOne,
      async (req, url, [value]) => {
        verify(req);
        const ttl = Number(url.searchParams.get('ttl'));
        if (!Number.isInteger(ttl) || ttl < 1 || ttl > MAX_TTL_SECONDS) {
          throw new AdminRequestError(
            'CORAL_ERR_ADMIN_BAD_REQUEST',
            `ttl must be 1 to ${MAX_TTL_SECONDS}`,
          );
        }
        const v = pathValue(value!);
        return json(
          200,
          await challengeCall(async () => acme.applyPeer({ set: v, ttlSeconds: ttl })),
        );
      },
    ],
    [
      'DELETE',
      peerOne,
      async (req, _u, [value]) => {
        verify(req);
        return json(200, acme.applyPeer({ remove: pathValue(value!) }));
      },
    ],
    [
      'DELETE',
      peerAll,
      async (req) => {
        verify(req);
        return json(200, acme.applyPeer({ remove: undefined }));
      },
    ],
  ];
}

function pathValue(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new AdminRequestError('CORAL_ERR_ADMIN_BAD_REQUEST', 'the value is not URL-encoded text');
  }
}

/** A value the DNS server's store refuses is the caller's mistake: 400 with its code. */
async function challengeCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof DnsChallengeError) {
      throw new AdminRequestError('CORAL_ERR_ADMIN_BAD_REQUEST', `${err.code}: ${err.message}`);
    }
    throw err;
  }
}
