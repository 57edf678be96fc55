/**
 * The access log's and the live log stream's counters as Prometheus metrics, on the node's
 * registry, read from their `stats` at each scrape (never updated per request):
 *
 *   coral_access_log_lines_total            lines accepted for the destination
 *   coral_access_log_lines_dropped_total    lines dropped: the destination was that far behind
 *   coral_access_log_sampled_out_total      requests sampling left out
 *   coral_access_log_write_errors_total     write, open and reopen errors
 *   coral_access_log_pending_bytes          accepted, not yet written
 *   coral_log_stream_readers                /v1/logs readers now
 *   coral_log_stream_dropped_total          readers disconnected for falling behind
 *   coral_log_stream_refused_total          readers refused (too many, or stopping)
 */
import type { AccessLog, LiveHub } from '@coral/accesslog';
import { Counter, Gauge, type Registry } from 'prom-client';
import { DEFAULT_METRICS_PREFIX } from './metrics.js';

type Source = () => { log: AccessLog | undefined; hub: LiveHub | undefined };

/** Registries already holding these metrics: a second registration rebinds their source. */
const bound = new WeakMap<Registry, { source: Source }>();

export function registerAccessLogMetrics(
  registry: Registry,
  source: Source,
  prefix = DEFAULT_METRICS_PREFIX,
): void {
  const known = bound.get(registry);
  if (known) {
    known.source = source;
    return;
  }
  const state = { source };
  bound.set(registry, state);
  const registers = [registry];
  type Read = (s: ReturnType<Source>) => number | undefined;
  const counter = (name: string, help: string, read: Read) =>
    new Counter({
      name: `${prefix}${name}`,
      help,
      registers,
      collect() {
        this.reset();
        this.inc(read(state.source()) ?? 0);
      },
    });
  const gauge = (name: string, help: string, read: Read) =>
    new Gauge({
      name: `${prefix}${name}`,
      help,
      registers,
      collect() {
        this.set(read(state.source()) ?? 0);
      },
    });
  counter(
    'access_log_lines_total',
    'Access lines accepted for the destination',
    (s) => s.log?.stats.sink.lines,
  );
  counter(
    'access_log_lines_dropped_total',
    'Access lines dropped because the destination was that far behind (its buffer full)',
    (s) => s.log?.stats.sink.dropped,
  );
  counter(
    'access_log_sampled_out_total',
    'Requests the access log left out by sampling (log.access.sample)',
    (s) => s.log?.stats.sampledOut,
  );
  counter(
    'access_log_write_errors_total',
    'Access log write, open and reopen errors',
    (s) => s.log?.stats.sink.errors,
  );
  gauge(
    'access_log_pending_bytes',
    'Access log bytes accepted and not yet written',
    (s) => s.log?.stats.sink.pendingBytes,
  );
  gauge(
    'log_stream_readers',
    'Readers of the live log stream (GET /v1/logs) now',
    (s) => s.hub?.stats.subscribers,
  );
  counter(
    'log_stream_dropped_total',
    'Live log stream readers disconnected because they fell behind',
    (s) => s.hub?.stats.droppedSlow,
  );
  counter(
    'log_stream_refused_total',
    'Live log stream readers refused: as many as allowed already, or the node stopping',
    (s) => s.hub?.stats.refused,
  );
}
