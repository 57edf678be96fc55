/**
 * One Coral node: the DSHT, the caching proxy and the DNS redirector wired together through the
 * two boundary interfaces (the DSHT adapted as the proxy's `ContentIndex` and the DNS server's
 * `NodeDirectory`), plus the admin API, metrics and logs. `CoralNode.start()` brings the services
 * up in dependency order and `stop()` takes them down in reverse, within a bound.
 */
import { join, resolve as resolvePath } from 'node:path';
import { mkdir } from 'node:fs/promises';
import { systemClock, type Clock } from '@coral/runtime';
import { ASSUMED_DESCRIPTOR_LIMIT, ConnectionBudget, connectionCeiling } from '@coral/connguard';
import {
  InMemoryChallengeStore,
  type Decision,
  type NodeDirectory,
  type NodeInfo,
  type ProbeEntry,
} from '@coral/dnssrv';
import type { Contact, DshtAuthState, KeyRejection, PutResult } from '@coral/dsht';
import { rendezvousRank as rankAmong, type CacheListEntry, type PeerAuth } from '@coral/httpprx';
import { HttpPeerSigner, type KeyInfo } from '@coral/keyring';
import { FleetChallenges } from '../acme/fleet-challenges.js';
import { Blocklist } from '../blocklist/blocklist.js';
import { blockGate } from '../blocklist/gate.js';
import { PeerAnswerAuth } from '../peer/answers.js';
import { PeerRequests } from '../peer/requests.js';
import { FleetPurge } from '../purge/fleet-purge.js';
import { PurgeLog } from '../purge/purge-log.js';
import { NodeCertificates, type TlsMaterial } from '../tls/certificates.js';
import type { Logger } from 'pino';
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
import { AdminApi } from '../admin/server.js';
import { fleetView, type FleetView } from '../admin/dashboard/fleet.js';
import { DshtContentIndex } from '../adapters/content-index.js';
import { toNodeInfo } from '../adapters/node-directory.js';
import { resolveAddresses, type NameLookup, type ResolvedAddresses } from '../config/resolve.js';
import type { CoralConfig } from '../config/schema.js';
import { CoralNodeError, StartError } from '../errors.js';
import { resolveFleetTrust, type FleetTrust } from '../trust/fleet-keys.js';
import { FleetKeyAdmin } from '../trust/key-admin.js';
import { DshtFleetMembers } from '../trust/members.js';
import { AdminRecords } from '../trust/admin-records.js';
import { MemberReports } from '../trust/member-reports.js';
import { openStore } from '../storage/open-store.js';
import { createLogger } from '../logging/logger.js';
import { VERSION } from '../version.js';
import { nodeBanner, type Listening } from './banner.js';
import { FleetJoin } from './join.js';
import { PurgeGate } from './purge-gate.js';
import { startHeapTrim, type HeapTrimmer } from '../runtime/heap-trim.js';
import { raiseDescriptorLimit, type DescriptorLimitResult } from '../runtime/fd-limit.js';
import { CoralMetrics } from '../metrics/metrics.js';
import type { DnsPort, DshtPort, ProxyPort, ServiceFactory } from './ports.js';
import { DnsWorkers } from '../workers/dns-workers.js';

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

export class CoralNode implements AdminBackend {
  readonly config: CoralConfig;
  readonly logger: Logger;
  readonly metrics: CoralMetrics;
  readonly addresses: ResolvedAddresses;
  readonly #clock: Clock;
  readonly #startedAt: number;
  dsht!: DshtPort;
  index!: DshtContentIndex;
  directory!: NodeDirectory;
  proxy!: ProxyPort;
  dns: DnsPort | undefined;
  admin!: AdminApi;
  /** Every client listener's connection budget: per-client caps, timeouts, the ceiling. */
  connections!: ConnectionBudget;
  readonly #components: CoralNodeComponents;
  /** `_acme-challenge.<zone>` TXT values answered by this node's DNS server. */
  readonly challenges: InMemoryChallengeStore;
  /** ACME DNS-01 values set through the admin API, passed on to the fleet. */
  acme!: FleetChallenges;
  /** Fleet purges: the purge log, propagation and catch-up. */
  purges!: FleetPurge;
  #purgeLog: PurgeLog | undefined;
  /** Quarantines this node's audit found, sent to the fleet; members' reports taken. */
  #reports: MemberReports | undefined;
  #purgeGate: PurgeGate | undefined;
  #heapTrimmer: HeapTrimmer | undefined;
  /** This node's admin record and the members' (keyed mode: where peer requests go). */
  #adminRecords: AdminRecords | undefined;
  /** Origins refused before the proxy sees the request (blocklist/gate.ts); swapped on SIGHUP. */
  #blocklist = new Blocklist();
  readonly listening: {
    proxy?: Listening;
    proxyTls?: Listening;
    dsht?: Listening;
    dns?: Listening;
    admin?: Listening;
  } = {};
  /** The TLS listener's certificate (configured files or the local CA); none while TLS is off. */
  certificates: NodeCertificates | undefined;
  readonly #join: FleetJoin;
  #stopping: Promise<void> | undefined;
  readonly #services: ServiceFactory;
  /** Open mode, or keyed with the fleet keyring (decided at start: trust/fleet-keys.ts). */
  trust: FleetTrust = { mode: 'open' };
  readonly #peerAuth: PeerAuth | undefined;
  readonly #keys = new FleetKeyAdmin(() => this.trust);

