/**
 * The admin API's DSHT endpoints (docs/admin-api.md): clusters and routing tables, the
 * values stored here, a network get and put, a PING. Network operations are bounded by
 * `opTimeoutMs` (a timeout answers 504).
 *
 *   GET  /v1/clusters                 clusters per level, routing table sizes, live proxies
 *   GET  /v1/dsht/routes[?level=]     the routing tables' contacts
 *   GET  /v1/dsht/local/<key>         values stored on this node, with their levels
 *   GET  /v1/dsht/values/<key>        a hierarchical lookup
 *   PUT  /v1/dsht/values/<key>        a sloppy put { value, encoding, ttl }
 *   POST /v1/dsht/ping                { address: ip:port, retries? } → RTT
 */
import { z } from 'zod';
import { AdminRequestError } from '../errors.js';
import type { AdminBackend } from './backend.js';
import { json, parseBody, type AdminResponse, type AdminRoute } from './http.js';
import { decodeValue, parseKey, viewValue } from './keys.js';

const putBody = z.strictObject({
  value: z.string(),
  encoding: z.enum(['utf8', 'base64', 'hex']).default('utf8'),
  ttl: z.number().int().min(1).max(86_400),
});
const pingBody = z.strictObject({
  address: z.string().regex(/^(\[[0-9a-fA-F:.]+\]|[0-9.]+):\d{1,5}$/, {
    message: 'must be ip:port (IPv6 as [addr]:port)',
  }),
  /** Resends after a timeout (default the DSHT's: 2, waiting 1 + 2 + 4 s in all). */
  retries: z.number().int().min(0).max(5).optional(),
});

export function dshtRoutes(b: AdminBackend, opTimeoutMs: number): AdminRoute[] {
  const bound = () => AbortSignal.timeout(opTimeoutMs);
  return [
    ['GET', /^\/v1\/clusters$/, async () => json(200, b.clusters())],
    ['GET', /^\/v1\/dsht\/routes$/, async (_r, url) => routesOf(b, url)],
    [
      'GET',
      /^\/v1\/dsht\/local\/([^/]+)$/,
      async (_r, _u, [key]) => {
        const k = parseKey(decodeURIComponent(key!));
        const values = await b.localGet(k);
        return json(200, {
          key: k,
          values: values.map((v) => ({ ...viewValue(v.value), levels: v.levels })),
        });
      },
    ],
    [
      'GET',
      /^\/v1\/dsht\/values\/([^/]+)$/,
      async (_r, _u, [key]) => {
        const k = parseKey(decodeURIComponent(key!));
        const { values, stats } = await b.get(k, bound());
        return json(200, { key: k, values: values.map(viewValue), stats });
      },
    ],
    [
      'PUT',
      /^\/v1\/dsht\/values\/([^/]+)$/,
      async (req, _u, [key]) => {
        const body = parseBody(putBody, req);
        const k = parseKey(decodeURIComponent(key!));
        const value = decodeValue(body.value, body.encoding);
        if (value.length === 0 || value.length > 512) {
          throw new AdminRequestError(
            'CORAL_ERR_ADMIN_BAD_REQUEST',
            `value must be 1 to 512 bytes, got ${value.length}`,
          );
        }
        const result = await b.put(k, value, body.ttl, bound());
        return json(200, { key: k, ttl: body.ttl, result });
      },
    ],
    [
      'POST',
      /^\/v1\/dsht\/ping$/,
      async (req) => {
        const { address, retries } = parseBody(pingBody, req);
        const colon = address.lastIndexOf(':');
        const to = {
          ip: address.slice(0, colon).replace(/^\[(.*)\]$/, '$1'),
          port: Number(address.slice(colon + 1)),
        };
        try {
          const rttMs = await b.ping(to, bound(), retries);
          return json(200, { address, answered: true, rttMs });
        } catch (err) {
          return json(200, { address, answered: false, error: (err as Error).message });
        }
      },
    ],
  ];
}

/** Every routing table, or the one `?level=` names (0 .. levels-1). */
function routesOf(b: AdminBackend, url: URL): AdminResponse {
  const levels = b.levels;
  const raw = url.searchParams.get('level');
  if (raw === null) {
    const tables = Array.from({ length: levels }, (_, level) => ({
      level,
      contacts: b.routes(level),
    }));
    return json(200, { levels: tables });
  }
  const level = Number(raw);
  if (!Number.isInteger(level) || level < 0 || level >= levels) {
    throw new AdminRequestError(
      'CORAL_ERR_ADMIN_BAD_REQUEST',
      `level must be an integer from 0 to ${levels - 1}, got "${raw}"`,
    );
  }
  return json(200, { level, contacts: b.routes(level) });
}
