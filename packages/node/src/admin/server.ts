/**
 * The admin API: JSON over HTTP (plus Prometheus text on /metrics and the dashboard page at /).
 * `handle()` is the whole API as a function of a plain request object, so tests call it
 * in-process with any remote address; `listen()` puts it behind `node:http`. Endpoints are listed
 * in docs/admin-api.md; who may call them is decided in access.ts.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConnectionBudget, guardHttpServer, type ListenerLimits } from '@coral/connguard';
import { systemClock, type Clock } from '@coral/runtime';
import type { Logger } from 'pino';
import { z } from 'zod';
import { AdminAuthError, AdminRequestError, CoralNodeError } from '../errors.js';
import type { CoralMetrics } from '../metrics/metrics.js';
import { AdminAccess, SAFE_METHODS, type AccessGrant } from './access.js';
import type { FleetChallenges } from '../acme/fleet-challenges.js';
import { acmeRoutes, isPeerPath } from './acme-routes.js';
import type { FleetPurge } from '../purge/fleet-purge.js';
import { purgeRoutes } from './purge-routes.js';
import { memberRoutes, type MemberTrustView } from './member-routes.js';
import type { MemberReports } from '../trust/member-reports.js';
import { PEER_ANSWER_HEADER, type PeerAnswerAuth } from '../peer/answers.js';
import { verifiedPeerAuth } from '../peer/requests.js';
import type { AdminBackend } from './backend.js';
import { asset } from './dashboard/assets.js';
import { DashboardData, type DashboardOptions } from './dashboard/data.js';
import { PAGE_SECURITY_HEADERS, dashboardPage, loginPage } from './dashboard/page.js';
import { decodeValue, parseKey, viewValue } from './keys.js';
import { SESSION_COOKIE, clearCookie } from './session.js';
import { header, json, parseBody, type AdminRequest, type AdminResponse } from './http.js';

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

const putBody = z.strictObject({
  value: z.string(),
  encoding: z.enum(['utf8', 'base64', 'hex']).default('utf8'),
  ttl: z.number().int().min(1).max(86_400),
});
const purgeBody = z.strictObject({ url: z.url({ protocol: /^https?$/ }) });
const installKeyBody = z.strictObject({ key: z.string().min(1).max(256) });
const pingBody = z.strictObject({
  address: z.string().regex(/^(\[[0-9a-fA-F:.]+\]|[0-9.]+):\d{1,5}$/, {
    message: 'must be ip:port (IPv6 as [addr]:port)',
  }),
  /** Resends after a timeout (default the DSHT's: 2, waiting 1 + 2 + 4 s in all). */
  retries: z.number().int().min(0).max(5).optional(),
});
/** A key id as the keyring shows it. */
const KEY_ID = /^[0-9a-f]{8}$/;

type Handler = (req: AdminRequest, url: URL, params: string[]) => Promise<AdminResponse>;

export class AdminApi {
  readonly #backend: AdminBackend;
  readonly #metrics: CoralMetrics | undefined;
  readonly #logger: AdminApiComponents['logger'];
  readonly #peerAnswers: PeerAnswerAuth | undefined;
  readonly #access: AdminAccess;
  readonly #dashboard: DashboardData | undefined;
  readonly #publicPaths: ReadonlySet<string>;
  readonly #opTimeoutMs: number;
  readonly #maxBody: number;
  readonly #routes: [method: string, pattern: RegExp, handler: Handler][];
  #server: Server | undefined;
  readonly #connections: ConnectionBudget | undefined;

