/**
 * A stored body streamed to a client under the served-bytes share (./fair-share.ts): each chunk
 * is charged, then written once granted; the file stream stays paused while a chunk waits for its
 * grant or for the client's socket to drain, so at most one chunk waits per response.
 */
import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { drained } from '../transfer/reader.js';

export function pipeShared(
  stream: Readable,
  res: ServerResponse,
  take: (bytes: number) => Promise<void> | undefined,
): void {
  stream.on('error', () => res.destroy());
  res.on('close', () => {
    if (!stream.destroyed) stream.destroy();
  });
  const write = (chunk: Buffer, paused: boolean) => {
    if (res.destroyed) return;
    if (res.write(chunk)) {
      if (paused) stream.resume();
      return;
    }
    if (!paused) stream.pause();
    void drained(res).then((open) => {
      if (open) stream.resume();
    });
  };
  /** The chunk waiting for its grant: the end of the file waits for it too. */
  let waiting: Promise<void> | undefined;
  stream.on('data', (chunk: Buffer) => {
    const granted = take(chunk.length);
    if (!granted) return write(chunk, false);
    stream.pause();
    waiting = granted.then(() => {
      waiting = undefined;
      write(chunk, true);
    });
  });
  stream.on('end', () => {
    if (waiting) void waiting.then(() => res.end());
    else res.end();
  });
}
