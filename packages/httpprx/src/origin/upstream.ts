/**
 * HTTP/1.1 client for origins and peers: one undici Agent, a keep-alive Pool per origin. The URL's
 * scheme picks http or https (TLS origins come with issue 11: the connector decides how).
 */
import type { Dispatcher } from 'undici';
import { Agent, request } from './undici-agent.js';
import type { Readable } from 'node:stream';
import type { UndiciConnect } from './connector.js';

export interface UpstreamRequest {
  /** Absolute http URL. */
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: Readable;
  signal?: AbortSignal;
  /** Called for each 1xx interim response before the final one (103 Early Hints...). */
  onInfo?: (status: number, headers: Record<string, string | string[]>) => void;
}

export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Readable;
}

export interface UpstreamOptions {
  /** Time to receive response headers (ms). */
  headersTimeoutMs: number;
  /** Idle time allowed between body chunks (ms). */
  bodyTimeoutMs: number;
  /** Connections per origin. */
  connections?: number;
}

export class Upstream {
  readonly #agent: Agent;

  constructor(components: { connect?: UndiciConnect }, options: UpstreamOptions) {
    this.#agent = new Agent({
      ...(components.connect ? { connect: components.connect } : {}),
      headersTimeout: options.headersTimeoutMs,
      bodyTimeout: options.bodyTimeoutMs,
      connections: options.connections ?? 32,
      keepAliveTimeout: 4_000,
      // HTTP/1.1 only. undici 8 defaults to allowH2: true, and then an https Pool lets a single
      // connection probe ALPN and queues every other request behind it until the handshake ends;
      // our connectors offer only http/1.1, so that probe would serialise cold bursts for nothing.
      allowH2: false,
    });
  }

  async request(r: UpstreamRequest): Promise<UpstreamResponse> {
    const u = new URL(r.url);
    const opts: Dispatcher.RequestOptions = {
      origin: u.origin,
      path: u.pathname + u.search,
      method: r.method,
      headers: r.headers,
      ...(r.signal ? { signal: r.signal } : {}),
      ...(r.body ? { body: r.body } : {}),
      ...(r.onInfo
        ? {
            onInfo: (info: { statusCode: number; headers: Record<string, string | string[]> }) =>
              r.onInfo!(info.statusCode, info.headers),
          }
        : {}),
    };
    const res = await request(this.#agent, opts);
    return {
      status: res.statusCode,
      headers: res.headers,
      body: res.body,
    };
  }

  async close(): Promise<void> {
    await this.#agent.close().catch(() => {});
  }

  async destroy(): Promise<void> {
    await this.#agent.destroy().catch(() => {});
  }
}
