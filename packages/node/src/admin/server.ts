/**
 * The admin API: JSON over HTTP (plus Prometheus text on /metrics). `handle()` is the whole API
 * as a function of a plain request object, so tests call it in-process with any remote address;
 * `listen()` puts it behind `node:http`. Endpoints are listed in docs/admin-api.md.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { z } from 'zod';
import { AdminRequestError, CoralNodeError } from '../errors.js';
import type { CoralMetrics } from '../metrics/metrics.js';
import { checkAccess } from './access.js';
import type { AdminBackend } from './backend.js';
import { decodeValue, parseKey, viewValue } from './keys.js';

export interface AdminRequest {
  method: string;
  /** Path and query, e.g. `/v1/dsht/routes?level=2`. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  /** The client's address as the socket saw it. */
  remoteAddress: string | undefined;
  body?: string;
}

export interface AdminResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface AdminApiComponents {
  backend: AdminBackend;
  metrics?: CoralMetrics;
  logger?: Pick<Logger, 'info' | 'warn' | 'debug'>;
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
}

export const DEFAULT_ADMIN_OP_TIMEOUT_MS = 10_000;
export const DEFAULT_ADMIN_MAX_BODY_BYTES = 64 * 1024;

const putBody = z.strictObject({
  value: z.string(),
  encoding: z.enum(['utf8', 'base64', 'hex']).default('utf8'),
  ttl: z.number().int().min(1).max(86_400),
});
const purgeBody = z.strictObject({ url: z.url({ protocol: /^https?$/ }) });

type Handler = (req: AdminRequest, url: URL, params: string[]) => Promise<AdminResponse>;

const json = (status: number, value: unknown): AdminResponse => ({
  status,
  headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' },
  body:
    JSON.stringify(
      value,
      (_k, v) =>
        v instanceof Uint8Array
          ? Buffer.from(v).toString('hex')
          : typeof v === 'bigint'
            ? v.toString()
            : v,
      2,
    ) + '\n',
});

export class AdminApi {
  readonly #backend: AdminBackend;
  readonly #metrics: CoralMetrics | undefined;
  readonly #logger: AdminApiComponents['logger'];
  readonly #token: string | undefined;
  readonly #publicPaths: ReadonlySet<string>;
  readonly #opTimeoutMs: number;
  readonly #maxBody: number;
  readonly #routes: [method: string, pattern: RegExp, handler: Handler][];
  #server: Server | undefined;

  constructor(components: AdminApiComponents, options: AdminApiOptions = {}) {
    this.#backend = components.backend;
    this.#metrics = components.metrics;
    this.#logger = components.logger;
    this.#token = options.token;
    // Probes of load balancers, kubelets and health checks come from other addresses and carry no
    // token; what they learn (alive, ready and the names of the readiness checks) is no secret.
    this.#publicPaths = new Set([
      '/healthz',
      '/readyz',
      ...(options.publicMetrics ? ['/metrics'] : []),
    ]);
    this.#opTimeoutMs = options.opTimeoutMs ?? DEFAULT_ADMIN_OP_TIMEOUT_MS;
    this.#maxBody = options.maxBodyBytes ?? DEFAULT_ADMIN_MAX_BODY_BYTES;
    const b = this.#backend;
    this.#routes = [
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
          const body = parseBody(putBody, req.body);
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
          const { url } = parseBody(purgeBody, req.body);
          return json(200, { url, ...(await b.cachePurge(url)) });
        },
      ],
      ['GET', /^\/v1\/dns\/probes$/, async () => json(200, { probes: b.probeCache() })],
      ['GET', /^\/v1\/dns\/decisions$/, async () => json(200, { decisions: b.dnsDecisions() })],
    ];
  }

  /** Answer one request. Never throws: every failure becomes a JSON error with a stable code. */
  async handle(req: AdminRequest): Promise<AdminResponse> {
    try {
      const url = new URL(req.url, 'http://admin.invalid');
      const path = url.pathname.length > 1 ? url.pathname.replace(/\/+$/, '') : url.pathname;
      if (!this.#publicPaths.has(path)) {
        checkAccess(req.remoteAddress, header(req.headers, 'authorization'), this.#token);
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
    this.#server = server;
    const listening = once(server, 'listening'); // rejects with the listen error
    server.listen(port, host);
    await listening;
    const addr = server.address() as AddressInfo;
    return { host: addr.address, port: addr.port };
  }

  async close(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
  }
}

function header(headers: AdminRequest['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function parseBody<T>(schema: z.ZodType<T>, body: string | undefined): T {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body || 'null');
  } catch {
    throw new AdminRequestError('CORAL_ERR_ADMIN_BAD_REQUEST', 'body is not valid JSON');
  }
  const result = schema.safeParse(parsed);
  if (!result.success) {
    const problems = result.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`);
    throw new AdminRequestError('CORAL_ERR_ADMIN_BAD_REQUEST', problems.join('; '));
  }
  return result.data;
}
