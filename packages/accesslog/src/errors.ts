/**
 * Errors thrown by @coral/accesslog. Each has a stable `code` (never reused); docs/accesslog.md
 * and the docs/errors.md index list them. Lines that cannot be written are counted, never thrown.
 */
export class AccessLogError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'AccessLogError';
    this.code = code;
  }
}

/** An option out of range: a format, destination, sample rate or buffer size. */
export const ACCESSLOG_ERR_OPTIONS = 'ACCESSLOG_ERR_OPTIONS';
/** The access log file cannot be opened (its directory missing, no permission). */
export const ACCESSLOG_ERR_OPEN = 'ACCESSLOG_ERR_OPEN';
/** A live-stream filter that cannot be parsed (a host, status class, cache result or CIDR). */
export const ACCESSLOG_ERR_FILTER = 'ACCESSLOG_ERR_FILTER';
/** The live stream refuses a subscriber: it has as many as it allows, or it is closed. */
export const ACCESSLOG_ERR_SUBSCRIBERS = 'ACCESSLOG_ERR_SUBSCRIBERS';

/** Every code above, for the docs test. */
export const ACCESSLOG_ERROR_CODES = [
  ACCESSLOG_ERR_OPTIONS,
  ACCESSLOG_ERR_OPEN,
  ACCESSLOG_ERR_FILTER,
  ACCESSLOG_ERR_SUBSCRIBERS,
] as const;
