/**
 * A node's state: what it was started with and the services its start sequence brought up
 * (compose/start/), read by the admin view (admin-view.ts), the stop sequence (stop.ts) and the
 * SIGHUP reloads. It holds the few questions every part asks of the running node (its id, the
 * other members, the live proxies, whether it is cut off from its fleet) and nothing else.
 */
import type { AccessLog, LiveHub } from '@coral/accesslog';
import type { ConnectionBudget } from '@coral/connguard';
import { InMemoryChallengeStore, type NodeDirectory, type NodeInfo } from '@coral/dnssrv';
import type { PeerAuth } from '@coral/httpprx';
import { systemClock, type Clock } from '@coral/runtime';
import type { Logger } from 'pino';
import type { FleetChallenges } from '../acme/fleet-challenges.js';
import type { DshtContentIndex } from '../adapters/content-index.js';
import { toNodeInfo } from '../adapters/node-directory.js';
import type { AdminApi } from '../admin/server.js';
import { Blocklist } from '../blocklist/blocklist.js';
import type { NameLookup, ResolvedAddresses } from '../config/resolve.js';
import type { CoralConfig } from '../config/schema.js';
import { createLogger } from '../logging/logger.js';
import { CoralMetrics } from '../metrics/metrics.js';
import type { FleetPurge } from '../purge/fleet-purge.js';
import type { PurgeLog } from '../purge/purge-log.js';
import type { DescriptorLimitResult } from '../runtime/fd-limit.js';
import type { HeapTrimmer } from '../runtime/heap-trim.js';
import type { NodeCertificates } from '../tls/certificates.js';
import type { TlsTicketKeys } from '../trust/ticket-keys.js';
import type { AdminRecords } from '../trust/admin-records.js';
import type { FleetTrust } from '../trust/fleet-keys.js';
import { FleetKeyAdmin } from '../trust/key-admin.js';
import type { MemberReports } from '../trust/member-reports.js';
import type { Listening } from './banner.js';
import { FleetJoin } from './join.js';
import type { DnsPort, DshtPort, ProxyPort, ServiceFactory } from './ports.js';
import type { PurgeGate } from './purge-gate.js';

export interface CoralNodeComponents {
  services: ServiceFactory;
  logger?: Logger;
  metrics?: CoralMetrics;
  clock?: Clock;
  /** Name lookup after the `hosts` map (default: the system resolver). */
  lookup?: NameLookup;
  /**
   * Signs and checks node-to-node HTTP with the fleet's keys (@coral/keyring's HttpPeerSigner).
   * Absent: ACME challenges are neither sent to nor taken from other members.
   */
  peerAuth?: PeerAuth;
  /**
   * The node-wide connection budget (tests: one on a manual clock). Default: one whose ceiling
   * comes from the descriptor limit (raised at start) and `connections.*`, on wall time.
   */
  connections?: ConnectionBudget;
  /** Reads and raises the open-file limit (default runtime/fd-limit.ts: libc through koffi). */
  descriptorLimit?: () => Promise<DescriptorLimitResult>;
}

/** Where each service listens, once it does. */
export interface NodeListening {
  proxy?: Listening;
  proxyTls?: Listening;
  dsht?: Listening;
  dns?: Listening;
  admin?: Listening;
}

