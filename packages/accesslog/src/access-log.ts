/**
 * The access log: one call per request (`log(record)`, at the response's end) formats the record
 * into its destination, subject to sampling, and hands it to the live stream's subscribers.
 *
 * Sampling keeps a fraction `sample` of requests (drawn from the injected `Random`), but a 5xx or
 * an aborted request is always logged: those are the lines someone will look for. The live stream
 * sees every record, sampled out or not and whatever the destination (`off` included): it is for
 * watching a node now, and it is filtered and bounded per reader.
 */
import type { Random } from '@coral/runtime';
import { DEFAULT_SAMPLE } from './constants.js';
import { ACCESSLOG_ERR_OPTIONS, AccessLogError } from './errors.js';
import { ACCESS_LOG_FORMATS, formatJson, formatter } from './format/index.js';
import type { AccessLogFormat } from './format/index.js';
import type { LiveHub } from './live/hub.js';
import { alwaysLogged } from './record.js';
import type { AccessRecord } from './record.js';
import type { AccessSink } from './sink/sink.js';

export interface AccessLogComponents {
  /** Where lines go (`openSink`). */
  sink: AccessSink;
  /** Draws the sampling decisions. */
  random: Random;
  /** The live stream, if the node serves one. */
  hub?: LiveHub;
}

export interface AccessLogOptions {
  /** Line format (default `json`). */
  format?: AccessLogFormat;
  /** Fraction of requests logged, 0..1 (default 1); 5xx and aborted requests always are. */
  sample?: number;
}

export interface AccessLogStats {
  /** Records given to `log`. */
  records: number;
  /** Records not written because sampling left them out. */
  sampledOut: number;
}

/** Check `opts`, throwing `ACCESSLOG_ERR_OPTIONS` for a bad format or sample rate. */
export function checkAccessLogOptions(opts: AccessLogOptions): Required<AccessLogOptions> {
  const format = opts.format ?? 'json';
  if (!ACCESS_LOG_FORMATS.includes(format)) {
    throw new AccessLogError(
      ACCESSLOG_ERR_OPTIONS,
      `access log format must be one of ${ACCESS_LOG_FORMATS.join(', ')}, got ${String(format)}`,
    );
  }
  const sample = opts.sample ?? DEFAULT_SAMPLE;
  if (typeof sample !== 'number' || !(sample >= 0 && sample <= 1)) {
    throw new AccessLogError(
      ACCESSLOG_ERR_OPTIONS,
      `access log sample must be a number from 0 to 1, got ${String(sample)}`,
    );
  }
  return { format, sample };
}

export class AccessLog {
  readonly #sink: AccessSink;
  readonly #random: Random;
  readonly #hub: LiveHub | undefined;
  readonly #format: (r: AccessRecord) => string;
  readonly #json: boolean;
  readonly #sample: number;
  readonly #stats: AccessLogStats = { records: 0, sampledOut: 0 };

  constructor(components: AccessLogComponents, opts: AccessLogOptions = {}) {
    const { format, sample } = checkAccessLogOptions(opts);
    this.#sink = components.sink;
    this.#random = components.random;
    this.#hub = components.hub;
    this.#format = formatter(format);
    this.#json = format === 'json';
    this.#sample = sample;
  }

  /** Log one request. Never throws, never blocks. */
  log(r: AccessRecord): void {
    this.#stats.records++;
    let json: string | undefined;
    if (this.#keep(r)) {
      const line = this.#format(r);
      if (this.#json) json = line;
      this.#sink.write(line);
    } else {
      this.#stats.sampledOut++;
    }
    this.#hub?.publish(r, () => (json ??= formatJson(r)));
  }

  #keep(r: AccessRecord): boolean {
    if (this.#sample >= 1 || alwaysLogged(r)) return true;
    return this.#sample > 0 && this.#random.next() < this.#sample;
  }

  /** Counters of the log and of its destination. */
  get stats(): AccessLogStats & { sink: AccessSink['stats'] } {
    return { ...this.#stats, sink: { ...this.#sink.stats } };
  }

  /** Reopen a file destination by its path (the node's SIGUSR1 handler calls it). */
  reopen(): void {
    this.#sink.reopen();
  }

  /** Resolves once every line so far is written. */
  flush(): Promise<void> {
    return this.#sink.flush();
  }

  /** Flush and close the destination, and end the live stream's subscriptions. */
  async close(): Promise<void> {
    this.#hub?.close();
    await this.#sink.close();
  }
}