  private constructor(
    config: CoralConfig,
    addresses: ResolvedAddresses,
    components: CoralNodeComponents,
  ) {
    this.config = config;
    this.addresses = addresses;
    this.#clock = components.clock ?? systemClock;
    this.#startedAt = this.#clock.now();
    this.logger = components.logger ?? createLogger({ level: config.log.level });
    this.metrics = components.metrics ?? new CoralMetrics();
    this.#services = components.services;
    this.#components = components;
    this.#peerAuth = components.peerAuth;
    this.challenges = new InMemoryChallengeStore({ clock: this.#clock });
    this.#join = new FleetJoin({
      config,
      addresses,
      clock: this.#clock,
      logger: this.logger,
      lookup: components.lookup,
      stopping: () => this.#stopping !== undefined,
      onJoined: () => {
        if (this.purges?.propagating) void this.#purgeGate?.catchUp();
      },
    });
  }

  /**
   * Start every service of a node. Throws {@link StartError} (after closing whatever had started)
   * when one cannot start, for instance because its port is taken.
   */
  static async start(config: CoralConfig, components: CoralNodeComponents): Promise<CoralNode> {
    const addresses = await resolveAddresses(config, components.lookup);
    const node = new CoralNode(config, addresses, components);
    try {
      await node.#start();
    } catch (err) {
      await node.stop().catch(() => undefined);
      throw err;
    }
    return node;
  }

  async #start(): Promise<void> {
    const services = this.#services;
    const { config, addresses, logger, metrics } = this;
    const log = (component: string) => logger.child({ component });
    const dataDir = resolvePath(config.dataDir);
    await step('data directory', () => mkdir(dataDir, { recursive: true }));
    const storage = {
      dataDir,
      logger: log('storage'),
      metrics: metrics.storage,
      clock: this.#clock,
    };

    this.connections = await this.#connectionBudget();

    // Keyed (the default) or open, before anything listens: a joining node with no key stops here.
    this.trust = await step('fleet keys', () => resolveFleetTrust(config, dataDir));
    const keyring = this.trust.mode === 'keyed' ? this.trust.keyring : undefined;
    if (this.trust.mode === 'keyed' && this.trust.keyFileExposed) {
      logger.warn(
        { keyFile: this.trust.keyFile },
        'the fleet key file is readable by other users: chmod 600 it',
      );
    }
    keyring?.on('change', (c) =>
      logger.info(
        { change: c.kind, keyId: c.id, primaryKeyId: c.primaryId, keyIds: c.ids },
        'fleet keys changed',
      ),
    );