export class NodeState {
  readonly config: CoralConfig;
  readonly addresses: ResolvedAddresses;
  readonly components: CoralNodeComponents;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: CoralMetrics;
  readonly startedAt: number;
  /** `_acme-challenge.<zone>` TXT values answered by this node's DNS server. */
  readonly challenges: InMemoryChallengeStore;
  /** The fleet keys as the admin API and SIGHUP change them (trust/key-admin.ts). */
  readonly keys = new FleetKeyAdmin(() => this.trust);
  readonly listening: NodeListening = {};
  /** Joining through the bootstrap list (resolved at start, retried until a member answers). */
  readonly join: FleetJoin;
  /** Open mode, or keyed with the fleet keyring (decided at start: trust/fleet-keys.ts). */
  trust: FleetTrust = { mode: 'open' };
  /** Every client listener's connection budget: per-client caps, timeouts, the ceiling. */
  connections!: ConnectionBudget;
  dsht!: DshtPort;
  index!: DshtContentIndex;
  directory!: NodeDirectory;
  proxy!: ProxyPort;
  dns: DnsPort | undefined;
  admin!: AdminApi;
  /** ACME DNS-01 values set through the admin API, passed on to the fleet. */
  acme!: FleetChallenges;
  /** Fleet purges: the purge log, propagation and catch-up. */
  purges!: FleetPurge;
  purgeLog: PurgeLog | undefined;
  purgeGate: PurgeGate | undefined;
  /** Quarantines this node's audit found, sent to the fleet; members' reports taken. */
  reports: MemberReports | undefined;
  /** This node's admin record and the members' (keyed mode: where peer requests go). */
  adminRecords: AdminRecords | undefined;
  heapTrimmer: HeapTrimmer | undefined;
  /** The TLS listener's certificate (configured files or the local CA); none while TLS is off. */
  certificates: NodeCertificates | undefined;
  /** The TLS listener's session-ticket keys, shared by the fleet (trust/ticket-keys.ts). */
  ticketKeys: TlsTicketKeys | undefined;
  /** Origins refused before the proxy sees the request (blocklist/gate.ts); swapped on SIGHUP. */
  blocklist = new Blocklist();
  /** The access log (`log.access`), fed one record per proxy request (start/access-log.ts). */
  accessLog: AccessLog | undefined;
  /** The live log stream behind `GET /v1/logs`. */
  logHub: LiveHub | undefined;
  /** Set once `stop()` began. */
  stopping: Promise<void> | undefined;

  constructor(config: CoralConfig, addresses: ResolvedAddresses, components: CoralNodeComponents) {
    this.config = config;
    this.addresses = addresses;
    this.components = components;
    this.clock = components.clock ?? systemClock;
    this.startedAt = this.clock.now();
    this.logger = components.logger ?? createLogger({ level: config.log.level });
    this.metrics = components.metrics ?? new CoralMetrics();
    this.challenges = new InMemoryChallengeStore({ clock: this.clock });
    this.join = new FleetJoin({
      config,
      addresses,
      clock: this.clock,
      logger: this.logger,
      lookup: components.lookup,
      stopping: () => this.stopping !== undefined,
      // Joined on a retry: catch up with the fleet's purges now.
      onJoined: () => {
        if (this.purges?.propagating) void this.purgeGate?.catchUp();
      },
    });
  }

  /** A child logger labelled with its component. */
  log(component: string): Logger {
    return this.logger.child({ component });
  }

  /** This node's id (hex of its DSHT contact's id); empty before the DSHT started. */
  get nodeId(): string {
    return this.dsht ? Buffer.from(this.dsht.contact.id).toString('hex') : '';
  }

  /** Verified live members other than this node, by id and the IP they were verified at. */
  otherMembers(): { nodeId: string; ip: string }[] {
    if (!this.dsht) return [];
    const self = this.nodeId;
    return this.dsht.members().flatMap((m) => {
      const n = toNodeInfo(m);
      const ip = n?.ipv4 ?? n?.ipv6;
      return n && ip && n.id !== self ? [{ nodeId: n.id, ip }] : [];
    });
  }

  /** Live proxies as the DNS server sees them: this node and the DSHT's verified members. */
  liveProxies(): NodeInfo[] {
    if (!this.directory) return [];
    const self = this.directory.self();
    const others: NodeInfo[] = [];
    for (const m of this.dsht.members()) {
      const n = toNodeInfo(m);
      if (n && n.id !== self.id) others.push(n);
    }
    return [self, ...others];
  }

  /**
   * Why this node may not see the members it should (fleet-wide changes with no live member are
   * then not done): isolated from the fleet's keys, or not joined yet. Undefined for a node that
   * is simply alone.
   */
  cutOff(): string | undefined {
    if (this.trust.mode === 'keyed' && this.dsht?.authState().isolated) {
      return 'this node is isolated from its fleet (its keys authenticate no traffic)';
    }
    if (!this.join.joined) return 'this node has not joined its fleet yet (no bootstrap answered)';
    return undefined;
  }

  /**
   * The authorities members address this node's admin API by (the DSHT address it is verified
   * at, as peer/requests.ts writes it), and the admin API's own host when it is a specific one.
   */
  ownAdminAuthorities(): string[] {
    const { host, port } = this.config.admin;
    const fmt = (ip: string) => `${ip.includes(':') ? `[${ip}]` : ip}:${port}`;
    const out: string[] = [];
    if (this.dsht) out.push(fmt(this.dsht.contact.ip));
    if (host !== '0.0.0.0' && host !== '::' && host !== '') out.push(fmt(host));
    return out;
  }
}
