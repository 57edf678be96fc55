/**
 * The admin API's fleet-key endpoints (docs/admin-api.md): key ids only, never a
 * secret; every change is logged.
 *
 *   GET    /v1/fleet/keys              the keys by id, primary first, and where they came from
 *   POST   /v1/fleet/keys              { key }: install (verifies at once, signs once used)
 *   POST   /v1/fleet/keys/<id>/use     make it the primary
 *   DELETE /v1/fleet/keys/<id>         drop it (not the primary)
 *   GET    /v1/fleet/auth              trust mode, drop counters, isolation, verified members
 */
import type { Logger } from 'pino';
import { z } from 'zod';
import { AdminRequestError } from '../errors.js';
import type { AdminBackend } from './backend.js';
import { json, parseBody, type AdminRoute } from './http.js';

const installKeyBody = z.strictObject({ key: z.string().min(1).max(256) });
/** A key id as the keyring shows it. */
const KEY_ID = /^[0-9a-f]{8}$/;

export function keyRoutes(b: AdminBackend, logger: Pick<Logger, 'info'> | undefined): AdminRoute[] {
  return [
    ['GET', /^\/v1\/fleet\/keys$/, async () => json(200, b.fleetKeys())],
    [
      'POST',
      /^\/v1\/fleet\/keys$/,
      async (req) => {
        const { key } = parseBody(installKeyBody, req);
        const r = b.installKey(key);
        logger?.info({ keyId: r.id }, 'fleet key installed through the admin API');
        return json(200, r);
      },
    ],
    [
      'POST',
      /^\/v1\/fleet\/keys\/([^/]+)\/use$/,
      async (_r, _u, [id]) => {
        const r = b.useKey(keyId(id!));
        logger?.info({ keyId: id }, 'fleet key made primary through the admin API');
        return json(200, r);
      },
    ],
    [
      'DELETE',
      /^\/v1\/fleet\/keys\/([^/]+)$/,
      async (_r, _u, [id]) => {
        const r = b.removeKey(keyId(id!));
        logger?.info({ keyId: id }, 'fleet key removed through the admin API');
        return json(200, r);
      },
    ],
    ['GET', /^\/v1\/fleet\/auth$/, async () => json(200, b.fleetAuth())],
  ];
}

function keyId(raw: string): string {
  const id = decodeURIComponent(raw).toLowerCase();
  if (!KEY_ID.test(id)) {
    throw new AdminRequestError(
      'CORAL_ERR_ADMIN_BAD_REQUEST',
      `a key id is 8 hex digits (as GET /v1/fleet/keys lists them), got ${JSON.stringify(raw.slice(0, 16))}`,
    );
  }
  return id;
}
