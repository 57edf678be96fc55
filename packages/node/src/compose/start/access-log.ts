/**
 * Start step "access log": the access log (`log.access`, @coral/accesslog) and the live stream's
 * hub behind `GET /v1/logs`, before the proxy, which hands them one record per request. A file
 * destination that cannot be opened stops the start (`ACCESSLOG_ERR_OPEN`, the step named). Write
 * errors (disk full, a closed pipe) are logged at most once a minute, with how many there were;
 * dropped lines are counted (metrics/access-log.ts).
 */
import { AccessLog, LiveHub, openSink, type AccessLogDestination } from '@coral/accesslog';
import { systemRandom } from '@coral/runtime';
import { registerAccessLogMetrics } from '../../metrics/access-log.js';
import type { NodeState } from '../state.js';
import { step } from './step.js';

/** Write errors are logged at most this often. */
export const ACCESS_LOG_ERROR_EVERY_MS = 60_000;

/** `log.access.destination` as a sink destination. */
export function accessDestination(destination: string): AccessLogDestination {
  return destination === 'stdout' || destination === 'off' ? destination : { file: destination };
}

export async function openAccessLog(s: NodeState): Promise<void> {
  const { format, destination, sample } = s.config.log.access;
  const logger = s.log('access-log');
  let lastLogged = -Infinity;
  let unlogged = 0;
  const onError = (err: Error) => {
    const now = s.clock.now();
    if (now - lastLogged < ACCESS_LOG_ERROR_EVERY_MS) {
      unlogged++;
      return;
    }
    lastLogged = now;
    logger.error({ err, destination, since: unlogged }, 'access log write failed');
    unlogged = 0;
  };
  const sink = await step('access log', () =>
    openSink(accessDestination(destination), { onError }),
  );
  const hub = new LiveHub();
  hub.onSlow = () => logger.info('a /v1/logs reader fell behind and was disconnected');
  s.logHub = hub;
  s.accessLog = new AccessLog({ sink, random: systemRandom, hub }, { format, sample });
  registerAccessLogMetrics(s.metrics.registry, () => ({ log: s.accessLog, hub: s.logHub }));
}
