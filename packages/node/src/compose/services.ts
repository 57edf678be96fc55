/**
 * The real services: @coral/dsht (forming its clusters, with the `DshtDirectory` adapter over it),
 * @coral/httpprx and @coral/dnssrv, built from the node's configuration. This is the only file
 * that knows their constructors and option names.
 */
import { readFileSync } from 'node:fs';
import { Dsht, LEVEL_COUNT, type ClusterSnapshot } from '@coral/dsht';
import { CoralProxy } from '@coral/httpprx';
import { DnsServer } from '@coral/dnssrv';
import type { ListenerLimits } from '@coral/connguard';
import type { CoralConfig } from '../config/schema.js';
import { DshtDirectory } from '../adapters/node-directory.js';
import { TlsError } from '../errors.js';
import { registerProxyTraffic } from '../metrics/proxy-traffic.js';
import { dnsServerOptions } from './dns-options.js';
import type { ServiceFactory } from './ports.js';

/** The real DSHT, with its clustering binding's snapshot. */
export type ClusteredDsht = Dsht & { clusters(): ClusterSnapshot };

export const realServices: ServiceFactory<ClusteredDsht> = {
  async dsht({ config, logger, metrics, bind, advertise, dataDir, service, keyring }) {
    const dsht = await Dsht.open(
      {
        bind,
        advertise: { ip: advertise },
        allowNat: config.dsht.allowNat,
        dataDir,
        service,
        levels: LEVEL_COUNT,
        clustering: { manager: { thresholdsMs: [Infinity, ...config.dsht.levelThresholdsMs] } },
        hints: true,
        open: keyring === undefined,
        maxIdsPerIp: config.dsht.maxIdsPerIp,
        auth: { isolationAfterMs: config.fleet.isolationAfterMs },
      },
      { logger, metrics: metrics.dsht, ...(keyring ? { keyring } : {}) },
    );
    const cluster = dsht.clustering!;
    return Object.assign(dsht, { clusters: () => cluster.manager.snapshot() });
  },

  directory({ config, dsht }) {
    return new DshtDirectory(
      { dsht },
      { levelThresholdsMs: [Infinity, ...config.dsht.levelThresholdsMs] },
    );
  },

  proxy({
    config,
    logger,
    metrics,
    index,
    self,
    dataDir,
    members,
    peerAuth,
    admit,
    connections,
    onQuarantine,
    onAccess,
  }) {
    const hosts: Record<string, string[]> = {};
    for (const [name, ip] of Object.entries(config.hosts)) hosts[name] = [ip];
    const p = config.proxy;
    // The metrics read the proxy at each scrape; its events go to them from the start.
    const built: { proxy?: CoralProxy } = {};
    const events = registerProxyTraffic(metrics.registry, () => built.proxy);
    const proxy = new CoralProxy(
      {
        index,
        logger,
        metrics: { ...metrics.proxy, ...events },
        ...(members ? { members } : {}),
        ...(peerAuth ? { peerAuth } : {}),
        ...(admit ? { admit } : {}),
        ...(connections ? { connections } : {}),
        ...(onQuarantine ? { onQuarantine } : {}),
        ...(onAccess ? { onAccess } : {}),
      },
      {
        zones: [config.zone],
        sites: { ...p.sites },
        dataDir,
        diskBudgetBytes: p.diskBudgetBytes,
        memoryBudgetBytes: p.memoryBudgetBytes,
        maxObjectBytes: p.maxObjectBytes,
        compress: p.compress,
        defaultTtlSeconds: p.defaultTtlSeconds,
        staleOnErrorSeconds: p.staleOnErrorSeconds,
        heuristicMaxSeconds: p.heuristicMaxSeconds,
        negativeTtlSeconds: p.negativeTtlSeconds,
        allowPrivateOrigins: config.allowPrivateOrigins,
        originCa: config.tls.originCa.map((file) => readPem(file)),
        followHttpsUpgrade: p.followHttpsUpgrade,
        hosts,
        self: { ...self },
        closeTimeoutMs: config.shutdownGraceMs,
        connections: proxyConnectionLimits(config),
        ...(p.peerTimeoutMs > 0 ? { peerTimeoutMs: p.peerTimeoutMs } : {}),
        ...(p.indexTimeoutMs > 0 ? { indexTimeoutMs: p.indexTimeoutMs } : {}),
        ...(p.peerFetchingTimeoutMs > 0 ? { peerFetchingTimeoutMs: p.peerFetchingTimeoutMs } : {}),
        peerMaxTtlSeconds: p.peerMaxTtlSeconds,
        peerVerifyWholeBytes: p.peerVerifyWholeBytes,
        auditFraction: p.auditFraction,
        auditsPerMinute: p.auditsPerMinute,
        reportsPerMinute: p.reportsPerMinute,
        quarantineSeconds: p.quarantineSeconds,
        quarantineMaxSeconds: p.quarantineMaxSeconds,
        suspectSeconds: p.suspectSeconds,
        bandwidth: {
          originBytesPerSec: p.originBytesPerSec,
          servedBytesPerSec: p.servedBytesPerSec,
        },
        ...(p.clientRateLimitPerSecond > 0
          ? { rateLimit: { perSecond: p.clientRateLimitPerSecond } }
          : {}),
      },
    );
    built.proxy = proxy;
    return proxy;
  },

  dns({ config, logger, metrics, directory, challenges, connections }) {
    return new DnsServer(
      {
        directory,
        logger,
        metrics: metrics.dns,
        ...(challenges ? { challenges } : {}),
        ...(connections ? { connections } : {}),
      },
      dnsServerOptions(config),
    );
  },
};

/** The proxy listeners' connection limits (`connections.*`). */
export function proxyConnectionLimits(config: CoralConfig): ListenerLimits {
  const c = config.connections;
  return {
    perAddress: c.perAddress,
    perPrefix: c.perPrefix,
    idleTimeoutMs: c.idleTimeoutMs,
    keepAliveTimeoutMs: c.keepAliveTimeoutMs,
    headerTimeoutMs: c.headerTimeoutMs,
    bodyTimeoutMs: c.bodyTimeoutMs,
  };
}

/** A `tls.originCa` file; read at start (a file that cannot be read stops the start). */
function readPem(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new TlsError(`cannot read tls.originCa ${file}: ${(err as Error).message}`, {
      cause: err,
    });
  }
}
