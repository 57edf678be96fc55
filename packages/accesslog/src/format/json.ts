/**
 * The `json` format: one JSON object per line. Its first field, `"log":"access"`, tells an access
 * line apart from the node's own pino lines on the same stdout (those carry `level` and `msg`,
 * never `log`). `time` is ISO 8601 (UTC, milliseconds); absent facts are left out, never `null`.
 */
import type { AccessRecord } from '../record.js';

/** The value of the field that marks an access line. */
export const ACCESS_LOG_MARK = 'access';

/** One access line in the `json` format, newline included. */
export function formatJson(r: AccessRecord): string {
  // Built field by field, in a fixed order, so lines diff and grep the same way every time.
  const o: Record<string, unknown> = {
    log: ACCESS_LOG_MARK,
    time: new Date(r.time).toISOString(),
    client: r.client,
  };
  if (r.clientPort !== undefined) o['clientPort'] = r.clientPort;
  o['method'] = r.method;
  o['host'] = r.host;
  o['url'] = r.url;
  if (r.originUrl !== undefined) o['originUrl'] = r.originUrl;
  o['protocol'] = r.protocol;
  o['status'] = r.status;
  o['bytes'] = r.bytes;
  o['cache'] = r.cache;
  o['served'] = r.served;
  if (r.upstreamMs !== undefined) o['upstreamMs'] = r.upstreamMs;
  if (r.ttfbMs !== undefined) o['ttfbMs'] = r.ttfbMs;
  o['totalMs'] = r.totalMs;
  if (r.tls !== undefined) o['tls'] = r.tls;
  o['requestId'] = r.requestId;
  o['aborted'] = r.aborted;
  if (r.referer !== undefined) o['referer'] = r.referer;
  if (r.userAgent !== undefined) o['userAgent'] = r.userAgent;
  return JSON.stringify(o) + '\n';
}
