/**
 * The proxy's side of the access log (ProxyComponents.onAccess): an @coral/accesslog
 * ExchangeTracker takes every request as the handler starts, and each response's head is reported
 * to it through the metrics the stages already call (`request(kind, ...)`, once per response head:
 * its time to first byte and cache kind). The stages add what only they know to the exchange's
 * note (`noteOf(res)`): the origin URL, where a stored body was read from, the forward request's
 * time. Without `onAccess` nothing of this runs.
 */
import type { ExchangeTracker } from '@coral/accesslog';
import type { ProxyMetrics } from '../kit/types.js';

/** `metrics` (or none) with every response head also reported to `tracker`. */
export function withAccessHeads(
  metrics: ProxyMetrics | undefined,
  tracker: ExchangeTracker,
): ProxyMetrics {
  const inner = metrics;
  const request: ProxyMetrics['request'] = (kind, method, status, res) => {
    tracker.head(res, kind);
    inner?.request(kind, method, status, res);
  };
  if (!inner) return { request, originFetch() {}, peerFetch() {}, rateLimited() {} };
  // Every other member is the sink's own, bound to it (a class's methods may use private fields).
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(inner, {
    get(target, p) {
      if (p === 'request') return request;
      if (bound.has(p)) return bound.get(p);
      const v: unknown = Reflect.get(target, p, target);
      if (typeof v !== 'function') return v;
      const f = (v as (...args: unknown[]) => unknown).bind(target);
      bound.set(p, f);
      return f;
    },
  });
}
