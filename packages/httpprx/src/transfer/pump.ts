/**
 * Drive an upstream body into a `Transfer`: count and hash the bytes as they arrive, enforce the
 * size cap and (for peers) an idle bound on the injected clock, pause the upstream while the
 * writer is behind, and report how it ended. The caller decides what an ending means (commit,
 * verify, fail).
 */
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Clock, TimerHandle } from '@coral/testkit';
import type { Transfer } from './transfer.js';

export type PumpResult =
  | { ok: true; size: number; sha256: string }
  | {
      ok: false;
      size: number;
      error: Error;
      reason: 'too-large' | 'stalled' | 'truncated' | 'short';
    };

export interface PumpOptions {
  /** Largest body accepted (bytes). */
  maxBytes: number;
  /** Declared length (Content-Length): fewer bytes at the end is a truncation. */
  length?: number | undefined;
  /** Fail when no chunk arrives for this long (ms, on `clock`). */
  idle?: { clock: Clock; ms: number };
}

export function pump(body: Readable, t: Transfer, opts: PumpOptions): Promise<PumpResult> {
  return new Promise<PumpResult>((resolve) => {
    const hash = createHash('sha256');
    let size = 0;
    let over = false;
    let timer: TimerHandle | undefined;
    const arm = () => {
      if (!opts.idle) return;
      timer?.cancel();
      const { clock, ms } = opts.idle;
      timer = clock.setTimeout(() => stop('stalled', new Error(`no body bytes for ${ms} ms`)), ms);
    };
    const stop = (reason: 'too-large' | 'stalled' | 'truncated' | 'short', error: Error) => {
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
        stop('truncated', new Error(`body longer than its Content-Length ${opts.length}`));
        return;
      }
      hash.update(chunk);
      arm();
      const wait = t.push(chunk);
      if (wait) {
        body.pause();
        void wait.then(() => {
          if (!over) body.resume();
        });
      }
    };
    body.on('data', onData);
    body.on('error', (e: Error) => stop('truncated', e));
    // Destroyed without an error (abandoned): a truncation too.
    body.on('close', () => stop('truncated', new Error('upstream body closed early')));
    body.on('end', () => {
      if (over) return;
      if (opts.length !== undefined && size !== opts.length) {
        stop('short', new Error(`short body: ${size} of ${opts.length} bytes`));
        return;
      }
      over = true;
      timer?.cancel();
      resolve({ ok: true, size, sha256: hash.digest('hex') });
    });
    arm();
  });
}
