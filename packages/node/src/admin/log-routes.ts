/**
 * The admin API's live log stream (docs/admin-api.md, "Logs"):
 *
 *   GET /v1/logs?host=&status=&cache=&client=    the access lines as they happen, NDJSON
 *
 * authenticated like the rest of the API (server.ts decides who may call it). Filters are
 * @coral/accesslog's (`parseFilter`): a bad one is a 400 naming it; a reader over the hub's
 * limit, or one arriving while the node stops, a 503. A reader that falls behind is
 * disconnected by the stream itself (`streamLogs`), never buffered without bound.
 */
import {
  ACCESSLOG_ERR_FILTER,
  ACCESSLOG_ERR_SUBSCRIBERS,
  AccessLogError,
  LOG_STREAM_HEADERS,
  parseFilter,
  streamLogs,
  type LiveHub,
  type LogFilter,
} from '@coral/accesslog';
import { AdminRequestError } from '../errors.js';
import type { AdminRequest, AdminResponse } from './http.js';

type Route = [
  method: string,
  pattern: RegExp,
  handler: (req: AdminRequest, url: URL, params: string[]) => Promise<AdminResponse>,
];

/** The filter of a `/v1/logs` query; a bad one is `CORAL_ERR_ADMIN_BAD_REQUEST`. */
export function logFilter(url: URL): LogFilter {
  const q = url.searchParams;
  for (const k of q.keys()) {
    if (!['host', 'status', 'cache', 'client'].includes(k)) {
      throw new AdminRequestError(
        'CORAL_ERR_ADMIN_BAD_REQUEST',
        `unknown parameter "${k}" (host, status, cache, client)`,
      );
    }
  }
  try {
    return parseFilter({
      host: q.getAll('host').join(',') || undefined,
      status: q.getAll('status').join(',') || undefined,
      cache: q.getAll('cache').join(',') || undefined,
      client: q.getAll('client').join(',') || undefined,
    });
  } catch (err) {
    if (err instanceof AccessLogError && err.code === ACCESSLOG_ERR_FILTER) {
      throw new AdminRequestError('CORAL_ERR_ADMIN_BAD_REQUEST', err.message);
    }
    throw err;
  }
}

export function logRoutes(hub: LiveHub): Route[] {
  return [
    [
      'GET',
      /^\/v1\/logs$/,
      async (req, url) => {
        const filter = logFilter(url);
        const head = { status: 200, headers: { ...LOG_STREAM_HEADERS }, body: '' };
        if (req.method === 'HEAD') return head;
        let sub;
        try {
          sub = hub.subscribe(filter);
        } catch (err) {
          if (err instanceof AccessLogError && err.code === ACCESSLOG_ERR_SUBSCRIBERS) {
            throw new AdminRequestError('CORAL_ERR_ADMIN_UNAVAILABLE', err.message);
          }
          throw err;
        }
        return {
          ...head,
          stream: { start: (res) => streamLogs(sub, res), cancel: () => sub.close() },
        };
      },
    ],
  ];
}