    // One identity: the DSHT contact carries the advertised address, and everything else (holder
    // records, DNS answers, the banner) takes it from that contact.
    const bootstrap = await this.#join.resolve();
    const args = { config, metrics };
    this.dsht = await step('dsht', () =>
      openStore({ ...storage, store: 'dsht', dir: join(dataDir, 'dsht') }, async () => {
        const dsht = await services.dsht({
          ...args,
          logger: log('dsht'),
          bind: { host: addresses.bind.dsht, port: config.dsht.port },
          advertise: addresses.advertiseIp,
          dataDir: join(dataDir, 'dsht'),
          service: {
            httpPort: config.proxy.port,
            dnsPort: config.dns.enabled ? config.dns.port : undefined,
            region: config.region,
          },
          ...(keyring ? { keyring } : {}),
        });
        // Before the bootstrap pings: their key notices come back while start() waits.
        dsht.on('key-rejected', (r) => this.#keyRejected(r));
        try {
          await dsht.start({ bootstrap: bootstrap.contacts });
        } catch (err) {
          await dsht.stop().catch(() => undefined);
          throw err;
        }
        return dsht;
      }),
    );
    const contact = this.dsht.contact;
    const nodeId = Buffer.from(contact.id).toString('hex');
    this.dsht.on('isolated', (state) => this.#isolationChanged(state));
    for (const event of ['suspect', 'dead', 'left', 'alive'] as const) {
      this.dsht.on(`member-${event}`, (m) => {
        metrics.memberEvent(event);
        const entry = { member: m.id, ip: m.ip, port: m.port, incarnation: m.incarnation };
        if (event === 'dead') logger.warn(entry, 'fleet member dead: no answer to probes');
        else if (event === 'left') logger.info(entry, 'fleet member left');
        else if (event === 'alive') logger.info(entry, 'fleet member back');
        else logger.debug(entry, 'fleet member suspect');
      });
    }
    metrics.bindMembership({
      states: () => this.dsht.failureDetection()?.states,
      tableSizes: () =>
        Array.from({ length: this.dsht.levels }, (_, l) => this.dsht.routes(l).length),
    });
    metrics.bindTrust({
      counters: () => ({ ...this.dsht.authState().counters }),
      isolated: () => this.dsht.authState().isolated,
      keys: () => keyring?.size ?? 0,
    });
    this.listening.dsht = { host: addresses.bind.dsht, port: contact.port };
    if (addresses.bind.dsht !== contact.ip) {
      logger.warn(
        { bind: addresses.bind.dsht, advertise: contact.ip },
        'the DSHT sends from its bind address but advertises another one: fleet members drop ' +
          'its datagrams unless they run with dsht.allowNat (a NAT or forwarder in front of it)',
      );
    }
    this.#join.started(this.dsht);

    const self = { nodeId, ip: contact.ip, httpPort: config.proxy.port };
    this.index = new DshtContentIndex(
      {
        dsht: this.dsht,
        clock: this.#clock,
        logger: log('index'),
        metrics: metrics.index,
        rank: (key) => rendezvousRank(nodeId, key, this.#liveProxies()),
      },
      {
        self,
        claimOnMiss: config.index.claims,
        claimStepMs: config.index.claimStepMs,
        claimRankCap: config.index.claimRankCap,
      },
    );
    // Peer fetches go only to the DSHT's verified members, at the address each was verified at;
    // in keyed mode holder records are authenticated and peer requests are signed and checked.
    const members = new DshtFleetMembers(this.dsht, keyring !== undefined, {
      designated: config.index.designated,
      clock: this.#clock,
    });
    const peerAuth = keyring ? new HttpPeerSigner({ keyring, clock: this.#clock }) : undefined;
    // Node-to-node admin requests (purges, ACME): answers sealed with the same keys, and only
    // requests addressed to this node's own admin address are taken (peer/requests.ts).
    const answerAuth = keyring ? new PeerAnswerAuth(keyring) : undefined;
    const peerSelf = () => this.#ownAdminAuthorities(config.admin.host, config.admin.port);
    const onPeerRefused = (reason: string) => metrics.peerRefused(reason);
    // Members reach this node's admin API at the port its record says (trust/admin-records.ts),
    // and it reaches theirs at the ports their records say.
    const adminRecords = new AdminRecords(
      { dsht: this.dsht, clock: this.#clock, logger: log('admin-records') },
      { nodeId, adminPort: config.admin.port },
    );
    if (keyring) {
      this.#adminRecords = adminRecords;
      adminRecords.start();
    }
    const adminPorts = adminRecords.port.bind(adminRecords);
    const cutOff = () => this.#cutOff();
    // Node-to-node requests on the members' admin ports (purges, quarantine reports).
    const peerRequests = (peerLogger: Logger) =>
      new PeerRequests({
        peerAuth: this.#peerAuth ?? peerAuth,
        answerAuth,
        self: peerSelf,
        onRefused: onPeerRefused,
        members: () => this.#otherMembers(),
        adminPorts,
        logger: peerLogger,
      });
    this.proxy = await step('proxy', () =>
      openStore({ ...storage, store: 'cache', dir: join(dataDir, 'cache') }, async () => {
        const proxy = await services.proxy({
          ...args,
          logger, // the proxy labels its lines itself (component: httpprx)
          index: this.index,
          self,
          dataDir: join(dataDir, 'cache'),
          members,
          ...(peerAuth ? { peerAuth } : {}),
          // A fetch a purge overtook is not stored (the purge log is opened just after the proxy).
          admit: (c) => (this.purges ? this.purges.admits(c) : true),
          connections: this.connections,
          // The audit quarantined a member: every other member hears of it (and checks it).
          onQuarantine: (report) => void this.#reports?.send(report),
        });
        try {
          await proxy.open();
        } catch (err) {
          await proxy.close().catch(() => undefined);
          throw err;
        }
        return proxy;
      }),
    );
    const trustLogger = log('trust');
    this.#reports = new MemberReports(
      {
        peers: peerRequests(trustLogger),
        proxy: this.proxy,
        logger: trustLogger,
        metrics,
      },
      { nodeId },
    );
    metrics.bindQuarantine(() => {
      const q = this.proxy.quarantine?.();
      return { quarantined: q?.quarantined.length ?? 0, suspects: q?.suspects.length ?? 0 };
    });
    // Blocked origins are refused before the proxy's handler: wrap it before it is mounted.
    this.#blocklist = new Blocklist(config.proxy.blocklist);
    this.proxy.handler = blockGate(this.proxy.handler, {
      zones: [config.zone],
      sites: new Map(Object.entries(config.proxy.sites).map(([h, u]) => [h, new URL(u).hostname])),
      blocklist: () => this.#blocklist,
      onBlocked: () => metrics.purge.blocked(),
    });
    await this.#dropBlocked(this.#blocklist);

    // The purge log, then the catch-up with the fleet's purges before clients are served.
    const purgeDir = join(dataDir, 'purge');
    let purgeLogOpens = 0;
    this.#purgeLog = await step('purge log', () =>
      openStore({ ...storage, store: 'purge', dir: purgeDir }, async () => {
        const purgeLog = new PurgeLog({
          dir: purgeDir,
          maxEntries: config.purge.logMaxEntries,
          retentionMs: config.purge.logRetentionSeconds * 1000,
        });
        // A second open is on an empty directory after the corrupt one was moved aside.
        await purgeLog.open(this.#clock.now(), { replaced: ++purgeLogOpens > 1 });
        return purgeLog;
      }),
    );
    const purgeLogger = log('purge');
    this.purges = new FleetPurge(
      {
        store: this.proxy,
        log: this.#purgeLog,
        peers: peerRequests(purgeLogger),
        clock: this.#clock,
        logger: purgeLogger,
        metrics: metrics.purge,
        cutOff,
      },
      { nodeId, syncIntervalMs: config.purge.syncIntervalMs },
    );
    this.#purgeGate = new PurgeGate({
      purges: this.purges,
      join: this.#join,
      dsht: this.dsht,
      otherMembers: () => this.#otherMembers().length,
      stopping: () => this.#stopping !== undefined,
      clock: this.#clock,
      logger,
    });
    await this.#purgeGate.atStart();
    this.purges.start();

    await step('proxy', () => this.proxy.listen(config.proxy.port, addresses.bind.proxy));
    this.listening.proxy = { host: addresses.bind.proxy, port: config.proxy.port };
    await this.#startTls(dataDir);
    metrics.timeProxy(
      [this.listening.proxy, this.listening.proxyTls].filter((l) => l !== undefined),
    );

    this.directory = services.directory({ config, dsht: this.dsht });

    if (config.dns.enabled) {
      // Like the proxy, the DNS server labels its own lines (component: dnssrv).
      this.dns = await step('dns', () =>
        config.workers >= 2
          ? // workers ≥ 2: one DNS server per worker thread on the same port (workers/).
            new DnsWorkers(
              {
                directory: this.directory,
                challenges: this.challenges,
                clock: this.#clock,
                logger: log('workers'),
                metrics: metrics.workers,
              },
              { config },
            )
          : services.dns({
              ...args,
              logger,
              directory: this.directory,
              challenges: this.challenges,
              connections: this.connections,
            }),
      );
      await step('dns', () =>
        this.dns!.listen({ port: config.dns.port, host: addresses.bind.dns }),
      );
      this.listening.dns = { host: addresses.bind.dns, port: config.dns.port };
    }

    this.acme = new FleetChallenges(
      {
        store: this.challenges,
        // The fleet's signer (keyed mode) unless the caller gave one.
        peerAuth: this.#peerAuth ?? peerAuth,
        answerAuth,
        self: peerSelf,
        onRefused: onPeerRefused,
        members: () => this.#otherMembers(),
        adminPorts,
        cutOff,
        logger: log('acme'),
      },
      { zone: config.zone },
    );
    this.admin = new AdminApi(
      {
        backend: this,
        metrics,
        logger: log('admin'),
        clock: this.#clock,
        acme: this.acme,
        purges: this.purges,
        members: {
          reports: this.#reports,
          view: {
            quarantine: () => this.proxy.quarantine?.() ?? { quarantined: [], suspects: [] },
          },
        },
        connections: this.connections,
        ...(answerAuth ? { peerAnswers: answerAuth } : {}),
      },
      {
        token: config.admin.token,
        publicMetrics: config.admin.publicMetrics,
        dashboard: {
          proxy: {
            listening: this.listening.proxy,
            zones: [config.zone],
            sites: config.proxy.sites,
          },
        },
      },
    );
    this.listening.admin = await step('admin', () =>
      this.admin.listen(config.admin.port, addresses.bind.admin),
    );
    this.#heapTrimmer = await startHeapTrim({
      intervalMs: config.heapTrimIntervalMs,
      clock: this.#clock,
      logger: log('heap-trim'),
      onTrim: (released) => metrics.heapTrimmed(released),
      onError: (code) => metrics.resourceError('heap-trim', code),
    });
    logger.info({ nodeId, listening: this.listening }, 'coral node started');
  }

