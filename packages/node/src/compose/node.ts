/**
 * One Coral node: the DSHT, the caching proxy and the DNS redirector wired together through the
 * two boundary interfaces (the DSHT adapted as the proxy's `ContentIndex` and the DNS server's
 * `NodeDirectory`), plus the admin API, metrics and logs. `CoralNode.start()` runs the start
 * sequence (start/sequence.ts: one named step per service, in dependency order) and `stop()` the
 * stop sequence (stop.ts: the reverse, within a bound). What the node holds is its state
 * (state.ts); what the admin API reads of it, its admin view (admin-view.ts).
 */
import type { ConnectionBudget } from '@coral/connguard';
import type { InMemoryChallengeStore, NodeDirectory } from '@coral/dnssrv';
import type { KeyInfo } from '@coral/keyring';
import type { Logger } from 'pino';
import type { FleetChallenges } from '../acme/fleet-challenges.js';
import type { DshtContentIndex } from '../adapters/content-index.js';
import type { AdminApi } from '../admin/server.js';
import { resolveAddresses, type ResolvedAddresses } from '../config/resolve.js';
import type { CoralConfig } from '../config/schema.js';
import type { CoralMetrics } from '../metrics/metrics.js';
import type { FleetPurge } from '../purge/fleet-purge.js';
import type { NodeCertificates, TlsMaterial } from '../tls/certificates.js';
import type { FleetTrust } from '../trust/fleet-keys.js';
import type { TlsTicketKeys } from '../trust/ticket-keys.js';
import { NodeAdminView } from './admin-view.js';
import { nodeBanner } from './banner.js';
import { reloadBlocklist } from './blocklist.js';
import type { DnsPort, DshtPort, ProxyPort } from './ports.js';
import { startSequence } from './start/sequence.js';
import { DnsWorkers } from '../workers/dns-workers.js';
import { reloadTls } from './start/tls.js';
import { NodeState, type CoralNodeComponents, type NodeListening } from './state.js';
import { stopSequence } from './stop.js';

export type { CoralNodeComponents } from './state.js';
export { rendezvousRank } from './rendezvous.js';

export class CoralNode {
  readonly #s: NodeState;
  /** What the admin API reads and asks of this node (admin/backend.ts). */
  readonly view: NodeAdminView;

  private constructor(state: NodeState) {
    this.#s = state;
    this.view = new NodeAdminView(state);
  }

  /**
   * Start every service of a node. Throws {@link StartError} (after closing whatever had started)
   * when one cannot start, for instance because its port is taken.
   */
  static async start(config: CoralConfig, components: CoralNodeComponents): Promise<CoralNode> {
    const addresses = await resolveAddresses(config, components.lookup);
    const node = new CoralNode(new NodeState(config, addresses, components));
    try {
      await startSequence(node.#s, node.view);
    } catch (err) {
      await node.stop().catch(() => undefined);
      throw err;
    }
    return node;
  }

  /** Graceful shutdown (stop.ts): LEAVE, then DNS, purges, proxy, purge log, DSHT, admin API. */
  stop(): Promise<void> {
    this.#s.stopping ??= stopSequence(this.#s);
    return this.#s.stopping;
  }

  /** SIGHUP: the re-read configuration's blocklist from the next request on (blocklist.ts). */
  reloadBlocklist(
    config: CoralConfig,
  ): Promise<{ domains: string[]; added: string[]; removed: string[]; dropped: number }> {
    return reloadBlocklist(this.#s, config);
  }

  /** SIGHUP: read the TLS certificate again; a file that cannot be used changes nothing. */
  reloadTls(): Promise<TlsMaterial | undefined> {
    return reloadTls(this.#s);
  }

  /** Resolves once every access line so far is written (tests read the file). */
  flushAccessLog(): Promise<void> {
    return this.#s.accessLog?.flush() ?? Promise.resolve();
  }

  /** SIGUSR1: reopen the access log file by its path (logrotate moved it); else nothing. */
  reopenAccessLog(): void {
    this.#s.accessLog?.reopen();
  }

  /**
   * SIGHUP with `workers` ≥ 2: every worker thread reloads (each answers; a worker that fails keeps
   * its old state and is logged). Nothing to do with one thread.
   */
  async reloadWorkers(): Promise<void> {
    if (this.#s.dns instanceof DnsWorkers) await this.#s.dns.reload();
  }

  /** SIGHUP: make the keyring what the (re-read) configuration says (see FleetKeyAdmin.reload). */
  reloadKeys(config: CoralConfig): Promise<KeyInfo[]> {
    return this.#s.keys.reload(config);
  }

  /** Where each service listens and a copy-paste example of a Coralized fetch. */
  banner(): string {
    const s = this.#s;
    return nodeBanner({
      config: s.config,
      addresses: s.addresses,
      nodeId: s.nodeId,
      listening: s.listening,
      certificate: s.certificates?.current,
      seed: s.join.seed,
      trust: s.trust,
    });
  }

  // ---- the running node's parts, read-only (state.ts) ---------------------------------------

  get config(): CoralConfig {
    return this.#s.config;
  }
  get addresses(): ResolvedAddresses {
    return this.#s.addresses;
  }
  get logger(): Logger {
    return this.#s.logger;
  }
  get metrics(): CoralMetrics {
    return this.#s.metrics;
  }
  /** Open mode, or keyed with the fleet keyring (decided at start: trust/fleet-keys.ts). */
  get trust(): FleetTrust {
    return this.#s.trust;
  }
  get listening(): Readonly<NodeListening> {
    return this.#s.listening;
  }
  get dsht(): DshtPort {
    return this.#s.dsht;
  }
  get index(): DshtContentIndex {
    return this.#s.index;
  }
  get directory(): NodeDirectory {
    return this.#s.directory;
  }
  get proxy(): ProxyPort {
    return this.#s.proxy;
  }
  get dns(): DnsPort | undefined {
    return this.#s.dns;
  }
  get admin(): AdminApi {
    return this.#s.admin;
  }
  /** Every client listener's connection budget: per-client caps, timeouts, the ceiling. */
  get connections(): ConnectionBudget {
    return this.#s.connections;
  }
  /** `_acme-challenge.<zone>` TXT values answered by this node's DNS server. */
  get challenges(): InMemoryChallengeStore {
    return this.#s.challenges;
  }
  /** ACME DNS-01 values set through the admin API, passed on to the fleet. */
  get acme(): FleetChallenges {
    return this.#s.acme;
  }
  /** Fleet purges: the purge log, propagation and catch-up. */
  get purges(): FleetPurge {
    return this.#s.purges;
  }
  /** The TLS listener's certificate (configured files or the local CA); none while TLS is off. */
  get certificates(): NodeCertificates | undefined {
    return this.#s.certificates;
  }
  /** The TLS listener's session-ticket keys (trust/ticket-keys.ts); none while TLS is off. */
  get ticketKeys(): TlsTicketKeys | undefined {
    return this.#s.ticketKeys;
  }
}