  constructor(components: AdminApiComponents, options: AdminApiOptions = {}) {
    this.#backend = components.backend;
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
    this.#opTimeoutMs = options.opTimeoutMs ?? DEFAULT_ADMIN_OP_TIMEOUT_MS;
    this.#maxBody = options.maxBodyBytes ?? DEFAULT_ADMIN_MAX_BODY_BYTES;
    const b = this.#backend;
    this.#routes = [
      ['GET', /^\/$/, async (req, url) => this.#page(req, url)],
      ['GET', /^\/login$/, async () => html(200, loginPage({ tokenConfigured: this.#hasToken }))],
      ['POST', /^\/login$/, async (req) => this.#login(req)],
      [
        'POST',
        /^\/logout$/,
        async () => redirect('/login', { 'set-cookie': clearCookie(this.#access.cookieName) }),
      ],
      ['GET', /^\/dashboard\/([a-z0-9.-]+)$/, async (req, _u, [name]) => this.#asset(req, name!)],
      [
        'GET',
        /^\/v1\/dashboard$/,
        async (_r, url) => {
          if (!this.#dashboard) {
            throw new AdminRequestError('CORAL_ERR_ADMIN_UNAVAILABLE', 'metrics are not enabled');
          }
          const raw = url.searchParams.get('since');
          const since = raw === null || raw === '' ? undefined : Number(raw);
          if (since !== undefined && !Number.isFinite(since)) {
            throw new AdminRequestError(
              'CORAL_ERR_ADMIN_BAD_REQUEST',
              `since must be a time in ms, got "${raw}"`,
            );
          }
          return json(200, await this.#dashboard.view(since), 0);
        },
      ],
      ['GET', /^\/healthz$/, async () => json(200, { ok: true })],
      [
        'GET',
        /^\/readyz$/,
        async () => {
          const r = b.readiness();
          return json(r.ready ? 200 : 503, r);
        },
      ],
      ['GET', /^\/metrics$/, () => this.#metricsText()],
      ['GET', /^\/v1\/node$/, async () => json(200, b.info())],
      ['GET', /^\/v1\/clusters$/, async () => json(200, b.clusters())],
      ['GET', /^\/v1\/dsht\/routes$/, async (_r, url) => this.#routesOf(url)],
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
          const { values, stats } = await b.get(k, AbortSignal.timeout(this.#opTimeoutMs));
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
          const result = await b.put(k, value, body.ttl, AbortSignal.timeout(this.#opTimeoutMs));
          return json(200, { key: k, ttl: body.ttl, result });
        },
      ],
      ['GET', /^\/v1\/cache$/, async () => json(200, { objects: await b.cacheList() })],
      [
        'POST',
        /^\/v1\/cache\/purge$/,
        async (req) => {
          const { url } = parseBody(purgeBody, req);
          return json(200, { url, ...(await b.cachePurge(url)) });
        },
      ],
      ['GET', /^\/v1\/fleet\/keys$/, async () => json(200, b.fleetKeys())],
      [
        'POST',
        /^\/v1\/fleet\/keys$/,
        async (req) => {
          const { key } = parseBody(installKeyBody, req);
          const r = b.installKey(key);
          this.#logger?.info({ keyId: r.id }, 'fleet key installed through the admin API');
          return json(200, r);
        },
      ],
      [
        'POST',
        /^\/v1\/fleet\/keys\/([^/]+)\/use$/,
        async (_r, _u, [id]) => {
          const r = b.useKey(keyId(id!));
          this.#logger?.info({ keyId: id }, 'fleet key made primary through the admin API');
          return json(200, r);
        },
      ],
      [
        'DELETE',
        /^\/v1\/fleet\/keys\/([^/]+)$/,
        async (_r, _u, [id]) => {
          const r = b.removeKey(keyId(id!));
          this.#logger?.info({ keyId: id }, 'fleet key removed through the admin API');
          return json(200, r);
        },
      ],
      ['GET', /^\/v1\/fleet\/auth$/, async () => json(200, b.fleetAuth())],
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
            const rttMs = await b.ping(to, AbortSignal.timeout(this.#opTimeoutMs), retries);
            return json(200, { address, answered: true, rttMs });
          } catch (err) {
            return json(200, { address, answered: false, error: (err as Error).message });
          }
        },
      ],
      [
        'GET',
        /^\/v1\/workers$/,
        async () => json(200, { workers: b.workers ? await b.workers() : [] }),
      ],
      ['GET', /^\/v1\/dns\/probes$/, async () => json(200, { probes: await b.probeCache() })],
      [
        'GET',
        /^\/v1\/dns\/decisions$/,
        async () => json(200, { decisions: await b.dnsDecisions() }),
      ],
      ...(components.acme ? acmeRoutes(components.acme) : []),
      ...(components.purges ? purgeRoutes(components.purges) : []),
      ...(components.members
        ? memberRoutes(components.members.reports, components.members.view)
        : []),
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

  get #hasToken(): boolean {
    return this.#access.sessions !== undefined;
  }

  /**
   * `/`: the dashboard for whoever may read the API; a browser that may not gets the login page
   * (or, with `?token=` right, a session cookie and a redirect that drops the token from the URL).
   */
  #page(req: AdminRequest, url: URL): AdminResponse {
    const given = url.searchParams.get('token');
    if (given !== null) {
      if (!this.#hasToken) {
        return html(403, loginPage({ tokenConfigured: false }));
      }
      if (!this.#access.tokenMatches(given)) {
        return html(401, loginPage({ tokenConfigured: true, message: 'Wrong token.' }));
      }
      return redirect('/', {
        'set-cookie': this.#access.sessions!.setCookie(this.#access.cookieName),
      });
    }
    let grant: AccessGrant;
    try {
      grant = this.#access.authorize(req);
    } catch (err) {
      if (!(err instanceof AdminAuthError)) throw err;
      return html(
        err.statusCode,
        loginPage({
          tokenConfigured: this.#hasToken,
          ...(err.statusCode === 403 ? { message: err.message } : {}),
        }),
      );
    }
    return html(200, dashboardPage({ session: grant === 'session' }));
  }

  /** `POST /login` with the form's `token`: a session cookie and back to the dashboard. */
  #login(req: AdminRequest): AdminResponse {
    if (!this.#hasToken) return html(403, loginPage({ tokenConfigured: false }));
    const type = header(req.headers, 'content-type') ?? '';
    if (!/^application\/x-www-form-urlencoded\s*(;|$)/i.test(type)) {
      throw new AdminRequestError(
        'CORAL_ERR_ADMIN_UNSUPPORTED_MEDIA_TYPE',
        'POST /login takes the form application/x-www-form-urlencoded (token=...)',
      );
    }
    const token = new URLSearchParams(req.body ?? '').get('token');
    if (token === null || !this.#access.tokenMatches(token)) {
      return html(401, loginPage({ tokenConfigured: true, message: 'Wrong token.' }));
    }
    return redirect('/', {
      'set-cookie': this.#access.sessions!.setCookie(this.#access.cookieName),
    });
  }

  #asset(req: AdminRequest, name: string): AdminResponse {
    let a;
    try {
      a = asset(name);
    } catch (err) {
      throw new AdminRequestError('CORAL_ERR_ADMIN_UNAVAILABLE', (err as Error).message);
    }
    if (!a) throw new AdminRequestError('CORAL_ERR_ADMIN_NOT_FOUND', `no such asset: ${name}`);
    const headers = {
      ...PAGE_SECURITY_HEADERS,
      'content-type': a.type,
      'cache-control': 'no-cache',
      etag: a.etag,
    };
    if (header(req.headers, 'if-none-match') === a.etag) return { status: 304, headers, body: '' };
    return { status: 200, headers, body: a.body };
  }

  async #metricsText(): Promise<AdminResponse> {
    if (!this.#metrics) {
      throw new AdminRequestError('CORAL_ERR_ADMIN_UNAVAILABLE', 'metrics are not enabled');
    }
    return {
      status: 200,
      headers: { 'content-type': this.#metrics.contentType },
      body: await this.#metrics.text(),
    };
  }

  #routesOf(url: URL): AdminResponse {
    const levels = this.#backend.levels;
    const raw = url.searchParams.get('level');
    if (raw === null) {
      const tables = Array.from({ length: levels }, (_, level) => ({
        level,
        contacts: this.#backend.routes(level),
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
    return json(200, { level, contacts: this.#backend.routes(level) });
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
        res.end(r.body);
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

function html(status: number, body: string): AdminResponse {
  return {
    status,
    headers: {
      ...PAGE_SECURITY_HEADERS,
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
    },
    body,
  };
}

function redirect(location: string, extra: Record<string, string> = {}): AdminResponse {
  return {
    status: 303,
    headers: { ...PAGE_SECURITY_HEADERS, location, 'cache-control': 'no-store', ...extra },
    body: '',
  };
}
