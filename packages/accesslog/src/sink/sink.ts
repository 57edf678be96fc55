/**
 * Where access lines go: stdout (the default, as containers expect), a file, or nowhere.
 *
 * Lines are written with sonic-boom (pino's own destination, a maintained library that already
 * handles partial writes, EAGAIN on non-blocking pipes and reopening a file in place) in its
 * asynchronous mode: `write` appends to an in-memory buffer and returns, the bytes reach the file
 * descriptor from libuv's thread pool, so a slow disk or a full pipe never stalls the event loop.
 * The buffer is bounded (`bufferBytes`): a line that does not fit is dropped and counted, never
 * queued without bound. `flush()` resolves once every accepted line has been written, `close()`
 * once they are written and the file closed: the node calls it at shutdown, so no line is lost at
 * SIGTERM. A write error (disk full, a closed pipe) is counted and passed to `onError`; the lines
 * it held are retried with the next write.
 */
import { createRequire } from 'node:module';
import type { SonicBoom as Boom } from 'sonic-boom';
import { DEFAULT_BUFFER_BYTES } from '../constants.js';
import { ACCESSLOG_ERR_OPEN, ACCESSLOG_ERR_OPTIONS, AccessLogError } from '../errors.js';

// sonic-boom is CommonJS (`module.exports = SonicBoom`), while its declarations give an ES default
// and a named class that Node's ESM loader does not provide: it is required, typed by them.
const SonicBoom = createRequire(import.meta.url)('sonic-boom') as typeof Boom;

/** What a destination has done since it was opened. */
export interface SinkStats {
  /** Lines accepted into the buffer. */
  lines: number;
  /** Lines dropped because the buffer was full. */
  dropped: number;
  /** Bytes accepted and not yet written. */
  pendingBytes: number;
  /** Write, open or reopen errors. */
  errors: number;
  /** Times the file was reopened. */
  reopens: number;
}

export interface AccessSink {
  /** Append one line (newline included). Never blocks, never throws: a full buffer drops it. */
  write(line: string): void;
  /** Reopen the file by its path (after logrotate moved it). A no-op for stdout and off. */
  reopen(): void;
  /** Resolves when every line accepted so far is written (or a write error stopped it). */
  flush(): Promise<void>;
  /** Flush, then close a file (stdout stays open). Later writes are dropped and counted. */
  close(): Promise<void>;
  readonly stats: SinkStats;
}

/** `stdout`, `off`, or a file path. */
export type AccessLogDestination = 'stdout' | 'off' | { file: string };

export interface SinkOptions {
  /** Bytes the buffer may hold before lines are dropped (default `DEFAULT_BUFFER_BYTES`). */
  bufferBytes?: number;
  /** Told of every write, open or reopen error (the node logs it). */
  onError?: (err: Error) => void;
  /** The descriptor `stdout` writes to (default 1; tests pass a pipe's). */
  stdoutFd?: number;
}

