/**
 * A sample origin web server for demos, the docker-compose fleet, the end-to-end tests and the
 * benchmarks. It serves a small generated site whose bytes are a pure function of the path, counts
 * every request it answers, and can sit behind an emulated bottleneck link (added latency and a
 * bandwidth shared by all connections, like an inter-ISP link), so a benchmark can compare direct
 * downloads with downloads through the fleet.
 *
 * Paths: `/` an HTML page linking every object; `/obj/<i>` object i (cacheable for an hour);
 * `/counts` the request counters as JSON, with each request's `Via` by path (not counted, not
 * cacheable).
 */
import { once } from 'node:events';
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SampleOriginOptions {
  host?: string;
  port?: number;
  /** Number of objects of the site (default {@link DEFAULT_ORIGIN_OBJECTS}). */
  objects?: number;
  /** Size of each object in bytes (default {@link DEFAULT_ORIGIN_OBJECT_BYTES}); a function for varied sizes. */
  objectBytes?: number | ((index: number) => number);
  /** Emulated bottleneck: latency added before each response, and the shared link's bytes per second. */
  bottleneck?: { latencyMs: number; bytesPerSecond: number };
  /** `Cache-Control` of objects (default `public, max-age=3600`). */
  cacheControl?: string;
}

export const DEFAULT_ORIGIN_OBJECTS = 12;
export const DEFAULT_ORIGIN_OBJECT_BYTES = 32 * 1024;
const CHUNK = 16 * 1024;

/** Object i's bytes: SHA-256 in counter mode over the index, so anyone can recompute them. */
export function objectBody(index: number, size: number): Buffer {
  const out = Buffer.alloc(size);
  for (let off = 0, block = 0; off < size; off += 32, block++) {
    createHash('sha256').update(`coral-object:${index}:${block}`).digest().copy(out, off);
  }
  return out;
}

export class SampleOrigin {
  readonly #server: Server;
  readonly #options: Required<Omit<SampleOriginOptions, 'bottleneck'>> &
    Pick<SampleOriginOptions, 'bottleneck'>;
  readonly #bodies = new Map<number, Buffer>();
  /** Requests answered, by path. */
  readonly counts = new Map<string, number>();
  /** Who asked, by path: each request's `Via` field (a Coral node names itself there). */
  readonly via = new Map<string, string[]>();
  /** When the emulated link is next free (ms, performance.now() time). */
  #linkFreeAt = 0;
  address = { host: '', port: 0 };

  constructor(options: SampleOriginOptions = {}) {
    this.#options = {
      host: options.host ?? '127.0.0.1',
      port: options.port ?? 0,
      objects: options.objects ?? DEFAULT_ORIGIN_OBJECTS,
      objectBytes: options.objectBytes ?? DEFAULT_ORIGIN_OBJECT_BYTES,
      bottleneck: options.bottleneck,
      cacheControl: options.cacheControl ?? 'public, max-age=3600',
    };
    this.#server = createServer((req, res) => void this.#handle(req, res));
  }

  /** Total requests answered (excluding `/counts`). */
  get total(): number {
    let n = 0;
    for (const c of this.counts.values()) n += c;
    return n;
  }

  get objects(): number {
    return this.#options.objects;
  }

  sizeOf(index: number): number {
    const b = this.#options.objectBytes;
    return typeof b === 'function' ? b(index) : b;
  }

  body(index: number): Buffer {
    let body = this.#bodies.get(index);
    if (!body) {
      body = objectBody(index, this.sizeOf(index));
      this.#bodies.set(index, body);
    }
    return body;
  }

  async listen(): Promise<{ host: string; port: number }> {
    const listening = once(this.#server, 'listening'); // rejects with the listen error
    this.#server.listen(this.#options.port, this.#options.host);
    await listening;
    const a = this.#server.address() as AddressInfo;
    this.address = { host: a.address, port: a.port };
    return this.address;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!;
    if (path === '/counts') {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(
        JSON.stringify({
          total: this.total,
          byPath: Object.fromEntries(this.counts),
          via: Object.fromEntries(this.via),
        }),
      );
      return;
    }
    this.counts.set(path, (this.counts.get(path) ?? 0) + 1);
    const via = this.via.get(path) ?? [];
    via.push(String(req.headers.via ?? ''));
    this.via.set(path, via);
    let body: Buffer;
    let type: string;
    const m = /^\/obj\/(\d+)$/.exec(path);
    if (path === '/') {
      const links = Array.from(
        { length: this.#options.objects },
        (_, i) => `<li><a href="/obj/${i}">object ${i}</a> (${this.sizeOf(i)} bytes)</li>`,
      ).join('\n');
      body = Buffer.from(
        `<!doctype html><title>Coral sample origin</title><h1>Coral sample origin</h1><ul>\n${links}\n</ul>\n`,
      );
      type = 'text/html; charset=utf-8';
    } else if (m && Number(m[1]) < this.#options.objects) {
      body = this.body(Number(m[1]));
      type = 'application/octet-stream';
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found\n');
      return;
    }
    const bn = this.#options.bottleneck;
    if (bn) await sleep(bn.latencyMs);
    res.writeHead(200, {
      'content-type': type,
      'content-length': body.length,
      'cache-control': this.#options.cacheControl,
      'last-modified': new Date(0).toUTCString(),
      etag: `"${createHash('sha1').update(body).digest('hex').slice(0, 16)}"`,
    });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    if (!bn) {
      res.end(body);
      return;
    }
    // The link is shared: each chunk reserves its transmission time after everyone else's.
    for (let off = 0; off < body.length; off += CHUNK) {
      const chunk = body.subarray(off, off + CHUNK);
      const start = Math.max(performance.now(), this.#linkFreeAt);
      this.#linkFreeAt = start + (chunk.length / bn.bytesPerSecond) * 1000;
      await sleep(this.#linkFreeAt - performance.now());
      if (res.destroyed) return;
      res.write(chunk);
    }
    res.end();
  }
}

function sleep(ms: number): Promise<void> {
  return ms > 0 ? new Promise((r) => setTimeout(r, ms)) : Promise.resolve();
}
