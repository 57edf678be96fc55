/**
 * One Coral node: the DSHT, the caching proxy and the DNS redirector wired together through the
 * two boundary interfaces (the DSHT adapted as the proxy's `ContentIndex` and the DNS server's
 * `NodeDirectory`), plus the admin API, metrics and logs. `CoralNode.start()` brings the services
 * up in dependency order and `stop()` takes them down in reverse, within a bound.
 */
import { join, resolve as resolvePath } from 'node:path';
import { mkdir } from 'node:fs/promises';
import { systemClock, type Clock } from '@coral/testkit';
import { InMemoryChallengeStore, type NodeDirectory, type NodeInfo } from '@coral/dnssrv';
import { toNodeInfo, type DshtAuthState } from '@coral/dsht';
import { rendezvousRank as rankAmong, type PeerAuth } from '@coral/httpprx';
import { HttpPeerSigner, KeyringError, type KeyInfo, type Keyring } from '@coral/keyring';
import { FleetChallenges } from '../acme/fleet-challenges.js';
import { Blocklist } from '../blocklist/blocklist.js';
import { blockGate } from '../blocklist/gate.js';
import { PeerAnswerAuth } from '../peer/answers.js';
import { PeerRequests } from '../peer/requests.js';
import { FleetPurge } from '../purge/fleet-purge.js';
import { PurgeLog } from '../purge/purge-log.js';
import { NodeCertificates, type TlsMaterial } from '../tls/certificates.js';
import { tlsBannerLines } from '../tls/banner.js';
import type { Logger } from 'pino';
import type {
  AdminBackend,
  DshtGetView,
  FleetKeysView,
  LocalValueView,
  NodeInfoView,
  ReadinessView,
} from '../admin/backend.js';
import { AdminApi } from '../admin/server.js';
import { fleetView, type FleetView } from '../admin/dashboard/fleet.js';
import { DshtContentIndex } from '../adapters/content-index.js';
import {
  resolveAddresses,
  resolveBootstrap,
  type BootstrapResolution,
  type NameLookup,
  type ResolvedAddresses,
} from '../config/resolve.js';
import type { CoralConfig } from '../config/schema.js';
import { CoralNodeError, FleetKeyError, StartError } from '../errors.js';
import { resolveFleetTrust, readKeyFile, type FleetTrust } from '../trust/fleet-keys.js';
import { DshtFleetMembers } from '../trust/members.js';
import { openStore } from '../storage/open-store.js';
import { createLogger } from '../logging/logger.js';
import { VERSION } from '../version.js';
import { CoralMetrics } from '../metrics/metrics.js';
import type { DnsPort, DshtPort, ProxyPort, ServiceFactory } from './ports.js';

/**
 * Bootstrap retry: first delay, doubling up to the cap, while the node has no contact. Each retry
 * resolves the bootstrap names again (the member may still be starting) and pings them.
 */
export const BOOTSTRAP_RETRY_MS = 500;
export const BOOTSTRAP_RETRY_MAX_MS = 10_000;
/**
 * Purge catch-up at start (docs/node.md "Purge"): a joined node waits this long for verified
 * members to pull the purge log from before its proxy listens...
 */
export const PURGE_STARTUP_MEMBERS_WAIT_MS = 5_000;
/** ...and /readyz waits this long for a catch-up that reached a member before it gives up. */
export const PURGE_STARTUP_SYNC_MAX_MS = 30_000;

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
}

