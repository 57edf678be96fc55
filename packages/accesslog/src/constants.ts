/** Defaults of @coral/accesslog, each documented where it is used. */

/** Bytes a destination may hold while the disk or pipe is behind; past it, lines are dropped. */
export const DEFAULT_BUFFER_BYTES = 4 * 1024 * 1024;
/** Live-stream subscribers at once. */
export const DEFAULT_MAX_SUBSCRIBERS = 16;
/** Bytes queued for one live-stream subscriber; past it the subscriber is dropped. */
export const DEFAULT_SUBSCRIBER_QUEUE_BYTES = 1024 * 1024;
/** Fraction of requests logged (5xx and aborted requests are always logged). */
export const DEFAULT_SAMPLE = 1;
