/**
 * The live stream over HTTP: one subscription written to a response as NDJSON (one JSON access
 * line per line, `application/x-ndjson`), at the reader's pace. Lines are written while the
 * response takes them; when its buffer is full (`write` returns false) nothing more is written
 * until it drains, and the subscription's bounded queue takes what comes meanwhile. A reader
 * that does not drain it in time is dropped by the hub (`slow`), and its connection is then
 * destroyed: what a reader can hold on the node is its queue (`queueBytes`), one batch, and the
 * socket's buffers — never more. The stream ends when the reader goes away, or the hub closes.
 */
import type { ServerResponse } from 'node:http';
import type { EndReason, Subscription } from './hub.js';

/** Headers of a live stream's response. */
export const LOG_STREAM_HEADERS = {
  'content-type': 'application/x-ndjson; charset=utf-8',
  'cache-control': 'no-store',
  // A reverse proxy in front (nginx) must not buffer the stream.
  'x-accel-buffering': 'no',
} as const;

/** Wait for `res` to drain or close; true when it drained. */
function drained(res: ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      res.off('drain', onDrain);
      res.off('close', onClose);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    res.on('drain', onDrain);
    res.on('close', onClose);
  });
}

/**
 * Stream `sub`'s lines to `res` until the reader leaves (`closed`), falls behind (`slow`: the
 * connection is destroyed) or the hub closes (`hub-closed`: the response ends). The caller
 * subscribes (`hub.subscribe(filter)`) before answering, so a refusal
 * (`ACCESSLOG_ERR_SUBSCRIBERS`) can be answered with an error and nothing is half written.
 */
export function streamLogs(sub: Subscription, res: ServerResponse): Promise<EndReason> {
  res.on('close', () => sub.close());
  const ended = sub.whenEnded().then((reason) => {
    // A reader that fell behind is cut off; so is one still holding unread lines at shutdown
    // (its end would wait for it). A waiting write then sees the close.
    if (reason === 'slow' || (reason === 'hub-closed' && res.writableLength > 0)) res.destroy();
    return reason;
  });
  if (!res.headersSent) res.writeHead(200, LOG_STREAM_HEADERS);
  res.flushHeaders();
  return (async () => {
    for (;;) {
      const lines = await sub.next();
      if (lines === undefined) break;
      if (!res.write(lines.join('')) && !(await drained(res))) break;
    }
    const reason = await ended;
    if (!res.destroyed && !res.writableEnded) res.end();
    return reason;
  })();
}