type Listening = { host: string; port: number };

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
  /** `_acme-challenge.<zone>` TXT values answered by this node's DNS server. */
  readonly challenges: InMemoryChallengeStore;
  /** ACME DNS-01 values set through the admin API, passed on to the fleet. */
  acme!: FleetChallenges;
  /** Fleet purges: the purge log, propagation and catch-up. */
  purges!: FleetPurge;
  #purgeLog: PurgeLog | undefined;
  #purgeWaitOver = false;
  /** The purge check of readiness passed once (it is not taken back). */
  #purgeReady = false;
  #purgeWaitTimer: { cancel(): void } | undefined;
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
  #joined = false;
  #bootstrap: BootstrapResolution = { contacts: [], unresolved: [], self: false };
  #joinAttempts = 0;
  #stopping: Promise<void> | undefined;
  #retry: { cancel(): void } | undefined;
  readonly #services: ServiceFactory;
  readonly #lookup: NameLookup | undefined;
  /** Open mode, or keyed with the fleet keyring (decided at start: trust/fleet-keys.ts). */
  trust: FleetTrust = { mode: 'open' };
  readonly #peerAuth: PeerAuth | undefined;

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
    this.#lookup = components.lookup;
    this.#peerAuth = components.peerAuth;
    this.challenges = new InMemoryChallengeStore({ clock: this.#clock });
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
    this.#bootstrap = await resolveBootstrap(config, this.#selfAddresses(), this.#lookup);
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
        try {
          await dsht.start({ bootstrap: this.#bootstrap.contacts });
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
    metrics.bindMembership({ states: () => this.dsht.failureDetection()?.states });
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
    // Ready once it has a contact; a node with no bootstrap list, or that finds itself in the list
    // (a seed), is ready on its own and meets the others as they come.
    this.#joined =
      this.dsht.routes(0).length > 0 || config.bootstrap.length === 0 || this.#bootstrap.self;
    if (this.dsht.routes(0).length === 0 && this.#hasOtherMembers()) {
      this.#logJoinPending(BOOTSTRAP_RETRY_MS);
      this.#scheduleBootstrapRetry(BOOTSTRAP_RETRY_MS);
    }

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
        peers: new PeerRequests(
          {
            peerAuth: this.#peerAuth ?? peerAuth,
            answerAuth,
            self: peerSelf,
            onRefused: onPeerRefused,
            members: () => this.#otherMembers(),
            logger: purgeLogger,
          },
          { adminPort: config.admin.port },
        ),
        clock: this.#clock,
        logger: purgeLogger,
        metrics: metrics.purge,
      },
      { nodeId, syncIntervalMs: config.purge.syncIntervalMs },
    );
    await this.#purgeCatchUpAtStart();
    this.purges.start();

    await step('proxy', () => this.proxy.listen(config.proxy.port, addresses.bind.proxy));
    this.listening.proxy = { host: addresses.bind.proxy, port: config.proxy.port };
    await this.#startTls(dataDir);

    this.directory = services.directory({ config, dsht: this.dsht });

    if (config.dns.enabled) {
      // Like the proxy, the DNS server labels its own lines (component: dnssrv).
      this.dns = await step('dns', () =>
        services.dns({
          ...args,
          logger,
          directory: this.directory,
          challenges: this.challenges,
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
        logger: log('acme'),
      },
      { zone: config.zone, adminPort: config.admin.port },
    );
    this.admin = new AdminApi(
      {
        backend: this,
        metrics,
        logger: log('admin'),
        clock: this.#clock,
        acme: this.acme,
        purges: this.purges,
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
    logger.info({ nodeId, listening: this.listening }, 'coral node started');
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

  /** The addresses a bootstrap entry naming this node itself resolves to. */
  #selfAddresses(): { ips: string[]; port: number } {
    const { advertiseIp, bind } = this.addresses;
    return { ips: [...new Set([advertiseIp, bind.dsht])], port: this.config.dsht.port };
  }

  /** Bootstrap entries other than this node itself (resolved or not yet). */
  #hasOtherMembers(): boolean {
    return this.#bootstrap.contacts.length + this.#bootstrap.unresolved.length > 0;
  }

  /**
   * Say why the node has no contact yet. At `warn` while that keeps it from being ready; a seed is
   * ready already and waits for the other seeds quietly (`debug`).
   */
  #logJoinPending(retryInMs: number): void {
    const b = this.#bootstrap;
    this.logger[this.#joined ? 'debug' : 'warn'](
      {
        attempt: this.#joinAttempts,
        retryInMs,
        unresolved: b.unresolved,
        unanswered: b.contacts,
      },
      `not joined yet: ${[
        b.unresolved.length > 0
          ? `bootstrap ${b.unresolved.map((u) => `${u.entry} (${u.reason})`).join(', ')} did not resolve`
          : '',
        b.contacts.length > 0 ? `no answer from ${b.contacts.join(', ')}` : '',
      ]
        .filter(Boolean)
        .join('; ')}; retrying in ${retryInMs} ms`,
    );
  }

  #scheduleBootstrapRetry(delayMs: number): void {
    this.#retry = this.#clock.setTimeout(() => {
      void (async () => {
        if (this.#stopping) return;
        this.#joinAttempts++;
        if (this.dsht.routes(0).length === 0) {
          this.#bootstrap = await resolveBootstrap(
            this.config,
            this.#selfAddresses(),
            this.#lookup,
          );
          await Promise.all(
            this.#bootstrap.contacts.map((entry) => {
              const colon = entry.lastIndexOf(':');
              const ip = entry.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
              return this.dsht.ping({ ip, port: Number(entry.slice(colon + 1)) }).catch(() => 0);
            }),
          );
        }
        if (this.#stopping) return;
        if (this.dsht.routes(0).length > 0) {
          // A failed self-lookup still leaves the contacts the pings verified: joined, with a note.
          await this.dsht
            .join()
            .catch((err: unknown) =>
              this.logger.warn({ err }, 'self-lookup after the bootstrap pings failed'),
            );
          this.#joined = true;
          this.logger.info(
            { contacts: this.dsht.routes(0).length, attempts: this.#joinAttempts },
            'joined the fleet',
          );
          if (this.purges?.propagating) void this.#purgeCatchUp();
        } else {
          const next = Math.min(delayMs * 2, BOOTSTRAP_RETRY_MAX_MS);
          this.#logJoinPending(next);
          this.#scheduleBootstrapRetry(next);
        }
      })();
    }, delayMs);
  }

  /**
   * Graceful shutdown: stop answering DNS (clients move to other nodes), stop the proxy (in-flight
   * responses get `shutdownGraceMs`), stop the DSHT (its store is flushed), then the admin API.
   */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      this.#retry?.cancel();
      this.#purgeWaitTimer?.cancel();
      this.#wakeMembersWait?.();
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
      this.logger.info('coral node stopped');
    })();
    return this.#stopping;
  }

  /**
   * Whether purges taken while this node was away must be applied before it counts as ready: in
   * keyed mode, for a node that joins a fleet through its bootstrap list (a seed, or a node with
   * no list, is ready on its own and catches up when it meets members).
   */
  #purgeGated(): boolean {
    // A node that took part in a fleet's catch-up before (its log has cursors: a restarted seed
    // too) may have missed purges while it was down; a new node may hold a cache from before.
    return (
      this.purges.propagating &&
      (this.purges.log.hasCursors || (this.#hasOtherMembers() && !this.#bootstrap.self))
    );
  }

  /**
   * The start's purge catch-up: a node that joined its fleet pulls the purges it missed and
   * applies them before its proxy listens. Otherwise (bootstrap not answering yet) it runs when
   * the node joins, and the periodic catch-up keeps trying; /readyz waits for it up to
   * {@link PURGE_STARTUP_SYNC_MAX_MS}.
   */
  async #purgeCatchUpAtStart(): Promise<void> {
    if (!this.#purgeGated()) return;
    this.#purgeWaitTimer = this.#clock.setTimeout(() => {
      this.#purgeWaitOver = true;
      if (!this.purges.synced) {
        this.logger.warn(
          { component: 'purge', waitedMs: PURGE_STARTUP_SYNC_MAX_MS },
          'no member answered the purge catch-up: ready without it (it keeps trying)',
        );
      }
    }, PURGE_STARTUP_SYNC_MAX_MS);
    if (this.#joined) await this.#purgeCatchUp();
  }

  /**
   * Wait (up to {@link PURGE_STARTUP_MEMBERS_WAIT_MS} on the node's clock) for a verified member,
   * woken by the DSHT's contact and round-trip events, then pull the purges this node has not seen.
   */
  async #purgeCatchUp(): Promise<void> {
    await this.#waitForMembers(PURGE_STARTUP_MEMBERS_WAIT_MS);
    try {
      await this.purges.sync();
    } catch (err) {
      this.logger.warn({ err, component: 'purge' }, 'purge catch-up failed');
    }
  }

  #wakeMembersWait: (() => void) | undefined;

  #waitForMembers(ms: number): Promise<void> {
    if (this.#otherMembers().length > 0 || this.#stopping) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const check = () => {
        if (this.#otherMembers().length > 0 || this.#stopping) done();
      };
      const timer = this.#clock.setTimeout(() => done(), ms);
      const done = () => {
        timer.cancel();
        this.dsht.off('contact', check);
        this.dsht.off('rtt', check);
        if (this.#wakeMembersWait === done) this.#wakeMembersWait = undefined;
        resolve();
      };
      this.dsht.on('contact', check);
      this.dsht.on('rtt', check);
      this.#wakeMembersWait = done;
    });
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
    const l = this.listening;
    const show = (a: Listening | undefined) => (a ? `${fmtHost(a.host)}:${a.port}` : 'off');
    const origin = new URL(this.config.exampleOrigin);
    const port = origin.port ? `.${origin.port}` : '';
    const coralName = `${origin.hostname}${port}.${this.config.zone}`;
    const proxyHost = reachable(l.proxy?.host ?? '127.0.0.1', this.addresses.advertiseIp);
    const proxyUrl = `http://${fmtHost(proxyHost)}:${this.config.proxy.port}`;
    const path = origin.pathname + origin.search;
    const lines = [
      `coral-node ${VERSION}  id ${this.info().nodeId}`,
      `  proxy  http  ${show(l.proxy)}  (advertised as ${fmtHost(this.addresses.advertiseIp)}:${this.config.proxy.port})`,
      `  proxy  https ${show(l.proxyTls)}${this.certificates?.current ? `  certificate ${this.certificates.current.certPath}` : '  (no certificate: tls.cert/tls.key, or tls.localCa)'}`,
      `  dns    udp+tcp  ${show(l.dns)}  zone ${this.config.zone}`,
      `  dsht   udp   ${show(l.dsht)}  bootstrap ${this.config.bootstrap.join(', ') || '(none: first node)'}${this.#bootstrap.self ? ' (this node is a seed)' : ''}`,
      `  admin  http  ${show(l.admin)}  (try: curl http://${l.admin ? `${fmtHost(reachable(l.admin.host, '127.0.0.1'))}:${l.admin.port}` : ''}/v1/node)`,
      `  data   ${resolvePath(this.config.dataDir)}`,
      '',
      `Example Coralized fetch of ${origin.href}:`,
      `  curl -H 'Host: ${coralName}' ${proxyUrl}${path}`,
      `  curl --resolve ${coralName}:${this.config.proxy.port}:${proxyHost} http://${coralName}:${this.config.proxy.port}${path}`,
    ];
    if (l.dns) {
      lines.push(`  dig @${reachable(l.dns.host, '127.0.0.1')} -p ${l.dns.port} ${coralName} A`);
    }
    if (l.proxyTls && this.certificates?.current) {
      lines.push(
        ...tlsBannerLines({
          exampleOrigin: origin,
          zone: this.config.zone,
          tlsPort: this.config.proxy.tlsPort,
          proxyHost,
          material: this.certificates.current,
        }),
      );
    }
    lines.push(...this.#fleetBanner());
    return lines.join('\n') + '\n';
  }

  /**
   * The fleet's trust mode for the banner. A node that generated (or reuses) its key in its data
   * directory says how to join others to it: the key file's path, never the secret, which goes to
   * logs and terminals that others may read.
   */
  #fleetBanner(): string[] {
    const t = this.trust;
    if (t.mode === 'open') {
      return [
        '',
        'Fleet: OPEN (fleet.open): nothing is authenticated, anyone may join. For public',
        'experiments only; see docs/security.md.',
      ];
    }
    const keys = t.keyring.list();
    const from = {
      config: 'fleet.keys',
      keysFile: `fleet.keysFile`,
      generated: `generated now into ${t.keyFile}`,
      dataDir: t.keyFile,
    }[t.source];
    const lines = [
      '',
      `Fleet: keyed, ${keys.length} key${keys.length === 1 ? '' : 's'} (primary ${t.keyring.primaryId}) from ${from}`,
    ];
    if (t.keyFile) {
      const dsht = `${fmtHost(this.addresses.advertiseIp)}:${this.config.dsht.port}`;
      lines.push(
        'Join another node to this one (keep the key file secret; on this same machine the other',
        'node also needs its own ports and data directory, see README "A keyed fleet by hand"):',
        `  CORAL_FLEET_KEYS=$(cat ${t.keyFile}) CORAL_BOOTSTRAP=${dsht} coral-node start`,
      );
    }
    return lines;
  }

  /** The verified live members other than this node, at the address they were verified at. */
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

  // ---- fleet keys -----------------------------------------------------------------------------

  #keyringOrThrow(): Keyring {
    if (this.trust.mode === 'keyed') return this.trust.keyring;
    throw new FleetKeyError(
      'CORAL_ERR_FLEET_OPEN',
      'this node runs an open fleet (fleet.open): it has no keys. Restart it with fleet.keys to run keyed',
    );
  }

  /** A key change; a refusal of the keyring becomes a FleetKeyError (no secret in it). */
  #keyOp<T>(op: (ring: Keyring) => T): T {
    const ring = this.#keyringOrThrow();
    try {
      return op(ring);
    } catch (err) {
      if (err instanceof KeyringError) {
        throw new FleetKeyError('CORAL_ERR_FLEET_KEY_REFUSED', `${err.message} (${err.code})`, {
          cause: err,
        });
      }
      throw err;
    }
  }

  fleetKeys(): FleetKeysView {
    const t = this.trust;
    if (t.mode === 'open') return { mode: 'open', keys: [] };
    const view: FleetKeysView = { mode: 'keyed', keys: t.keyring.list(), source: t.source };
    if (t.keyFile) view.keyFile = t.keyFile;
    return view;
  }

  installKey(key: string): { id: string; keys: KeyInfo[] } {
    return this.#keyOp((ring) => ({ id: ring.install(key), keys: ring.list() }));
  }

  useKey(id: string): { keys: KeyInfo[] } {
    return this.#keyOp((ring) => {
      ring.use(id);
      return { keys: ring.list() };
    });
  }

  removeKey(id: string): { keys: KeyInfo[] } {
    return this.#keyOp((ring) => {
      ring.remove(id);
      return { keys: ring.list() };
    });
  }

  /**
   * SIGHUP: make the keyring what the (re-read) configuration says — `fleet.keys` or
   * `fleet.keysFile`, else the data directory's key file. Run-time changes made through the admin
   * API and not written to the configuration are undone. The mode (keyed or open) needs a restart.
   */
  async reloadKeys(config: CoralConfig): Promise<KeyInfo[]> {
    const ring = this.#keyringOrThrow();
    if (config.fleet.open) {
      throw new FleetKeyError(
        'CORAL_ERR_FLEET_KEY_REFUSED',
        'the configuration now says fleet.open: switching a running node to open mode needs a restart',
      );
    }
    let keys = [...config.fleet.keys];
    if (keys.length === 0 && this.trust.mode === 'keyed' && this.trust.keyFile) {
      keys = (await readKeyFile(this.trust.keyFile))?.keys ?? [];
    }
    if (keys.length === 0) {
      throw new FleetKeyError(
        'CORAL_ERR_FLEET_KEY_REQUIRED',
        'the configuration now holds no fleet key: the keys stay as they were',
      );
    }
    return this.#keyOp(() => {
      ring.replace(keys);
      return ring.list();
    });
  }

  /** Fleet-trust state: mode, key ids, drop counters by reason, isolation, members. */
  fleetAuth(): unknown {
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
      joined: this.#joined,
      proxy: this.listening.proxy !== undefined && !this.#stopping,
    };
    if (this.config.dns.enabled) checks.dns = this.listening.dns !== undefined && !this.#stopping;
    // Purges taken while this node was away are applied before it counts as ready.
    // Once passed, it stays passed: the gate is about what a node missed while it was away, and a
    // first catch-up round with a member that joined later (which writes cursors) is no reason to
    // turn a serving node away.
    checks.purgeLog =
      this.purges !== undefined &&
      (this.#purgeReady || !this.#purgeGated() || this.purges.synced || this.#purgeWaitOver);
    if (checks.purgeLog) this.#purgeReady = true;
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

  clusters(): unknown {
    const snapshot = this.dsht.snapshot() as { levels?: unknown };
    return {
      levels: snapshot.levels ?? [],
      clusters: this.dsht.clusters?.() ?? null,
      liveProxies: this.#liveProxies(),
    };
  }

  routes(level: number): unknown[] {
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
    return { values: r.values, stats: r.stats as Record<string, unknown> };
  }

  put(
    key: Uint8Array,
    value: Uint8Array,
    ttlSeconds: number,
    signal: AbortSignal,
  ): Promise<unknown> {
    return this.dsht.put(key, value, ttlSeconds, { signal });
  }

  cacheList(): Promise<unknown[]> | unknown[] {
    return this.proxy.cacheList();
  }

  async cachePurge(url: string): Promise<{ purged: boolean; withdrawn: boolean }> {
    const purged = Boolean(await this.proxy.purge(url));
    let withdrawn = false;
    try {
      await this.index.withdraw(this.#services.urlKey(url));
      withdrawn = true;
    } catch (err) {
      this.logger.warn({ err, url }, 'withdraw after purge failed');
    }
    return { purged, withdrawn };
  }

  probeCache(): unknown {
    return this.dns?.probeCache() ?? [];
  }

  dnsDecisions(): unknown {
    return this.dns?.recentDecisions() ?? [];
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

function fmtHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

/** An address a local client can connect to: a wildcard bind is reached through `fallback`. */
function reachable(host: string, fallback: string): string {
  return host === '0.0.0.0' || host === '::' ? fallback : host;
}
