/**
 * What this node tells the fleet's index about the objects it holds: `fetching` (20 s) when a fetch
 * starts, `complete` with size and SHA-256 once a body is committed, and the periodic sweep that
 * re-announces every fresh stored object with its remaining freshness (capped at an hour). The
 * sweep reads the store's in-memory directory only (no metadata I/O).
 */
import type { Holder } from '../content-index.js';
import { COMPLETE_TTL_SECONDS, FETCHING_TTL_SECONDS } from '../constants.js';
import type { ProxyCore } from '../kit/core.js';

function holder(
  core: ProxyCore,
  state: 'fetching' | 'complete',
  size?: number,
  sha256?: string,
): Holder {
  const h: Holder = {
    nodeId: core.self.nodeId,
    ip: core.self.ip,
    httpPort: core.self.httpPort,
    state,
  };
  if (size !== undefined) h.size = size;
  if (sha256 !== undefined) h.sha256 = sha256;
  return h;
}

function announce(core: ProxyCore, keyBytes: Uint8Array, h: Holder, ttl: number): void {
  if (ttl <= 0) return;
  core.index.announce(keyBytes, h, ttl).catch((e: unknown) => {
    core.log.warn({ err: String(e) }, 'announce failed');
  });
}

export function announceFetching(core: ProxyCore, keyBytes: Uint8Array): void {
  announce(core, keyBytes, holder(core, 'fetching'), FETCHING_TTL_SECONDS);
}

/** `complete`, for the object's remaining freshness (whole seconds) capped at an hour. */
export function announceComplete(
  core: ProxyCore,
  keyBytes: Uint8Array,
  o: { size: number; sha256: string; freshUntil: number },
): void {
  const ttl = Math.min(COMPLETE_TTL_SECONDS, Math.floor((o.freshUntil - core.clock.now()) / 1000));
  announce(core, keyBytes, holder(core, 'complete', o.size, o.sha256), ttl);
}

/** Re-announce every fresh stored object (one per URL); returns how many were announced. */
export async function reannounceAll(core: ProxyCore): Promise<number> {
  const seen = new Set<string>();
  let n = 0;
  for await (const s of core.store.summaries()) {
    if (s.freshUntil - core.clock.now() < 1000) continue;
    const id = Buffer.from(s.primary).toString('hex');
    if (seen.has(id)) continue;
    seen.add(id);
    announceComplete(core, s.primary, s);
    n++;
  }
  return n;
}

/**
 * Withdraw this node's announcement, best effort: resolves to whether the index took it (false
 * when it has no withdrawal); a failure is logged, never thrown.
 */
export function withdraw(core: ProxyCore, keyBytes: Uint8Array): Promise<boolean> {
  if (!core.index.withdraw) return Promise.resolve(false);
  return core.index.withdraw(keyBytes).then(
    () => true,
    (e: unknown) => {
      core.log.warn({ err: String(e) }, 'withdraw failed');
      return false;
    },
  );
}
