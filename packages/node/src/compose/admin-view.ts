/**
 * The admin view: what the admin API reads and asks of a running node (admin/backend.ts), over
 * its state — identity and readiness, the DSHT's tables, values and lookups, the cache, DNS
 * decisions, the fleet's keys and trust. The admin API knows nothing of the services themselves.
 */
import { DnsWorkers, type DnsWorkerState } from '../workers/dns-workers.js';
import type { Decision, ProbeEntry } from '@coral/dnssrv';
import type { Contact, PutResult } from '@coral/dsht';
import type { CacheListEntry } from '@coral/httpprx';
import type { KeyInfo } from '@coral/keyring';
import type {
  AdminBackend,
  ClustersView,
  DshtGetView,
  FleetAuthView,
  FleetKeysView,
  LocalValueView,
  NodeInfoView,
  ReadinessView,
} from '../admin/backend.js';
import { fleetView, type FleetView } from '../admin/dashboard/fleet.js';
import { VERSION } from '../version.js';
import type { NodeState } from './state.js';

export class NodeAdminView implements AdminBackend {
  readonly #s: NodeState;

  constructor(state: NodeState) {
    this.#s = state;
  }

  get levels(): number {
    return this.#s.dsht?.levels ?? 1;
  }

  info(): NodeInfoView {
    const { config, addresses, listening, startedAt, clock } = this.#s;
    const view: NodeInfoView = {
      nodeId: this.#s.nodeId,
      version: VERSION,
      zone: config.zone,
      advertiseIp: addresses.advertiseIp,
      startedAt: new Date(startedAt).toISOString(),
      uptimeSeconds: Math.round((clock.now() - startedAt) / 1000),
      services: {
        proxy: listening.proxy ?? null,
        proxyTls: listening.proxyTls ?? null,
        dsht: listening.dsht ?? null,
        dns: listening.dns ?? null,
        admin: listening.admin ?? null,
      },
    };
    if (config.region) view.region = config.region;
    const ticketKeys = this.#s.ticketKeys?.status();
    if (ticketKeys) view.tlsTicketKeys = ticketKeys;
    return view;
  }

  readiness(): ReadinessView {
    const s = this.#s;
    const up = (l: unknown) => l !== undefined && !s.stopping;
    const checks: Record<string, boolean> = {
      dsht: up(s.listening.dsht),
      joined: s.join.joined,
      proxy: up(s.listening.proxy),
    };
    if (s.config.dns.enabled) checks.dns = up(s.listening.dns);
    // Purges taken while this node was away are applied before it counts as ready.
    // Once passed, it stays passed: the gate is about what a node missed while it was away, and a
    // first catch-up round with a member that joined later (which writes cursors) is no reason to
    // turn a serving node away.
    checks.purgeLog = s.purgeGate?.ready() ?? false;
    const view: ReadinessView = { ready: false, checks };
    if (s.trust.mode === 'keyed' && s.dsht) {
      // Keyed: not isolated (it still authenticates its fleet's traffic).
      const auth = s.dsht.authState();
      checks.fleetKeys = !auth.isolated;
      if (auth.isolated) view.reason = `isolated from the fleet: ${auth.reason ?? ''}`.trim();
    }
    view.ready = Object.values(checks).every(Boolean);
    return view;
  }

  clusters(): ClustersView {
    const { dsht } = this.#s;
    return {
      levels: dsht.snapshot().levels,
      clusters: dsht.clusters?.() ?? null,
      liveProxies: this.#s.liveProxies(),
    };
  }

  routes(level: number): Contact[] {
    return this.#s.dsht.routes(level);
  }

  localGet(key: Uint8Array): LocalValueView[] {
    const byValue = new Map<string, LocalValueView>();
    for (let level = 0; level < this.levels; level++) {
      for (const value of this.#s.dsht.localGet(key, level)) {
        const id = Buffer.from(value).toString('hex');
        const seen = byValue.get(id);
        if (seen) {
          if (!seen.levels.includes(level)) seen.levels.push(level);
        } else {
          byValue.set(id, { value, levels: [level] });
        }
      }
    }
    return [...byValue.values()];
  }

  async get(key: Uint8Array, signal: AbortSignal): Promise<DshtGetView> {
    const r = await this.#s.dsht.get(key, { signal });
    return { values: r.values, stats: r.stats };
  }

  put(
    key: Uint8Array,
    value: Uint8Array,
    ttlSeconds: number,
    signal: AbortSignal,
  ): Promise<PutResult> {
    return this.#s.dsht.put(key, value, ttlSeconds, { signal });
  }

  cacheList(): Promise<CacheListEntry[]> {
    return this.#s.proxy.cacheList();
  }

  /** The blocklist in use (canonical domains). */
  blocklist(): { domains: string[] } {
    return { domains: this.#s.blocklist.domains() };
  }

  /** The one-URL local purge: the proxy drops it and withdraws the announcement (one owner). */
  cachePurge(url: string): Promise<{ purged: boolean; withdrawn: boolean }> {
    return this.#s.proxy.purgeAndWithdraw(url);
  }

  async probeCache(): Promise<ProbeEntry[]> {
    return (await this.#s.dns?.probeCache()) ?? [];
  }

  async workers(): Promise<DnsWorkerState[]> {
    const dns = this.#s.dns;
    if (!(dns instanceof DnsWorkers)) return [];
    await dns.refreshStats();
    return dns.workerStates();
  }

  async dnsDecisions(): Promise<Decision[]> {
    return (await this.#s.dns?.recentDecisions()) ?? [];
  }

  fleet(): FleetView {
    const s = this.#s;
    return fleetView(
      s.dsht,
      s.liveProxies().map((n) => n.id),
      s.clock.now(),
      s.dsht.members(),
    );
  }

  // ---- fleet keys (trust/key-admin.ts) and trust --------------------------------------------

  fleetKeys(): FleetKeysView {
    return this.#s.keys.view();
  }

  installKey(key: string): { id: string; keys: KeyInfo[] } {
    return this.#s.keys.install(key);
  }

  useKey(id: string): { keys: KeyInfo[] } {
    return this.#s.keys.use(id);
  }

  removeKey(id: string): { keys: KeyInfo[] } {
    return this.#s.keys.remove(id);
  }

  /** Fleet-trust state: mode, key ids, drop counters by reason, isolation, members. */
  fleetAuth(): FleetAuthView {
    const { dsht } = this.#s;
    return { ...dsht.authState(), members: dsht.members() };
  }

  /** One DSHT PING to `address` (ip:port): its RTT in ms. */
  ping(
    address: { ip: string; port: number },
    signal: AbortSignal,
    retries?: number,
  ): Promise<number> {
    return this.#s.dsht.ping(address, { signal, ...(retries !== undefined ? { retries } : {}) });
  }
}