  /**
   * Raise the soft open-file limit to the hard one, say what was done, and derive the node-wide
   * connection ceiling from the limit in effect (`connections.max` / `connections.reserve`
   * override it). A failure is logged and the common soft limit (1,024) assumed.
   */
  async #connectionBudget(): Promise<ConnectionBudget> {
    const { config, logger, metrics } = this;
    const log = logger.child({ component: 'connections' });
    const fd = await (this.#components.descriptorLimit ?? raiseDescriptorLimit)();
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
      this.#components.connections ??
      new ConnectionBudget({ events: metrics.connections }, { ceiling });
    metrics.bindConnections(() => budget.stats());
    return budget;
  }

  /**
   * The TLS listener, when a certificate is available: `tls.cert`/`tls.key`, else the local
   * development CA's (created on first start). Its renewals and SIGHUP reloads are swapped into
   * the running listener.
   */
  async #startTls(dataDir: string): Promise<void> {
    const { config, addresses } = this;
    const tlsLog = this.logger.child({ component: 'tls' });
    const certificates = new NodeCertificates(
      {
        clock: this.#clock,
        logger: tlsLog,
        onChange: (m) => {
          this.proxy.setTlsCertificate?.({ cert: m.certPem, key: m.keyPem });
          tlsLog.info(
            { cert: m.certPath, notAfter: new Date(m.notAfter).toISOString() },
            'TLS certificate replaced',
          );
        },
      },
      {
        zone: config.zone,
        dataDir,
        cert: config.tls.cert,
        key: config.tls.key,
        localCa: config.tls.localCa,
      },
    );
    const material = await step('tls', () => certificates.load());
    this.certificates = certificates;
    if (!material) return;
    if (!this.proxy.listenTls) {
      tlsLog.warn('this proxy has no TLS listener: serving plain http only');
      return;
    }
    await step('proxy tls', () =>
      this.proxy.listenTls!({
        cert: material.certPem,
        key: material.keyPem,
        port: config.proxy.tlsPort,
        host: addresses.bind.proxy,
      }),
    );
    this.listening.proxyTls = { host: addresses.bind.proxy, port: config.proxy.tlsPort };
  }

  /**
   * SIGHUP with `workers` ≥ 2: every worker thread reloads (each answers; a worker that fails keeps
   * its old state and is logged). Nothing to do with one thread.
   */
  async reloadWorkers(): Promise<void> {
    if (this.dns instanceof DnsWorkers) await this.dns.reload();
  }

  /**
   * Read the TLS certificate again (SIGHUP): new handshakes get the new one, open connections are
   * kept. A file that cannot be used is logged and the current certificate stays.
   */
  async reloadTls(): Promise<TlsMaterial | undefined> {
    if (!this.certificates || !this.listening.proxyTls) return undefined;
    try {
      return await this.certificates.reload();
    } catch (err) {
      this.logger.error({ err }, 'TLS reload failed: the current certificate stays in use');
      return undefined;
    }
  }

  /**
   * Graceful shutdown: stop answering DNS (clients move to other nodes), stop the proxy (in-flight
   * responses get `shutdownGraceMs`), stop the DSHT (its store is flushed), then the admin API.
   */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      this.#join.cancel();
      this.#purgeGate?.stop();
      this.#adminRecords?.stop();
      this.#heapTrimmer?.stop();
      this.certificates?.stop();
      // Each service bounds its own close by shutdownGraceMs; this outer bound only catches a hang.
      const grace = this.config.shutdownGraceMs + 1_000;
      const bounded = async (name: string, fn: () => Promise<unknown>) => {
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<void>((resolve) => {
          timer = setTimeout(() => {
            this.logger.warn({ service: name, graceMs: grace }, 'shutdown step took too long');
            resolve();
          }, grace);
        });
        try {
          await Promise.race([fn(), timeout]);
        } catch (err) {
          this.logger.warn({ err, service: name }, 'error while stopping');
        } finally {
          clearTimeout(timer);
        }
      };
      // First the LEAVE: members stop naming this node in DNS answers, choosing it as designated
      // fetcher and asking it for peer copies now, while it still serves what is under way.
      if (this.dsht) await bounded('dsht leave', () => this.dsht.leave());
      if (this.dns) await bounded('dns', () => this.dns!.close());
      if (this.purges) await bounded('purge', () => this.purges.stop());
      if (this.proxy) await bounded('proxy', () => this.proxy.close());
      if (this.#purgeLog) await bounded('purge log', () => this.#purgeLog!.close());
      if (this.dsht) await bounded('dsht', () => this.dsht.stop());
      if (this.admin) await bounded('admin', () => this.admin.close());
      this.metrics.close();
      this.logger.info('coral node stopped');
    })();
    return this.#stopping;
  }

  /** The blocklist in use (canonical domains). */
  blocklist(): { domains: string[] } {
    return { domains: this.#blocklist.domains() };
  }

  /**
   * SIGHUP: use the (re-read) configuration's blocklist from the next request on (open
   * connections stay), and drop what the cache holds of newly blocked origins.
   */
  async reloadBlocklist(
    config: CoralConfig,
  ): Promise<{ domains: string[]; added: string[]; removed: string[]; dropped: number }> {
    const before = new Set(this.#blocklist.domains());
    const next = new Blocklist(config.proxy.blocklist);
    this.#blocklist = next;
    const domains = next.domains();
    const added = domains.filter((d) => !before.has(d));
    const removed = [...before].filter((d) => !domains.includes(d));
    const dropped = added.length > 0 ? await this.#dropBlocked(new Blocklist(added)) : 0;
    return { domains, added, removed, dropped };
  }

  /** Drop stored responses of blocked origins (they are refused anyway: free the space). */
  async #dropBlocked(list: Blocklist): Promise<number> {
    if (list.size === 0) return 0;
    const dropped = await this.proxy.purgeWhere((m) => {
      try {
        return list.match(new URL(m.url).hostname) !== undefined;
      } catch {
        return false;
      }
    });
    if (dropped > 0) {
      this.logger.info(
        { component: 'blocklist', dropped },
        'dropped cached responses of blocked origins',
      );
    }
    return dropped;
  }

  /** Where each service listens and a copy-paste example of a Coralized fetch. */
  banner(): string {
    return nodeBanner({
      config: this.config,
      addresses: this.addresses,
      nodeId: this.info().nodeId,
      listening: this.listening,
      certificate: this.certificates?.current,
      seed: this.#join.seed,
      trust: this.trust,
    });
  }

  /**
   * The authorities members address this node's admin API by (the DSHT address it is verified
   * at, as peer/requests.ts writes it), and the admin API's own host when it is a specific one.
   */
  #ownAdminAuthorities(adminHost: string, port: number): string[] {
    const fmt = (ip: string) => `${ip.includes(':') ? `[${ip}]` : ip}:${port}`;
    const out: string[] = [];
    if (this.dsht) out.push(fmt(this.dsht.contact.ip));
    if (adminHost !== '0.0.0.0' && adminHost !== '::' && adminHost !== '') out.push(fmt(adminHost));
    return out;
  }

  /**
   * Why this node may not see the members it should (fleet-wide changes with no live member are
   * then not done): isolated from the fleet's keys, or not joined yet. Undefined for a node that
   * is simply alone.
   */
  #cutOff(): string | undefined {
    if (this.trust.mode === 'keyed' && this.dsht?.authState().isolated) {
      return 'this node is isolated from its fleet (its keys authenticate no traffic)';
    }
    if (!this.#join.joined) return 'this node has not joined its fleet yet (no bootstrap answered)';
    return undefined;
  }

  #otherMembers(): { nodeId: string; ip: string }[] {
    if (!this.dsht) return [];
    const self = Buffer.from(this.dsht.contact.id).toString('hex');
    return this.dsht.members().flatMap((m) => {
      const n = toNodeInfo(m);
      const ip = n?.ipv4 ?? n?.ipv6;
      return n && ip && n.id !== self ? [{ nodeId: n.id, ip }] : [];
    });
  }

  /** Live proxies as the DNS server sees them: this node and the DSHT's verified members. */
  #liveProxies(): NodeInfo[] {
    if (!this.directory) return [];
    const self = this.directory.self();
    const others: NodeInfo[] = [];
    for (const m of this.dsht.members()) {
      const n = toNodeInfo(m);
      if (n && n.id !== self.id) others.push(n);
    }
    return [self, ...others];
  }

  #isolationChanged(state: DshtAuthState): void {
    if (state.isolated) {
      this.logger.error(
        { component: 'fleet', unknownKeyIds: state.unknownKeyIds, keyIds: state.keyIds },
        `this node is isolated from its fleet: ${state.reason ?? 'no authenticated DSHT traffic'}. ` +
          "Give it the fleet's current key (coral-node keys install, or fleet.keys and SIGHUP); " +
          '/readyz answers not ready until it authenticates traffic again',
      );
    } else {
      this.logger.warn(
        { component: 'fleet', keyIds: state.keyIds },
        'this node is no longer isolated: it authenticates DSHT traffic again',
      );
    }
  }

  /**
   * A peer's key notice (at most one report a minute): it does not accept this node's key id. The
   * notice is unauthenticated — a hint, which changes nothing — so this is a log line (and the
   * `coral_fleet_key_rejected_total` metric) only.
   */
  #keyRejected(r: KeyRejection): void {
    const by = r.from.ip.includes(':')
      ? `[${r.from.ip}]:${r.from.port}`
      : `${r.from.ip}:${r.from.port}`;
    const entry = { component: 'fleet', keyId: r.keyId, answeredBy: by, notices: r.notices };
    if (r.fleetHeard) {
      this.logger.warn(
        entry,
        `fleet member ${by} does not accept this node's key id ${r.keyId}: it lacks this key ` +
          '(a rotation step missed there?); this node still authenticates the rest of its fleet',
      );
    } else {
      this.logger.error(
        entry,
        `the fleet does not accept this node's key id ${r.keyId} (answered by ${by}): check ` +
          "CORAL_FLEET_KEYS (fleet.keys or fleet.keysFile) — it must hold the fleet's current key",
      );
    }
  }

  // ---- fleet keys (trust/key-admin.ts) ------------------------------------------------------

  fleetKeys(): FleetKeysView {
    return this.#keys.view();
  }

  installKey(key: string): { id: string; keys: KeyInfo[] } {
    return this.#keys.install(key);
  }

  useKey(id: string): { keys: KeyInfo[] } {
    return this.#keys.use(id);
  }

  removeKey(id: string): { keys: KeyInfo[] } {
    return this.#keys.remove(id);
  }

  /** SIGHUP: make the keyring what the (re-read) configuration says (see FleetKeyAdmin.reload). */
  reloadKeys(config: CoralConfig): Promise<KeyInfo[]> {
    return this.#keys.reload(config);
  }

  /** Fleet-trust state: mode, key ids, drop counters by reason, isolation, members. */
  fleetAuth(): FleetAuthView {
    const state = this.dsht.authState();
    return { ...state, members: this.dsht.members() };
  }

  /** One DSHT PING to `address` (ip:port): its RTT in ms. */
  ping(
    address: { ip: string; port: number },
    signal: AbortSignal,
    retries?: number,
  ): Promise<number> {
    return this.dsht.ping(address, { signal, ...(retries !== undefined ? { retries } : {}) });
  }

  // ---- AdminBackend -------------------------------------------------------------------------

  get levels(): number {
    return this.dsht?.levels ?? 1;
  }

  info(): NodeInfoView {
    const nodeId = this.dsht ? Buffer.from(this.dsht.contact.id).toString('hex') : '';
    const view: NodeInfoView = {
      nodeId,
      version: VERSION,
      zone: this.config.zone,
      advertiseIp: this.addresses.advertiseIp,
      startedAt: new Date(this.#startedAt).toISOString(),
      uptimeSeconds: Math.round((this.#clock.now() - this.#startedAt) / 1000),
      services: {
        proxy: this.listening.proxy ?? null,
        proxyTls: this.listening.proxyTls ?? null,
        dsht: this.listening.dsht ?? null,
        dns: this.listening.dns ?? null,
        admin: this.listening.admin ?? null,
      },
    };
    if (this.config.region) view.region = this.config.region;
    return view;
  }

  readiness(): ReadinessView {
    const checks: Record<string, boolean> = {
      dsht: this.listening.dsht !== undefined && !this.#stopping,
      joined: this.#join.joined,
      proxy: this.listening.proxy !== undefined && !this.#stopping,
    };
    if (this.config.dns.enabled) checks.dns = this.listening.dns !== undefined && !this.#stopping;
    // Purges taken while this node was away are applied before it counts as ready.
    // Once passed, it stays passed: the gate is about what a node missed while it was away, and a
    // first catch-up round with a member that joined later (which writes cursors) is no reason to
    // turn a serving node away.
    checks.purgeLog = this.#purgeGate?.ready() ?? false;
    const view: ReadinessView = { ready: false, checks };
    if (this.trust.mode === 'keyed' && this.dsht) {
      // Keyed: not isolated (it still authenticates its fleet's traffic).
      const auth = this.dsht.authState();
      checks.fleetKeys = !auth.isolated;
      if (auth.isolated) view.reason = `isolated from the fleet: ${auth.reason ?? ''}`.trim();
    }
    view.ready = Object.values(checks).every(Boolean);
    return view;
  }

  clusters(): ClustersView {
    return {
      levels: this.dsht.snapshot().levels,
      clusters: this.dsht.clusters?.() ?? null,
      liveProxies: this.#liveProxies(),
    };
  }

  routes(level: number): Contact[] {
    return this.dsht.routes(level);
  }

  localGet(key: Uint8Array): LocalValueView[] {
    const byValue = new Map<string, LocalValueView>();
    for (let level = 0; level < this.levels; level++) {
      for (const value of this.dsht.localGet(key, level)) {
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
    const r = await this.dsht.get(key, { signal });
    return { values: r.values, stats: r.stats };
  }

  put(
    key: Uint8Array,
    value: Uint8Array,
    ttlSeconds: number,
    signal: AbortSignal,
  ): Promise<PutResult> {
    return this.dsht.put(key, value, ttlSeconds, { signal });
  }

  cacheList(): Promise<CacheListEntry[]> {
    return this.proxy.cacheList();
  }

  async cachePurge(url: string): Promise<{ purged: boolean; withdrawn: boolean }> {
    const purged = await this.proxy.purge(url);
    let withdrawn = false;
    try {
      await this.index.withdraw(this.#services.urlKey(url));
      withdrawn = true;
    } catch (err) {
      this.logger.warn({ err, url }, 'withdraw after purge failed');
    }
    return { purged, withdrawn };
  }

  async probeCache(): Promise<ProbeEntry[]> {
    return (await this.dns?.probeCache()) ?? [];
  }

  async dnsDecisions(): Promise<Decision[]> {
    return (await this.dns?.recentDecisions()) ?? [];
  }

  fleet(): FleetView {
    return fleetView(
      this.dsht,
      this.#liveProxies().map((n) => n.id),
      this.#clock.now(),
      this.dsht.members(),
    );
  }
}

/**
 * This node's place among the live proxies in the rendezvous (highest random weight) order for
 * `key` that also designates its fetcher (@coral/httpprx): 0 when no live node scores higher.
 * Every node computes the same order from the same set.
 */
export function rendezvousRank(selfId: string, key: Uint8Array, live: { id: string }[]): number {
  return rankAmong(
    selfId,
    key,
    live.map((n) => n.id),
  );
}

async function step<T>(service: string, fn: () => Promise<T> | T): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    // Errors that already say what went wrong (a data directory in use, ...) keep their own code.
    throw err instanceof CoralNodeError ? err : new StartError(service, err);
  }
}
