/**
 * @coral/accesslog — the node's access log and its live stream: one record per request, written
 * as a JSON line (default, marked `"log":"access"` beside the node's pino lines) or in Apache's
 * combined format, to stdout, a file (reopened on SIGUSR1 for logrotate) or nowhere, without ever
 * blocking the event loop or growing a buffer without bound; sampled, with 5xx and aborted
 * requests always kept; and a hub whose filtered, bounded subscribers feed `GET /v1/logs`.
 *
 * ```ts
 * import { AccessLog, LiveHub, openSink, cacheFacts } from '@coral/accesslog';
 * import { systemRandom } from '@coral/runtime';
 * const hub = new LiveHub();
 * const log = new AccessLog(
 *   { sink: await openSink({ file: '/var/log/coral/access.log' }), random: systemRandom, hub },
 *   { format: 'combined', sample: 0.1 },
 * );
 * log.log(record); // at each response's end; record.cache = cacheFacts(res.getHeader(...), 'Coral')
 * process.on('SIGUSR1', () => log.reopen());
 * await log.close(); // at shutdown: every accepted line written
 * ```
 */
export {
  type AccessRecord,
  type CacheFacts,
  type CacheResult,
  type ServedBy,
  type ServedFrom,
  CACHE_RESULTS,
  alwaysLogged,
} from './record.js';
export { cacheFacts } from './cache-status.js';
export {
  type AccessLogFormat,
  ACCESS_LOG_FORMATS,
  ACCESS_LOG_MARK,
  formatter,
  formatJson,
  parseJsonLine,
  isoTime,
  formatCombined,
  escapeDefault,
  clfTime,
} from './format/index.js';
export {
  type AccessSink,
  type AccessLogDestination,
  type SinkOptions,
  type SinkStats,
  openSink,
} from './sink/sink.js';
export {
  type AccessLogComponents,
  type AccessLogOptions,
  type AccessLogStats,
  AccessLog,
  checkAccessLogOptions,
} from './access-log.js';
export { type LogFilter, type FilterQuery, parseFilter, matches } from './live/filter.js';
export {
  type LiveHubOptions,
  type LiveHubStats,
  type EndReason,
  LiveHub,
  Subscription,
} from './live/hub.js';
export { LOG_STREAM_HEADERS, streamLogs } from './live/http.js';
export {
  type AccessNote,
  type ExchangeTrackerComponents,
  type ExchangeTrackerOptions,
  type MonotonicClock,
  ExchangeTracker,
  noteOf,
} from './http/exchange.js';
export {
  AccessLogError,
  ACCESSLOG_ERR_OPTIONS,
  ACCESSLOG_ERR_OPEN,
  ACCESSLOG_ERR_FILTER,
  ACCESSLOG_ERR_SUBSCRIBERS,
  ACCESSLOG_ERROR_CODES,
} from './errors.js';
export {
  DEFAULT_BUFFER_BYTES,
  DEFAULT_MAX_SUBSCRIBERS,
  DEFAULT_SUBSCRIBER_QUEUE_BYTES,
  DEFAULT_SAMPLE,
} from './constants.js';
