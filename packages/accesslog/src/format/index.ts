/** The line formats of the access log. */
import type { AccessRecord } from '../record.js';
import { formatCombined } from './combined.js';
import { formatJson } from './json.js';

export { formatCombined, escapeDefault, clfTime } from './combined.js';
export { formatJson, parseJsonLine, isoTime, ACCESS_LOG_MARK } from './json.js';

/** `json` (the default) or `combined`. */
export type AccessLogFormat = 'json' | 'combined';
export const ACCESS_LOG_FORMATS: readonly AccessLogFormat[] = ['json', 'combined'];

/** The function that turns a record into one line of `format`, newline included. */
export function formatter(format: AccessLogFormat): (r: AccessRecord) => string {
  return format === 'combined' ? formatCombined : formatJson;
}
