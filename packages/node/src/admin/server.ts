/**
 * The admin API: JSON over HTTP (plus Prometheus text on /metrics and the dashboard page at /).
 * `handle()` is the whole API as a function of a plain request object, so tests call it
 * in-process with any remote address; `listen()` puts it behind `node:http`. The route table is
 * made of one module per area (*-routes.ts: pages, node, dsht, cache, keys, dns, acme, purge,
 * members); endpoints are listed in docs/admin-api.md; who may call them is decided in access.ts.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LiveHub } from '@coral/accesslog';
import { ConnectionBudget, guardHttpServer, type ListenerLimits } from '@coral/connguard';
import { systemClock, type Clock } from '@coral/runtime';
import type { Logger } from 'pino';
import { AdminRequestError, CoralNodeError } from '../errors.js';
import type { CoralMetrics } from '../metrics/metrics.js';
import { AdminAccess, SAFE_METHODS } from './access.js';
import type { FleetChallenges } from '../acme/fleet-challenges.js';
import { acmeRoutes, isPeerPath } from './acme-routes.js';
import type { FleetPurge } from '../purge/fleet-purge.js';
import { purgeRoutes } from './purge-routes.js';
import { logRoutes } from './log-routes.js';
import { memberRoutes, type MemberTrustView } from './member-routes.js';
import type { MemberReports } from '../trust/member-reports.js';
import { PEER_ANSWER_HEADER, type PeerAnswerAuth } from '../peer/answers.js';
import { verifiedPeerAuth } from '../peer/requests.js';
import type { AdminBackend } from './backend.js';
import { cacheRoutes } from './cache-routes.js';
import { DashboardData, type DashboardOptions } from './dashboard/data.js';
import { dnsRoutes } from './dns-routes.js';
import { dshtRoutes } from './dsht-routes.js';
import { json, type AdminRequest, type AdminResponse, type AdminRoute } from './http.js';
import { keyRoutes } from './key-routes.js';
import { nodeRoutes } from './node-routes.js';
import { pageRoutes } from './page-routes.js';
import { SESSION_COOKIE } from './session.js';

export { json, parseBody, type AdminRequest, type AdminResponse } from './http.js';

export interface AdminApiComponents {
  backend: AdminBackend;
  metrics?: CoralMetrics;
  logger?: Pick<Logger, 'info' | 'warn' | 'debug'>;
  /** Time for sessions and the dashboard's samples (default the system clock). */
  clock?: Clock;
  /** ACME DNS-01 challenges of the fleet (admin/acme-routes.ts); absent: no such endpoints. */
  acme?: FleetChallenges;
  /** Fleet purges (admin/purge-routes.ts); absent: only the local `/v1/cache/purge`. */
  purges?: FleetPurge;
  /** Member reports and the quarantine view (admin/member-routes.ts); absent: no such endpoints. */
  members?: { reports: MemberReports; view: MemberTrustView };
  /** The live log stream (`GET /v1/logs`, admin/log-routes.ts); absent: no such endpoint. */
  logs?: LiveHub;
  /** Seals the answers to peer requests that verified (peer/answers.ts); keyed mode. */
  peerAnswers?: PeerAnswerAuth;
  /**
   * The node's connection budget: the admin listener registers as `admin`, outside the ceiling
   * (its connections come from the reserve), with {@link ADMIN_CONNECTION_LIMITS}.
   */
  connections?: ConnectionBudget;
}

export interface AdminApiOptions {
  /** Bearer token required from non-loopback clients; without one they are refused. */
  token?: string;
  /**
   * Serve `/metrics` to any client without the token (for a Prometheus scraping pods by
   * annotation). Default false. `/healthz` and `/readyz` always answer anyone.
   */
  publicMetrics?: boolean;
  /** Bound on network DSHT operations started from the API (default {@link DEFAULT_ADMIN_OP_TIMEOUT_MS}). */
  opTimeoutMs?: number;
  /** Largest request body accepted (default {@link DEFAULT_ADMIN_MAX_BODY_BYTES}). */
  maxBodyBytes?: number;
  /** The dashboard's sampling and the proxy it observes (admin/dashboard/data.ts). */
  dashboard?: DashboardOptions;
  /** Lifetime of a browser session (default admin/session.ts SESSION_TTL_SECONDS). */
  sessionTtlSeconds?: number;
}

