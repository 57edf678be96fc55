/**
 * Measuring the RTT from this node to a resolver: a TCP connect to its port 53. A completed
 * handshake and a refusal (RST) both took one round trip, so both give an RTT; a timeout or an
 * unreachable network means "unreachable" (null).
 */
import net from 'node:net';
import { type Clock, systemClock } from '@coral/runtime';

export interface Prober {
  /** RTT in ms to `ip`, or null when unreachable. Must not reject; honours `signal`. */
  probe(ip: string, opts?: { signal?: AbortSignal }): Promise<number | null>;
}

export const DEFAULT_PROBE_PORT = 53;
export const DEFAULT_PROBE_TIMEOUT_MS = 1_000;

export interface TcpConnectProberOptions {
  /** Port to connect to (default 53). */
  port?: number;
  /** Give up after this long → unreachable (default 1000 ms). */
  timeoutMs?: number;
}

export interface TcpConnectProberComponents {
  clock?: Clock;
  /** Opens the socket (default `net.connect`); tests inject one. */
  connect?: (port: number, host: string) => net.Socket;
  /** High-resolution time in ms (default `performance.now`). */
  now?: () => number;
}

export class TcpConnectProber implements Prober {
  readonly #clock: Clock;
  readonly #connect: (port: number, host: string) => net.Socket;
  readonly #now: () => number;
  readonly #port: number;
  readonly #timeoutMs: number;

  constructor(components: TcpConnectProberComponents = {}, options: TcpConnectProberOptions = {}) {
    this.#clock = components.clock ?? systemClock;
    this.#connect = components.connect ?? ((port, host) => net.connect({ port, host }));
    this.#now = components.now ?? (() => performance.now());
    this.#port = options.port ?? DEFAULT_PROBE_PORT;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
  }

  probe(ip: string, opts: { signal?: AbortSignal } = {}): Promise<number | null> {
    return new Promise((resolve) => {
      if (opts.signal?.aborted) return resolve(null);
      const start = this.#now();
      let socket: net.Socket;
      try {
        socket = this.#connect(this.#port, ip);
      } catch {
        return resolve(null);
      }
      let done = false;
      const finish = (rtt: number | null) => {
        if (done) return;
        done = true;
        timer.cancel();
        opts.signal?.removeEventListener('abort', onAbort);
        socket.removeAllListeners();
        socket.on('error', () => {});
        socket.destroy();
        resolve(rtt);
      };
      const onAbort = () => finish(null);
      const timer = this.#clock.setTimeout(() => finish(null), this.#timeoutMs);
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      socket.once('connect', () => finish(this.#now() - start));
      socket.once('error', (err: NodeJS.ErrnoException) => {
        finish(err.code === 'ECONNREFUSED' ? this.#now() - start : null);
      });
    });
  }
}
