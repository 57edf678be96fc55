/**
 * The admin API's DNS endpoints (docs/admin-api.md): why the DNS server answered as it did, and the
 * worker threads that answer.
 *
 *   GET /v1/dns/probes       the resolver probe cache (RTT per /24)
 *   GET /v1/dns/decisions    recent answers with the reason each was chosen
 *   GET /v1/workers          each worker thread's readiness, restarts and DNS queries ([] with one)
 */
import type { AdminBackend } from './backend.js';
import { json, type AdminRoute } from './http.js';

export function dnsRoutes(b: AdminBackend): AdminRoute[] {
  return [
    [
      'GET',
      /^\/v1\/workers$/,
      async () => json(200, { workers: b.workers ? await b.workers() : [] }),
    ],
    ['GET', /^\/v1\/dns\/probes$/, async () => json(200, { probes: await b.probeCache() })],
    ['GET', /^\/v1\/dns\/decisions$/, async () => json(200, { decisions: await b.dnsDecisions() })],
  ];
}
