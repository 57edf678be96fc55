/**
 * The admin API's HTTP vocabulary: the plain request and response objects `AdminApi.handle()`
 * works on, a route of its table, a JSON answer and a JSON body. The route modules (*-routes.ts)
 * and the server share them from here, so neither imports the other back.
 */
import type { ServerResponse } from 'node:http';
import type { z } from 'zod';
import { AdminRequestError } from '../errors.js';

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
  /**
   * A streamed answer (`GET /v1/logs`): `listen()`'s listener hands the response to it after
   * writing the head instead of writing `body`; `handle()`'s callers that are not a socket (the
   * in-process tests) get the head alone and must call `cancel`.
   */
  stream?: { start(res: ServerResponse): Promise<unknown>; cancel(): void };
}

/**
 * One entry of the admin API's route table: a method, a path pattern (its groups are the
 * handler's `params`) and the handler. GET routes answer HEAD too (admin/server.ts).
 */
export type AdminRoute = [
  method: string,
  pattern: RegExp,
  handler: (req: AdminRequest, url: URL, params: string[]) => Promise<AdminResponse>,
];

/** A JSON answer; `indent` 0 for the dashboard's data, which a page fetches every 2 s. */
export const json = (status: number, value: unknown, indent = 2): AdminResponse => ({
  status,
  headers: {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  },
  body:
    JSON.stringify(
      value,
      (_k, v: unknown) =>
        v instanceof Uint8Array
          ? Buffer.from(v).toString('hex')
          : typeof v === 'bigint'
            ? v.toString()
            : v,
      indent,
    ) + '\n',
});

/** The first value of a request header. */
export function header(headers: AdminRequest['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The JSON body of a mutating request. `Content-Type: application/json` is required: a page on
 * another site can only send form or text bodies without asking the browser's CORS preflight,
 * which this API never grants.
 */
export function parseBody<T>(schema: z.ZodType<T>, req: AdminRequest): T {
  const type = header(req.headers, 'content-type') ?? '';
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    throw new AdminRequestError(
      'CORAL_ERR_ADMIN_UNSUPPORTED_MEDIA_TYPE',
      `the body must be JSON sent as Content-Type: application/json, got ${JSON.stringify(type || 'none')}`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(req.body || 'null');
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
