/**
 * The admin API's cache endpoints (docs/admin-api.md), this node only — the fleet's
 * purges are purge-routes.ts:
 *
 *   GET  /v1/cache          the objects in the proxy's cache
 *   POST /v1/cache/purge    { url }: drop it here and withdraw this node's announcement
 *   GET  /v1/blocklist      the origin domains the proxy refuses
 */
import { z } from 'zod';
import { AdminRequestError } from '../errors.js';
import type { AdminBackend } from './backend.js';
import { json, parseBody, type AdminRoute } from './http.js';

const purgeBody = z.strictObject({ url: z.url({ protocol: /^https?$/ }) });

export function cacheRoutes(b: AdminBackend): AdminRoute[] {
  return [
    ['GET', /^\/v1\/cache$/, async () => json(200, { objects: await b.cacheList() })],
    [
      'POST',
      /^\/v1\/cache\/purge$/,
      async (req) => {
        const { url } = parseBody(purgeBody, req);
        return json(200, { url, ...(await b.cachePurge(url)) });
      },
    ],
    [
      'GET',
      /^\/v1\/blocklist$/,
      async () => {
        if (!b.blocklist) {
          throw new AdminRequestError('CORAL_ERR_ADMIN_UNAVAILABLE', 'no blocklist here');
        }
        return json(200, b.blocklist());
      },
    ],
  ];
}
