/**
 * One client reading a byte range of a `Transfer` at its own pace: a piece at a time, from the
 * transfer's window or its file, each written only once the client's socket has drained the one
 * before (end-to-end backpressure: a slow client slows only itself). When the transfer fails, the
 * client's connection is aborted so that it never sees a complete-looking body.
 *
 * Pieces from the file are read into one buffer per client, reused once the socket has taken the
 * piece before (its write callback). A socket takes far more than the client has read, into the
 * kernel's buffers, before it pushes back: with a new buffer per piece, 200 slow readers of a
 * finished 50 MB object left tens of MB of spent pieces to the garbage collector (bench:memory
 * (c), issue 12); with one each they hold `READ_CHUNK_BYTES` apiece.
 */
import type { ServerResponse } from 'node:http';
import { READ_CHUNK_BYTES } from './transfer.js';
import type { Transfer } from './transfer.js';

/** Resolves once `res` may take more (drain) or is gone (close); true when it may. */
export function drained(res: ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      res.removeListener('drain', onDrain);
      res.removeListener('close', onClose);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    res.once('drain', onDrain);
    res.once('close', onClose);
  });
}

/** Resolves once `res` has taken `piece` (its write callback) or is gone; true when taken. */
function written(res: ServerResponse, piece: Buffer): Promise<boolean> {
  return new Promise((resolve) => {
    const onClose = () => resolve(false);
    res.once('close', onClose);
    res.write(piece, (err) => {
      res.removeListener('close', onClose);
      resolve(!err);
    });
  });
}

/**
 * Send bytes `start..end` (inclusive; `end` undefined = to the end of the body, whenever that is)
 * of `t` to `res`, then end it. The caller has counted itself as a reader (`t.addReader()`); this
 * removes it when done.
 */
export async function streamTransfer(
  t: Transfer,
  res: ServerResponse,
  start: number,
  end: number | undefined,
  share?: (bytes: number) => Promise<void> | undefined,
): Promise<void> {
  let pos = start;
  /** This client's buffer for pieces read from the file (allocated at the first such read). */
  let spare: Buffer | undefined;
  const into = () => (spare ??= Buffer.allocUnsafeSlow(READ_CHUNK_BYTES));
  // A client that leaves while the transfer is quiet must be noticed (it stops an unshared fetch).
  const gone = new Promise<void>((resolve) => res.once('close', resolve));
  try {
    for (;;) {
      if (res.destroyed) return;
      if (t.failed) {
        res.destroy(t.failed);
        return;
      }
      const limit = end === undefined ? Infinity : end + 1;
      if (pos >= limit) break;
      if (pos >= t.readable) {
        if (t.finished && pos >= t.received) break;
        await Promise.race([t.changed(), gone]);
        continue;
      }
      const piece = await t.read(pos, Math.min(READ_CHUNK_BYTES, limit - pos), into);
      if (piece.length === 0) {
        // The file did not have the bytes (it was discarded): nothing sensible left to send.
        res.destroy(new Error('body no longer readable'));
        return;
      }
      pos += piece.length;
      // The node's served-bytes share (../fairness/): wait for the grant before sending.
      const granted = share?.(piece.length);
      if (granted) await granted;
      if (res.destroyed) return;
      if (spare && piece.buffer === spare.buffer) {
        // The next read reuses the buffer: wait until the socket has taken this piece.
        if (!(await written(res, piece))) return;
      } else if (!res.write(piece) && !(await drained(res))) return;
    }
    res.end();
  } catch (e) {
    res.destroy(e instanceof Error ? e : new Error(String(e)));
  } finally {
    t.removeReader();
  }
}
