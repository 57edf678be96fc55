/**
 * A small client of a node's admin API, used by the CLI's client commands (and by the fleet
 * launcher to wait for readiness). Errors carry stable codes: the node could not be reached, or it
 * answered with an error (whose own code is kept in the message).
 */
import { AdminClientError } from '../errors.js';

export const DEFAULT_ADMIN_URL = 'http://127.0.0.1:8092';
export const DEFAULT_CLIENT_TIMEOUT_MS = 15_000;

export interface AdminClientOptions {
  /** Base URL of the admin API (default {@link DEFAULT_ADMIN_URL}). */
  url?: string;
  token?: string;
  timeoutMs?: number;
}

export class AdminClient {
  readonly url: string;
  readonly #token: string | undefined;
  readonly #timeoutMs: number;

  constructor(options: AdminClientOptions = {}) {
    this.url = (options.url ?? DEFAULT_ADMIN_URL).replace(/\/+$/, '');
    this.#token = options.token;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_CLIENT_TIMEOUT_MS;
  }

  /**
   * The parsed JSON of a successful answer (or of one whose status is in `accept`: the fleet's
   * 502 `CORAL_ERR_FLEET_INCOMPLETE` carries each member's result); throws
   * {@link AdminClientError} otherwise.
   */
  async json<T = unknown>(
    method: string,
    path: string,
    body?: unknown,
    accept: readonly number[] = [],
  ): Promise<T> {
    const res = await this.raw(method, path, body);
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new AdminClientError(
        'CORAL_ERR_CLIENT_HTTP',
        `${path}: answer is not JSON`,
        res.status,
      );
    }
    if (!res.ok && !(path === '/readyz' && res.status === 503) && !accept.includes(res.status)) {
      const err = (parsed as { error?: { code?: string; message?: string } }).error;
      throw new AdminClientError(
        'CORAL_ERR_CLIENT_HTTP',
        `${method} ${path}: ${res.status} ${err?.code ?? ''} ${err?.message ?? text}`.trim(),
        res.status,
      );
    }
    return parsed as T;
  }

  async text(path: string): Promise<string> {
    const res = await this.raw('GET', path);
    const text = await res.text();
    if (!res.ok)
      throw new AdminClientError(
        'CORAL_ERR_CLIENT_HTTP',
        `${path}: ${res.status} ${text}`,
        res.status,
      );
    return text;
  }

  /**
   * A streamed GET (`/v1/logs`): the response once its head is in, within the client's timeout;
   * its body then runs until the node ends it or `signal` aborts. An error answer throws
   * {@link AdminClientError} with the node's code.
   */
  async stream(path: string, signal?: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/x-ndjson' };
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    const head = new AbortController();
    const timer = setTimeout(() => head.abort(new Error('no answer in time')), this.#timeoutMs);
    let res: Response;
    try {
      res = await fetch(this.url + path, {
        headers,
        signal: signal ? AbortSignal.any([signal, head.signal]) : head.signal,
      });
    } catch (err) {
      throw this.#unreachable(err);
    } finally {
      clearTimeout(timer);
    }
    if (!res.ok) {
      const text = await res.text();
      let err: { code?: string; message?: string } | undefined;
      try {
        err = (JSON.parse(text) as { error?: { code?: string; message?: string } }).error;
      } catch {
        err = undefined;
      }
      throw new AdminClientError(
        'CORAL_ERR_CLIENT_HTTP',
        `GET ${path}: ${res.status} ${err?.code ?? ''} ${err?.message ?? text}`.trim(),
        res.status,
      );
    }
    return res;
  }

  async raw(method: string, path: string, body?: unknown): Promise<Response> {
    const headers: Record<string, string> = {};
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    try {
      return await fetch(this.url + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (err) {
      throw this.#unreachable(err);
    }
  }

  /** The error of a request that never got an answer (refused, reset, timed out). */
  #unreachable(err: unknown): AdminClientError {
    const cause = (err as { cause?: { code?: string } }).cause;
    return new AdminClientError(
      'CORAL_ERR_CLIENT_UNREACHABLE',
      `cannot reach the admin API at ${this.url}: ${cause?.code ?? (err as Error).message}`,
      502,
      { cause: err },
    );
  }
}
