/**
 * The live log stream: subscribers (`GET /v1/logs` readers) each get the JSON access lines that
 * pass their filter, as they happen. Every subscriber has a bounded queue (`queueBytes`): the
 * reader takes batches of lines at its own pace (`next()`), and one that falls so far behind that
 * its queue would pass the bound is dropped (its stream ends with `ended === 'slow'`, counted),
 * never buffered without bound. With no subscriber a record costs one comparison.
 *
 * ```ts
 * const hub = new LiveHub({}, { maxSubscribers: 4 });
 * const sub = hub.subscribe(parseFilter({ status: '5xx' }));
 * for (let lines; (lines = await sub.next()); ) res.write(lines.join(''));
 * ```
 */
import { DEFAULT_MAX_SUBSCRIBERS, DEFAULT_SUBSCRIBER_QUEUE_BYTES } from '../constants.js';
import { ACCESSLOG_ERR_OPTIONS, ACCESSLOG_ERR_SUBSCRIBERS, AccessLogError } from '../errors.js';
import type { AccessRecord } from '../record.js';
import { matches } from './filter.js';
import type { LogFilter } from './filter.js';

export interface LiveHubOptions {
  /** Subscribers at once (default `DEFAULT_MAX_SUBSCRIBERS`); one more is refused. */
  maxSubscribers?: number;
  /** Bytes queued per subscriber before it is dropped (default `DEFAULT_SUBSCRIBER_QUEUE_BYTES`). */
  queueBytes?: number;
}

/** Why a subscription ended: its reader closed it, it fell behind, or the hub closed. */
export type EndReason = 'closed' | 'slow' | 'hub-closed';

export interface LiveHubStats {
  /** Subscribers now. */
  subscribers: number;
  /** Lines handed to subscribers' queues. */
  delivered: number;
  /** Subscribers dropped because their queue was full. */
  droppedSlow: number;
  /** Subscriptions refused: too many at once, or the hub closed. */
  refused: number;
}

export class Subscription {
  readonly filter: LogFilter;
  readonly #limit: number;
  readonly #onEnd: (s: Subscription) => void;
  #queue: string[] = [];
  #bytes = 0;
  #ended: EndReason | undefined;
  #wake: ((lines: string[] | undefined) => void) | undefined;
  #endWaiters: Array<(reason: EndReason) => void> = [];

  /** @internal Made by `LiveHub.subscribe`. */
  constructor(filter: LogFilter, limit: number, onEnd: (s: Subscription) => void) {
    this.filter = filter;
    this.#limit = limit;
    this.#onEnd = onEnd;
  }

  /** Why it ended, once it has. */
  get ended(): EndReason | undefined {
    return this.#ended;
  }

  /** Resolves with the reason once the subscription has ended. */
  whenEnded(): Promise<EndReason> {
    if (this.#ended) return Promise.resolve(this.#ended);
    return new Promise((resolve) => this.#endWaiters.push(resolve));
  }

  /** Bytes queued and not yet taken. */
  get queuedBytes(): number {
    return this.#bytes;
  }

  /** @internal Queue `line`; false when the queue is full (the hub then ends it as slow). */
  offer(line: string): boolean {
    if (this.#ended) return true;
    if (this.#wake) {
      const wake = this.#wake;
      this.#wake = undefined;
      wake([line]);
      return true;
    }
    if (this.#bytes + line.length > this.#limit) return false;
    this.#queue.push(line);
    this.#bytes += line.length;
    return true;
  }

  /**
   * The lines queued since the last call (waiting for at least one), or undefined once the
   * subscription has ended. Lines queued before an end are dropped with it: a slow reader has
   * already lost lines, and a closed one asked for no more.
   */
  next(): Promise<string[] | undefined> {
    if (this.#ended) return Promise.resolve(undefined);
    if (this.#queue.length) {
      const lines = this.#queue;
      this.#queue = [];
      this.#bytes = 0;
      return Promise.resolve(lines);
    }
    return new Promise((resolve) => {
      this.#wake = resolve;
    });
  }

  /** End it (the reader went away). */
  close(): void {
    this.end('closed');
  }

  /** @internal */
  end(reason: EndReason): void {
    if (this.#ended) return;
    this.#ended = reason;
    this.#queue = [];
    this.#bytes = 0;
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.(undefined);
    this.#onEnd(this);
    for (const w of this.#endWaiters.splice(0)) w(reason);
  }
}

function positiveInt(name: string, v: number): number {
  if (!Number.isSafeInteger(v) || v < 1) {
    throw new AccessLogError(
      ACCESSLOG_ERR_OPTIONS,
      `live log ${name} must be a positive integer, got ${String(v)}`,
    );
  }
  return v;
}

export class LiveHub {
  readonly #max: number;
  readonly #queueBytes: number;
  readonly #subs = new Set<Subscription>();
  readonly #stats = { delivered: 0, droppedSlow: 0, refused: 0 };
  #closed = false;
  /** Optional listener of a subscriber dropped as slow (the node logs it). */
  onSlow: ((s: Subscription) => void) | undefined;

  // The components argument is kept for the package's `new Thing(components, options)` shape.
  constructor(_components: Record<string, never> = {}, opts: LiveHubOptions = {}) {
    this.#max = positiveInt('maxSubscribers', opts.maxSubscribers ?? DEFAULT_MAX_SUBSCRIBERS);
    this.#queueBytes = positiveInt('queueBytes', opts.queueBytes ?? DEFAULT_SUBSCRIBER_QUEUE_BYTES);
  }

  /** Are there subscribers (is a record worth formatting for the stream)? */
  get active(): boolean {
    return this.#subs.size > 0;
  }

  get stats(): LiveHubStats {
    return { subscribers: this.#subs.size, ...this.#stats };
  }

  /**
   * A new subscriber; throws `ACCESSLOG_ERR_SUBSCRIBERS` when there are `maxSubscribers`, or
   * once the hub is closed.
   */
  subscribe(filter: LogFilter = {}): Subscription {
    if (this.#closed) {
      this.#stats.refused++;
      throw new AccessLogError(
        ACCESSLOG_ERR_SUBSCRIBERS,
        'the live log stream is closed (the node is stopping)',
      );
    }
    if (this.#subs.size >= this.#max) {
      this.#stats.refused++;
      throw new AccessLogError(
        ACCESSLOG_ERR_SUBSCRIBERS,
        `the live log stream has ${this.#max} subscribers already`,
      );
    }
    const s = new Subscription(filter, this.#queueBytes, (x) => this.#subs.delete(x));
    this.#subs.add(s);
    return s;
  }

  /**
   * Hand `r` to every subscriber whose filter it passes; `line` is its JSON line, made once by
   * the caller for all of them (`line()` is called only when some subscriber wants it).
   */
  publish(r: AccessRecord, line: () => string): void {
    if (this.#subs.size === 0) return;
    let text: string | undefined;
    for (const s of this.#subs) {
      if (!matches(s.filter, r)) continue;
      text ??= line();
      if (s.offer(text)) {
        this.#stats.delivered++;
      } else {
        this.#stats.droppedSlow++;
        s.end('slow');
        this.onSlow?.(s);
      }
    }
  }

  /** End every subscription and take no more (the node is stopping). */
  close(): void {
    this.#closed = true;
    for (const s of [...this.#subs]) s.end('hub-closed');
  }
}
