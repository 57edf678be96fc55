/**
 * The node's origin blocklist: its gate in front of the proxy's handler (blocklist/gate.ts), put
 * there before the proxy listens; the swap on SIGHUP; and dropping what the cache holds of blocked
 * origins (they are refused anyway: free the space).
 */
import { Blocklist } from '../blocklist/blocklist.js';
import { blockGate } from '../blocklist/gate.js';
import type { CoralConfig } from '../config/schema.js';
import type { NodeState } from './state.js';

/** Wrap the proxy's handler with the configuration's blocklist and drop what it blocks. */
export async function gateBlockedOrigins(s: NodeState): Promise<void> {
  const { config, metrics } = s;
  s.blocklist = new Blocklist(config.proxy.blocklist);
  s.proxy.handler = blockGate(s.proxy.handler, {
    zones: [config.zone],
    sites: new Map(Object.entries(config.proxy.sites).map(([h, u]) => [h, new URL(u).hostname])),
    blocklist: () => s.blocklist,
    onBlocked: () => metrics.purge.blocked(),
  });
  await dropBlocked(s, s.blocklist);
}

/**
 * SIGHUP: use the (re-read) configuration's blocklist from the next request on (open
 * connections stay), and drop what the cache holds of newly blocked origins.
 */
export async function reloadBlocklist(
  s: NodeState,
  config: CoralConfig,
): Promise<{ domains: string[]; added: string[]; removed: string[]; dropped: number }> {
  const before = new Set(s.blocklist.domains());
  const next = new Blocklist(config.proxy.blocklist);
  s.blocklist = next;
  const domains = next.domains();
  const added = domains.filter((d) => !before.has(d));
  const removed = [...before].filter((d) => !domains.includes(d));
  const dropped = added.length > 0 ? await dropBlocked(s, new Blocklist(added)) : 0;
  return { domains, added, removed, dropped };
}

/** Drop stored responses of blocked origins (the proxy withdraws their announcements). */
async function dropBlocked(s: NodeState, list: Blocklist): Promise<number> {
  if (list.size === 0) return 0;
  const dropped = await s.proxy.purgeWhere((m) => {
    try {
      return list.match(new URL(m.url).hostname) !== undefined;
    } catch {
      return false;
    }
  });
  if (dropped > 0) {
    s.logger.info(
      { component: 'blocklist', dropped },
      'dropped cached responses of blocked origins',
    );
  }
  return dropped;
}
