/**
 * Drive an upstream body into a `Transfer`: count and hash the bytes as they arrive, enforce the
 * size cap and (for peers) an idle bound on the injected clock, pause the upstream while the
 * writer is behind, and report how it ended. The caller decides what an ending means (commit,
 * verify, fail).
 */
import { createHash } from 'node:crypto';
import type { Hash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Clock, TimerHandle } from '@coral/runtime';
import type { Transfer } from './transfer.js';

/**
 * How a body failed: over the size cap, no bytes for the idle bound, cut off (a socket error or
 * close), ended before its declared length, or longer than its declared length.
 */
export type PumpFailure = 'too-large' | 'stalled' | 'truncated' | 'short' | 'overlong';

export type PumpResult =
  | { ok: true; size: number; sha256: string }
  | { ok: false; size: number; error: Error; reason: PumpFailure };

export interface PumpOptions {
  /** Largest body accepted (bytes). */
  maxBytes: number;
  /** Declared length (Content-Length): fewer bytes at the end is a truncation. */
  length?: number | undefined;
  /**
   * A body that continues one already pumped into the same transfer (a range resume,
   * ../fetch/resume.ts): the bytes it already holds (counted in `size` and against `length` and
   * `maxBytes`) and the hash of those bytes, which this body's bytes extend.
   */
  continues?: { size: number; hash: Hash };
  /** Fail when no chunk arrives for this long (ms, on `clock`). */
  idle?: { clock: Clock; ms: number };
  /**
   * Bandwidth share (../fairness/): each chunk is charged as it arrives; while the charge waits
   * for its grant the upstream stays paused (so nothing more is read from its socket).
   */
  share?: (bytes: number) => Promise<void> | undefined;
}

export function pump(body: Readable, t: Transfer, opts: PumpOptions): Promise<PumpResult> {
  return new Promise<PumpResult>((resolve) => {
    const hash = opts.continues?.hash ?? createHash('sha256');
    let size = opts.continues?.size ?? 0;
    let over = false;
    let timer: TimerHandle | undefined;
    /** The upstream has ended (a chunk may still wait for its grant). */
    let ended = false;
    /** The chunk waiting for its grant, forwarded when this resolves. */
    let waiting: Promise<void> | undefined;
    const arm = () => {
      if (!opts.idle) return;
      timer?.cancel();
      const { clock, ms } = opts.idle;
      timer = clock.setTimeout(() => stop('stalled', new Error(`no body bytes for ${ms} ms`)), ms);
    };
    const stop = (reason: PumpFailure, error: Error) => {
      if (over) return;
      over = true;
      timer?.cancel();
      body.removeListener('data', onData);
      body.on('error', () => {});
      body.destroy();
      resolve({ ok: false, size, error, reason });
    };
    const onData = (chunk: Buffer) => {
      if (over) return;
      size += chunk.length;
      if (size > opts.maxBytes) {
        stop('too-large', new Error(`body exceeded ${opts.maxBytes} bytes`));
        return;
      }
      if (opts.length !== undefined && size > opts.length) {
        stop('overlong', new Error(`body longer than its Content-Length ${opts.length}`));
        return;
      }
      hash.update(chunk);
      const granted = opts.share?.(chunk.length);
      if (!granted) {
        arm();
        forward(chunk, false);
        return;
      }
      // The chunk waits for its grant with the upstream paused; the idle bound does not run
      // meanwhile (the wait is ours, not the upstream's).
      timer?.cancel();
      body.pause();
      waiting = granted.then(() => {
        waiting = undefined;
        if (over) return;
        if (!ended) arm();
        forward(chunk, true);
      });
    };
    /** Hand a chunk to the transfer; keep (or put) the upstream paused while the writer is behind. */
    const forward = (chunk: Buffer, paused: boolean) => {
      const wait = t.push(chunk);
      if (!wait) {
        if (paused) body.resume();
        return;
      }
      if (!paused) body.pause();
      void wait.then(() => {
        if (!over) body.resume();
      });
    };
    body.on('data', onData);
    body.on('error', (e: Error) => stop('truncated', e));
    // Destroyed without an error (abandoned): a truncation too.
    body.on('close', () => {
      if (!ended) stop('truncated', new Error('upstream body closed early'));
    });
    // The end can come while the last chunk waits for its grant: it counts once that chunk is in.
    body.on('end', () => {
      ended = true;
      timer?.cancel();
      if (waiting) void waiting.then(end);
      else end();
    });
    const end = () => {
      if (over) return;
      if (opts.length !== undefined && size !== opts.length) {
        stop('short', new Error(`short body: ${size} of ${opts.length} bytes`));
        return;
      }
      over = true;
      timer?.cancel();
      resolve({ ok: true, size, sha256: hash.digest('hex') });
    };
    arm();
  });
}
