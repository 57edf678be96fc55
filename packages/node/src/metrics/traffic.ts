/**
 * What the proxy's clients get, seen from outside the proxy: the node subscribes to Node's
 * built-in HTTP diagnostics channel `http.server.response.finish` (the hook APM agents use) and,
 * for the responses of the proxy's own server only, records the bytes written to the connection
 * for each response and the origin URL asked for. This feeds
 * `coral_http_response_bytes_total` (the denominator of the origin offload) and the hottest-URL
 * sketch, without the proxy knowing: @coral/httpprx's metrics sink reports outcomes, not URLs.
 *
 * The channels are process-wide, so responses of other servers of the process (the admin API, a
 * test's origin, other nodes in a test) are told apart by the server's listening address.
 */
import diagnostics from 'node:diagnostics_channel';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { PEER_HEADER, originUrl, parseCoralHost } from '@coral/httpprx';
import { listeningMatcher, type ListenAddress } from './latency.js';
import type { TrafficMetricsSink } from './metrics.js';

/**
 * Request targets whose origin URL is remembered (cleared when full; only short ones, so the memo
 * stays under a few MB whatever strangers send): hot URLs repeat.
 */
const URL_MEMO_SIZE = 4096;
const URL_MEMO_KEY_MAX = 512;
const RESPONSE_FINISH = 'http.server.response.finish';

interface ServerMessage {
  request: IncomingMessage;
  response: ServerResponse;
  socket: Socket;
  server: Server;
}

export interface ProxyTrafficOptions {
  /** Where the proxy listens (a wildcard host matches every address on that port). */
  listening: ListenAddress;
  /** Zones whose names are Coralized (`www.example.com.nyud.net`). */
  zones: readonly string[];
  /** Site (accelerator) mode: host name → origin URL, as in the proxy's configuration. */
  sites?: Readonly<Record<string, string>>;
}

/**
 * The origin URL a proxy request stands for (`http://www.example.com:8080/a.jpg`), or undefined
 * when its Host names no zone or site (the proxy refuses those). Pure.
 */
export function requestOriginUrl(
  host: string | undefined,
  target: string | undefined,
  zones: readonly string[],
  sites: Readonly<Record<string, string>> = {},
): string | undefined {
  try {
    let path = target ?? '/';
    if (/^https?:\/\//i.test(path)) {
      // absolute-form (RFC 9112 §3.2.2): its authority is the one that counts
      const u = new URL(path);
      host = u.host;
      path = u.pathname + u.search;
    }
    if (host === undefined || !path.startsWith('/')) return undefined;
    const name = host
      .trim()
      .toLowerCase()
      .replace(/:[0-9]*$/, '')
      .replace(/\.$/, '');
    const site = Object.hasOwn(sites, name) ? sites[name] : undefined;
    if (site !== undefined) return new URL(path, site).href;
    const coral = parseCoralHost(host, zones);
    return coral ? originUrl(coral, path) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The first value of field `name` (lower case) in a request's raw field lines, as `req.headers`
 * gives it for Host and for presence. Read from `rawHeaders` because `req.headers` is built by
 * Node on first use, and the proxy's fast path answers a hit without ever building it: the
 * observer, which sees every response, must not add that cost to each one.
 */
export function rawField(raw: readonly string[], name: string): string | undefined {
  for (let i = 0; i < raw.length; i += 2) {
    const k = raw[i]!;
    if (k.length === name.length && k.toLowerCase() === name) return raw[i + 1];
  }
  return undefined;
}

export class ProxyTrafficObserver {
  readonly #sink: TrafficMetricsSink;
  readonly #options: ProxyTrafficOptions;
  readonly #sites: Readonly<Record<string, string>>;
  /** Whether a server is the proxy's, decided once per server. */
  readonly #isProxy: (server?: Server) => boolean;
  /**
   * Each connection's byte count when its last response finished. Responses on a connection are
   * written in order (pipelined ones too), so a response's bytes are the count now minus this.
   */
  readonly #sentBefore = new WeakMap<Socket, number>();
  /** Host + target → origin URL ('' for none): parsing a name costs more than the rest. */
  readonly #urls = new Map<string, string>();
  #subscribed = false;

  constructor(components: { sink: TrafficMetricsSink }, options: ProxyTrafficOptions) {
    this.#sink = components.sink;
    this.#options = options;
    this.#isProxy = listeningMatcher([options.listening]);
    this.#sites = Object.fromEntries(
      Object.entries(options.sites ?? {}).map(([h, u]) => [h.toLowerCase(), u]),
    );
  }

  start(): void {
    if (this.#subscribed) return;
    this.#subscribed = true;
    diagnostics.subscribe(RESPONSE_FINISH, this.#onFinish);
  }

  stop(): void {
    if (!this.#subscribed) return;
    this.#subscribed = false;
    diagnostics.unsubscribe(RESPONSE_FINISH, this.#onFinish);
  }

  readonly #onFinish = (message: unknown): void => {
    const m = message as ServerMessage;
    if (!this.#isProxy(m.server) || !m.socket) return;
    const sent = m.socket.bytesWritten ?? 0;
    const bytes = sent - (this.#sentBefore.get(m.socket) ?? 0);
    this.#sentBefore.set(m.socket, sent);
    const req = m.request;
    const raw = req.rawHeaders;
    const peer = rawField(raw, PEER_HEADER) !== undefined;
    this.#sink.response(Math.max(0, bytes), peer, this.#originUrl(rawField(raw, 'host'), req.url));
  };

  #originUrl(host: string | undefined, target: string | undefined): string | undefined {
    const key = `${host ?? ''}\n${target ?? ''}`;
    let url = this.#urls.get(key);
    if (url === undefined) {
      url = requestOriginUrl(host, target, this.#options.zones, this.#sites) ?? '';
      if (key.length <= URL_MEMO_KEY_MAX) {
        if (this.#urls.size >= URL_MEMO_SIZE) this.#urls.clear();
        this.#urls.set(key, url);
      }
    }
    return url === '' ? undefined : url;
  }
}
