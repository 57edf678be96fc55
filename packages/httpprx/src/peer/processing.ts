/**
 * The designated member's sign of life while it fetches for an asker (./rendezvous.ts): `102
 * Processing` (RFC 2518 §10.1; a 1xx any HTTP/1.1 client parses, RFC 9110 §15.2) at once, then
 * again every `intervalMs` until the final response's head goes out or the exchange ends. HTTP
 * allows any number of 1xx responses before the final one, so the asker can tell a member that is
 * waiting on a slow origin (102s keep coming) from one that hung or died (they stop), and give up
 * on the second within its peer timeout instead of waiting out the origin's.
 */
import type { ServerResponse } from 'node:http';
import type { Clock, TimerHandle } from '@coral/runtime';

/**
 * The beat for an asker whose patience between signs of life is `patienceMs` (its fetching
 * patience, `peerFetchingTimeoutMs`): three beats to each patience, so one late beat (a busy event loop, a lost segment's retransmission) does not
 * make the asker give up on a member that is working.
 */
export function processingIntervalMs(patienceMs: number): number {
  return Math.max(10, Math.floor(patienceMs / 3));
}

/**
 * Send 102 now and every `intervalMs` of `clock` time while `res` has not sent its head. Returns
 * a function that stops it (also stopped by the head, checked at each beat, and by `close`).
 */
export function keepProcessing(res: ServerResponse, clock: Clock, intervalMs: number): () => void {
  let timer: TimerHandle | undefined;
  let stopped = false;
  const stop = () => {
    stopped = true;
    timer?.cancel();
    res.off('close', stop);
  };
  const beat = () => {
    // After the head a 1xx would land inside the body; after close there is no one to tell.
    if (stopped || res.headersSent || res.writableEnded || res.destroyed) return stop();
    res.writeProcessing();
    timer = clock.setTimeout(beat, intervalMs);
  };
  res.once('close', stop);
  beat();
  return stop;
}