export const DEFAULT_ADMIN_OP_TIMEOUT_MS = 10_000;
/**
 * The admin listener's budget: probes, Prometheus, a dashboard and the members' peer requests
 * need a few connections; strangers get no more than these, and a flood of the proxy never
 * takes them (not counted toward the node's ceiling: part of its reserve).
 */
export const ADMIN_CONNECTION_LIMITS: ListenerLimits = {
  perAddress: 32,
  perPrefix: 0,
  maxConnections: 64,
  countsTowardCeiling: false,
};
export const DEFAULT_ADMIN_MAX_BODY_BYTES = 64 * 1024;

export class AdminApi {
  readonly #metrics: CoralMetrics | undefined;
  readonly #logger: AdminApiComponents['logger'];
  readonly #peerAnswers: PeerAnswerAuth | undefined;
  readonly #access: AdminAccess;
  readonly #dashboard: DashboardData | undefined;
  readonly #publicPaths: ReadonlySet<string>;
  readonly #maxBody: number;
  readonly #routes: AdminRoute[];
  #server: Server | undefined;
  readonly #connections: ConnectionBudget | undefined;

  constructor(components: AdminApiComponents, options: AdminApiOptions = {}) {
    this.#connections = components.connections;
    this.#metrics = components.metrics;
    this.#logger = components.logger;
    this.#peerAnswers = components.peerAnswers;
    const clock = components.clock ?? systemClock;
    this.#access = new AdminAccess(
      { clock },
      {
        ...(options.token !== undefined ? { token: options.token } : {}),
        ...(options.sessionTtlSeconds ? { sessionTtlSeconds: options.sessionTtlSeconds } : {}),
      },
    );
    this.#dashboard = components.metrics
      ? new DashboardData(
          {
            backend: components.backend,
            metrics: components.metrics,
            clock,
            onError: (err) => this.#logger?.warn({ err }, 'dashboard sample failed'),
          },
          options.dashboard,
        )
      : undefined;
    // Probes of load balancers, kubelets and health checks come from other addresses and carry no
    // token; what they learn (alive, ready and the names of the readiness checks) is no secret.
    // The login and logout pages need no session, and the dashboard's assets hold no data.
    this.#publicPaths = new Set([
      '/healthz',
      '/readyz',
      '/login',
      '/logout',
      ...(options.publicMetrics ? ['/metrics'] : []),
    ]);
    this.#maxBody = options.maxBodyBytes ?? DEFAULT_ADMIN_MAX_BODY_BYTES;
    const b = components.backend;
    // The route table, by area (one module each; docs/admin-api.md lists every endpoint).
    this.#routes = [
      ...pageRoutes(this.#access, this.#dashboard),
      ...nodeRoutes(b, this.#metrics),
      ...dshtRoutes(b, options.opTimeoutMs ?? DEFAULT_ADMIN_OP_TIMEOUT_MS),
      ...cacheRoutes(b),
      ...keyRoutes(b, this.#logger),
      ...dnsRoutes(b),
      ...(components.acme ? acmeRoutes(components.acme) : []),
      ...(components.purges ? purgeRoutes(components.purges) : []),
      ...(components.logs ? logRoutes(components.logs) : []),
      ...(components.members
        ? memberRoutes(components.members.reports, components.members.view)
        : []),
    ];
  }

  /** Answer one request. Never throws: every failure becomes a JSON error with a stable code. */
  async handle(req: AdminRequest): Promise<AdminResponse> {
    const res = await this.#handle(req);
    // A member believes an answer to its peer request only with this seal (peer/answers.ts).
    const auth = verifiedPeerAuth(req);
    if (auth !== undefined && this.#peerAnswers) {
      res.headers[PEER_ANSWER_HEADER] = this.#peerAnswers.seal(auth, res.status, res.body);
    }
    return res;
  }

  async #handle(req: AdminRequest): Promise<AdminResponse> {
    try {
      const url = new URL(req.url, 'http://admin.invalid');
      const path = url.pathname.length > 1 ? url.pathname.replace(/\/+$/, '') : url.pathname;
      // A page elsewhere must not make the API act, whoever the browser is signed in as.
      if (!SAFE_METHODS.has(req.method)) this.#access.checkSameOrigin(req);
      // The page answers a refusal with the login page itself; assets carry no data.
      // Node-to-node paths authenticate with the fleet's keys in their handlers (acme-routes.ts).
      const open = this.#publicPaths.has(path) || isPeerPath(path);
      if (path !== '/' && !path.startsWith('/dashboard/') && !open) {
        this.#access.authorize(req);
      }
      let pathMatched = false;
      for (const [method, pattern, handler] of this.#routes) {
        const m = pattern.exec(path);
        if (!m) continue;
        pathMatched = true;
        if (method !== req.method && !(method === 'GET' && req.method === 'HEAD')) continue;
        const res = await handler(req, url, m.slice(1));
        return req.method === 'HEAD' ? { ...res, body: '' } : res;
      }
      throw pathMatched
        ? new AdminRequestError(
            'CORAL_ERR_ADMIN_METHOD_NOT_ALLOWED',
            `${req.method} not allowed on ${path}`,
          )
        : new AdminRequestError('CORAL_ERR_ADMIN_NOT_FOUND', `no such endpoint: ${path}`);
    } catch (err) {
      return this.#errorResponse(err);
    }
  }

  #errorResponse(err: unknown): AdminResponse {
    if (err instanceof CoralNodeError) {
      const res = json(err.statusCode, { error: { code: err.code, message: err.message } });
      if (err.statusCode === 401) res.headers['www-authenticate'] = 'Bearer realm="coral-admin"';
      return res;
    }
    const e = err as { name?: string; code?: string; message?: string };
    if (e?.name === 'TimeoutError' || e?.name === 'AbortError') {
      return json(504, {
        error: { code: 'CORAL_ERR_ADMIN_UNAVAILABLE', message: 'operation timed out' },
      });
    }
    this.#logger?.warn({ err }, 'admin request failed');
    // Errors of the other packages keep their own stable code.
    return json(500, {
      error: { code: e?.code ?? 'CORAL_ERR_ADMIN_UNAVAILABLE', message: e?.message ?? String(err) },
    });
  }

  /** The `node:http` request listener: reads the body (bounded) and writes `handle()`'s answer. */
  readonly listener = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > this.#maxBody) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('error', () => res.destroy());
    req.on('end', () => {
      const request: AdminRequest = {
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        headers: req.headers,
        remoteAddress: req.socket.remoteAddress,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      const answer = tooLarge
        ? Promise.resolve(
            this.#errorResponse(
              new AdminRequestError(
                'CORAL_ERR_ADMIN_BAD_REQUEST',
                `body larger than ${this.#maxBody} bytes`,
              ),
            ),
          )
        : this.handle(request);
      void answer.then((r) => {
        res.writeHead(r.status, r.headers);
        if (r.stream) void r.stream.start(res);
        else res.end(r.body);
      });
    });
  };

  async listen(port: number, host: string): Promise<{ host: string; port: number }> {
    const server = createServer(this.listener);
    server.keepAliveTimeout = 5_000;
    const budget = this.#connections ?? new ConnectionBudget();
    guardHttpServer(server, budget.listener('admin', ADMIN_CONNECTION_LIMITS), {
      ...(this.#logger ? { logger: this.#logger } : {}),
    });
    this.#server = server;
    const listening = once(server, 'listening'); // rejects with the listen error
    server.listen(port, host);
    await listening;
    const addr = server.address() as AddressInfo;
    // Cookies are per host, not per port: nodes sharing an address keep their own sessions.
    this.#access.cookieName = `${SESSION_COOKIE}_${addr.port}`;
    await this.#dashboard?.start();
    return { host: addr.address, port: addr.port };
  }

  async close(): Promise<void> {
    this.#dashboard?.stop();
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
  }
}
