/**
 * The admin API's node endpoints (docs/admin-api.md): liveness and readiness (answered to anyone:
 * probes carry no token), what the node is and where it listens, and its metrics.
 *
 *   GET /healthz     { ok: true }
 *   GET /readyz      the readiness checks; 503 while one fails
 *   GET /metrics     Prometheus text
 *   GET /v1/node     node id, version, zone, advertised address, listeners, uptime
 */
import { AdminRequestError } from '../errors.js';
import type { CoralMetrics } from '../metrics/metrics.js';
import type { AdminBackend } from './backend.js';
import { json, type AdminRoute } from './http.js';

export function nodeRoutes(backend: AdminBackend, metrics: CoralMetrics | undefined): AdminRoute[] {
  return [
    ['GET', /^\/healthz$/, async () => json(200, { ok: true })],
    [
      'GET',
      /^\/readyz$/,
      async () => {
        const r = backend.readiness();
        return json(r.ready ? 200 : 503, r);
      },
    ],
    [
      'GET',
      /^\/metrics$/,
      async () => {
        if (!metrics) {
          throw new AdminRequestError('CORAL_ERR_ADMIN_UNAVAILABLE', 'metrics are not enabled');
        }
        return {
          status: 200,
          headers: { 'content-type': metrics.contentType },
          body: await metrics.text(),
        };
      },
    ],
    ['GET', /^\/v1\/node$/, async () => json(200, backend.info())],
  ];
}