class OffSink implements AccessSink {
  readonly stats: SinkStats = { lines: 0, dropped: 0, pendingBytes: 0, errors: 0, reopens: 0 };
  write(): void {}
  reopen(): void {}
  flush(): Promise<void> {
    return Promise.resolve();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

class BoomSink implements AccessSink {
  readonly stats: SinkStats = { lines: 0, dropped: 0, pendingBytes: 0, errors: 0, reopens: 0 };
  readonly #boom: Boom;
  /** The descriptor is closed (after `close`, or a failed end). */
  #gone = false;
  readonly #file: boolean;
  readonly #onError: ((err: Error) => void) | undefined;
  #dropping = false;
  /** Settled once the last `reopen()` has its new descriptor. */
  #reopened: Promise<void> = Promise.resolve();
  #closed: Promise<void> | undefined;
  /** Resolvers of `flush()` calls waiting for `pendingBytes` to reach 0. */
  #waiters: Array<() => void> = [];

  constructor(boom: Boom, file: boolean, onError: ((err: Error) => void) | undefined) {
    this.#boom = boom;
    this.#file = file;
    this.#onError = onError;
    boom.on('drop', () => {
      this.#dropping = true;
    });
    boom.on('write', (n: number) => {
      this.stats.pendingBytes = Math.max(0, this.stats.pendingBytes - n);
      if (this.stats.pendingBytes === 0) this.#wake();
    });
    boom.once('close', () => {
      this.#gone = true;
      this.#wake();
    });
    boom.on('error', (err: Error) => {
      this.stats.errors++;
      this.#wake();
      this.#onError?.(err);
    });
  }

  #wake(): void {
    const w = this.#waiters;
    this.#waiters = [];
    for (const f of w) f();
  }

  write(line: string): void {
    if (this.#closed) {
      this.stats.dropped++;
      return;
    }
    this.#dropping = false;
    this.#boom.write(line);
    if (this.#dropping) {
      this.stats.dropped++;
      return;
    }
    this.stats.lines++;
    this.stats.pendingBytes += Buffer.byteLength(line);
  }

  reopen(): void {
    if (!this.#file || this.#closed) return;
    this.stats.reopens++;
    // Settled when the new descriptor is open (or could not be): close() waits for it, since
    // sonic-boom skips a reopen still pending behind a write once end() was called, and then
    // never finishes ending.
    const previous = this.#reopened;
    this.#reopened = new Promise<void>((resolve) => {
      const done = () => {
        this.#boom.off('ready', done);
        this.#boom.off('error', done);
        resolve();
      };
      this.#boom.on('ready', done);
      this.#boom.on('error', done);
    }).then(() => previous);
    try {
      this.#boom.reopen();
    } catch (err) {
      this.stats.errors++;
      this.#onError?.(err as Error);
    }
  }

  flush(): Promise<void> {
    if (this.stats.pendingBytes === 0 || this.#gone) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  close(): Promise<void> {
    this.#closed ??= this.#reopened.then(() => this.#end()).then(() => this.#wake());
    return this.#closed;
  }

  /** A file: written out and closed. Stdout: written out, left open (pino still writes to it). */
  #end(): Promise<void> {
    const boom = this.#boom;
    if (!this.#file) return this.flush();
    return new Promise<void>((resolve) => {
      if (this.#gone) return resolve();
      boom.once('close', () => resolve());
      // A write error while ending would leave sonic-boom waiting forever: give up the rest.
      boom.once('error', () => {
        if (!this.#gone) {
          this.#gone = true;
          boom.destroy();
        }
        resolve();
      });
      boom.end();
    });
  }
}

function bufferBytes(opts: SinkOptions): number {
  const n = opts.bufferBytes ?? DEFAULT_BUFFER_BYTES;
  if (!Number.isSafeInteger(n) || n < 4096) {
    throw new AccessLogError(
      ACCESSLOG_ERR_OPTIONS,
      `access log bufferBytes must be an integer of at least 4096, got ${String(n)}`,
    );
  }
  return n;
}

/**
 * Open `destination`. A file is opened for appending (created when missing, never truncated);
 * the promise rejects with `ACCESSLOG_ERR_OPEN` when it cannot be, so a node refuses to start
 * with an access log it could not write.
 */
export async function openSink(
  destination: AccessLogDestination,
  opts: SinkOptions = {},
): Promise<AccessSink> {
  const maxLength = bufferBytes(opts);
  if (destination === 'off') return new OffSink();
  // minLength 0: a line goes out as soon as no write is in flight; lines written meanwhile are
  // batched into the next write (up to maxWrite, 16 KiB), so a busy node makes few syscalls.
  if (destination === 'stdout') {
    const fd = opts.stdoutFd ?? 1;
    return new BoomSink(new SonicBoom({ fd, sync: false, maxLength }), false, opts.onError);
  }
  const path = destination.file;
  const boom = new SonicBoom({ dest: path, sync: false, append: true, maxLength });
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => {
      boom.off('ready', onReady);
      reject(
        new AccessLogError(
          ACCESSLOG_ERR_OPEN,
          `cannot open the access log file ${path}: ${err.message}`,
        ),
      );
    };
    const onReady = () => {
      boom.off('error', onError);
      resolve();
    };
    boom.once('error', onError);
    boom.once('ready', onReady);
  });
  return new BoomSink(boom, true, opts.onError);
}
