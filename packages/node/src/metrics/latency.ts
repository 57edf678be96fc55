/**
 * How long the proxy's responses take, by cache result: the time from a request's head being
 * parsed to its response's head being handed to node:http (time to first byte) and to its last
 * byte being handed to the kernel (the request's duration, nginx's `$request_time`).
 *
 * A request's start is read when node:http announces it on the built-in diagnostics channel
 * `http.server.request.start` (just before the server's handler runs, so the node's own gates and
 * the proxy's rate limit count), its first byte when the proxy's metrics sink reports the
 * response (`ProxyMetrics.request`, called as the head is written, with the response), and its
 * end on `http.server.response.finish`. Per request this keeps the start time and the cache result
 * on the response itself, under two symbols of this module, and nothing else: no listener or
 * closure per response, and no weak map (a fresh key in a WeakMap cost about a microsecond of
 * ephemeron bookkeeping in a micro-benchmark of this path). The histograms are IndexedHistograms
 * (./indexed-histogram.ts): the whole timing costs about 250 ns per response there. A response
 * that never finishes (the client went away) has no duration.
 *
 * The channels are process-wide: responses of other servers (the admin API, a test's origin,
 * other nodes in a test) are told apart by their server's listening address.
 */
import diagnostics from 'node:diagnostics_channel';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Outcome } from './outcome.js';

export type Protocol = 'http' | 'https';
export const PROTOCOLS: readonly Protocol[] = ['http', 'https'];

/** Where a server listens; a wildcard host (0.0.0.0, ::) matches every address on that port. */
export interface ListenAddress {
  host: string;
  port: number;
}

/** What the timer reports (seconds). */
export interface TimingSink {
  firstByte(outcome: Outcome, protocol: Protocol, seconds: number): void;
  done(outcome: Outcome, protocol: Protocol, seconds: number): void;
}

/** A monotonic clock in milliseconds (`performance` by default; tests pass a manual one). */
export interface MonotonicClock {
  now(): number;
}

const REQUEST_START = 'http.server.request.start';
const RESPONSE_FINISH = 'http.server.response.finish';

interface ServerMessage {
  request: IncomingMessage;
  response: ServerResponse;
  server: Server;
}

/**
 * Whether `server` listens at one of `listening` (decided once per server and remembered).
 * Shared by the observers of the proxy's responses (./traffic.ts).
 */
export function listeningMatcher(listening: readonly ListenAddress[]): (s?: Server) => boolean {
  const known = new WeakMap<Server, boolean>();
  return (server) => {
    if (!server) return false;
    let yes = known.get(server);
    if (yes === undefined) {
      const a = server.address();
      yes =
        typeof a === 'object' &&
        a !== null &&
        listening.some(
          ({ host, port }) =>
            a.port === port && (host === '0.0.0.0' || host === '::' || a.address === host),
        );
      known.set(server, yes);
    }
    return yes;
  };
}

/** Where a timed response carries its start time and cache result (this module only). */
const START = Symbol('coral.response.start');
const OUTCOME = Symbol('coral.response.outcome');
type Timed = ServerResponse & { [START]?: number; [OUTCOME]?: Outcome };

function protocolOf(res: ServerResponse): Protocol {
  return (res.req?.socket as TLSSocket | undefined)?.encrypted === true ? 'https' : 'http';
}

export class ResponseTimer {
  readonly #clock: MonotonicClock;
  readonly #sink: TimingSink;
  #isProxy = listeningMatcher([]);
  #subscribed = false;

  constructor(components: { sink: TimingSink; clock?: MonotonicClock }) {
    this.#sink = components.sink;
    this.#clock = components.clock ?? performance;
  }

  /** Time the responses of the servers listening at `listening` (the proxy's http and https). */
  watch(listening: readonly ListenAddress[]): void {
    this.#isProxy = listeningMatcher([...listening]);
    if (this.#subscribed) return;
    this.#subscribed = true;
    diagnostics.subscribe(REQUEST_START, this.#onStart);
    diagnostics.subscribe(RESPONSE_FINISH, this.#onFinish);
  }

  stop(): void {
    if (!this.#subscribed) return;
    this.#subscribed = false;
    diagnostics.unsubscribe(REQUEST_START, this.#onStart);
    diagnostics.unsubscribe(RESPONSE_FINISH, this.#onFinish);
  }

  /** The proxy wrote the head of `res`, a response of this cache result. */
  head(res: ServerResponse, outcome: Outcome): void {
    const r = res as Timed;
    const start = r[START];
    if (start === undefined) return;
    r[OUTCOME] = outcome;
    this.#sink.firstByte(outcome, protocolOf(res), (this.#clock.now() - start) / 1000);
  }

  readonly #onStart = (message: unknown): void => {
    const m = message as ServerMessage;
    if (this.#isProxy(m.server)) (m.response as Timed)[START] = this.#clock.now();
  };

  readonly #onFinish = (message: unknown): void => {
    const res = (message as ServerMessage).response as Timed;
    const start = res[START];
    if (start === undefined || !this.#isProxy((message as ServerMessage).server)) return;
    // A response the proxy did not report was answered before it (a node gate's refusal).
    const outcome = res[OUTCOME] ?? 'error';
    this.#sink.done(outcome, protocolOf(res), (this.#clock.now() - start) / 1000);
  };
}
