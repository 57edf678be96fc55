/**
 * Start steps of the process itself: the open-file limit and the client-connection ceiling it
 * allows (before anything listens), and the periodic heap trim (last).
 */
import { ASSUMED_DESCRIPTOR_LIMIT, ConnectionBudget, connectionCeiling } from '@coral/connguard';
import { raiseDescriptorLimit } from '../../runtime/fd-limit.js';
import { startHeapTrim, type HeapTrimmer } from '../../runtime/heap-trim.js';
import type { NodeState } from '../state.js';

/**
 * Raise the soft open-file limit to the hard one, say what was done, and derive the node-wide
 * connection ceiling from the limit in effect (`connections.max` / `connections.reserve`
 * override it). A failure is logged and the common soft limit (1,024) assumed.
 */
export async function connectionBudget(s: NodeState): Promise<ConnectionBudget> {
  const { config, metrics } = s;
  const log = s.log('connections');
  const fd = await (s.components.descriptorLimit ?? raiseDescriptorLimit)();
  let limit = ASSUMED_DESCRIPTOR_LIMIT;
  if ('unavailable' in fd) {
    log.warn({ reason: fd.unavailable, assumed: limit }, 'cannot read the open-file limit');
  } else {
    limit = Math.min(fd.limits.soft, 1_048_576);
    metrics.descriptorLimits(fd.limits.soft, fd.limits.hard);
    if (fd.error) {
      log.warn({ ...fd.limits, error: fd.error }, 'raising the open-file limit failed');
    } else if (fd.raised) {
      log.info(
        { from: fd.before.soft, to: fd.limits.soft, hard: fd.limits.hard },
        'raised the open-file limit',
      );
    } else {
      log.info({ ...fd.limits }, 'open-file limit already at its hard limit');
    }
  }
  const c = config.connections;
  const derived = connectionCeiling(
    limit,
    c.reserve > 0 ? { reserveMin: c.reserve, reserveFraction: 0 } : {},
  );
  const ceiling = c.max > 0 ? c.max : derived.ceiling;
  log.info(
    { descriptorLimit: limit, reserve: c.max > 0 ? limit - ceiling : derived.reserve, ceiling },
    'client connection ceiling',
  );
  const budget =
    s.components.connections ?? new ConnectionBudget({ events: metrics.connections }, { ceiling });
  metrics.bindConnections(() => budget.stats());
  return budget;
}

/**
 * The heap trim every `heapTrimIntervalMs` (runtime/heap-trim.ts), its trims and errors counted;
 * none when it does not run.
 */
export function heapTrim(s: NodeState): Promise<HeapTrimmer | undefined> {
  return startHeapTrim({
    intervalMs: s.config.heapTrimIntervalMs,
    clock: s.clock,
    logger: s.log('heap-trim'),
    onTrim: (released) => s.metrics.heapTrimmed(released),
    onError: (code) => s.metrics.resourceError('heap-trim', code),
  });
}
