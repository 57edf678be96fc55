/**
 * The start banner: where each service of a node listens, copy-paste examples of a Coralized
 * fetch (http, https when a certificate is in use, a DNS query), and the fleet's trust mode. Pure:
 * it reads a description of the running node and returns text.
 */
import { resolve as resolvePath } from 'node:path';
import type { CoralConfig } from '../config/schema.js';
import type { ResolvedAddresses } from '../config/resolve.js';
import type { TlsMaterial } from '../tls/certificates.js';
import { tlsBannerLines } from '../tls/banner.js';
import type { FleetTrust } from '../trust/fleet-keys.js';
import { VERSION } from '../version.js';

export type Listening = { host: string; port: number };

export interface BannerInput {
  config: CoralConfig;
  addresses: ResolvedAddresses;
  nodeId: string;
  listening: {
    proxy?: Listening;
    proxyTls?: Listening;
    dsht?: Listening;
    dns?: Listening;
    admin?: Listening;
  };
  /** The TLS listener's certificate, when one is in use. */
  certificate: TlsMaterial | undefined;
  /** The node found itself in its bootstrap list (a seed). */
  seed: boolean;
  trust: FleetTrust;
}

export function nodeBanner(b: BannerInput): string {
  const { config, listening: l } = b;
  const show = (a: Listening | undefined) => (a ? `${fmtHost(a.host)}:${a.port}` : 'off');
  const origin = new URL(config.exampleOrigin);
  const port = origin.port ? `.${origin.port}` : '';
  const coralName = `${origin.hostname}${port}.${config.zone}`;
  const proxyHost = reachable(l.proxy?.host ?? '127.0.0.1', b.addresses.advertiseIp);
  const proxyUrl = `http://${fmtHost(proxyHost)}:${config.proxy.port}`;
  const path = origin.pathname + origin.search;
  const lines = [
    `coral-node ${VERSION}  id ${b.nodeId}`,
    `  proxy  http  ${show(l.proxy)}  (advertised as ${fmtHost(b.addresses.advertiseIp)}:${config.proxy.port})`,
    `  proxy  https ${show(l.proxyTls)}${b.certificate ? `  certificate ${b.certificate.certPath}` : '  (no certificate: tls.cert/tls.key, or tls.localCa)'}`,
    `  dns    udp+tcp  ${show(l.dns)}  zone ${config.zone}${config.workers >= 2 && l.dns ? `  on ${config.workers} worker threads` : ''}`,
    `  dsht   udp   ${show(l.dsht)}  bootstrap ${config.bootstrap.join(', ') || '(none: first node)'}${b.seed ? ' (this node is a seed)' : ''}`,
    `  admin  http  ${show(l.admin)}  (try: curl http://${l.admin ? `${fmtHost(reachable(l.admin.host, '127.0.0.1'))}:${l.admin.port}` : ''}/v1/node)`,
    `  data   ${resolvePath(config.dataDir)}`,
    '',
    `Example Coralized fetch of ${origin.href}:`,
    `  curl -H 'Host: ${coralName}' ${proxyUrl}${path}`,
    `  curl --resolve ${coralName}:${config.proxy.port}:${proxyHost} http://${coralName}:${config.proxy.port}${path}`,
  ];
  if (l.dns) {
    lines.push(`  dig @${reachable(l.dns.host, '127.0.0.1')} -p ${l.dns.port} ${coralName} A`);
  }
  if (l.proxyTls && b.certificate) {
    lines.push(
      ...tlsBannerLines({
        exampleOrigin: origin,
        zone: config.zone,
        tlsPort: config.proxy.tlsPort,
        proxyHost,
        material: b.certificate,
      }),
    );
  }
  lines.push(...fleetLines(b));
  return lines.join('\n') + '\n';
}

/**
 * The fleet's trust mode. A node that generated (or reuses) its key in its data directory says
 * how to join others to it: the key file's path, never the secret, which goes to logs and
 * terminals that others may read.
 */
function fleetLines(b: BannerInput): string[] {
  const t = b.trust;
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
    const dsht = `${fmtHost(b.addresses.advertiseIp)}:${b.config.dsht.port}`;
    lines.push(
      'Join another node to this one (keep the key file secret; on this same machine the other',
      'node also needs its own ports and data directory, see README "A keyed fleet by hand"):',
      `  CORAL_FLEET_KEYS=$(cat ${t.keyFile}) CORAL_BOOTSTRAP=${dsht} npx coral-node start`,
      '(npx coral-node in a checkout of Coral; coral-node alone where it is installed globally)',
    );
  }
  return lines;
}

function fmtHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

/** An address a local client can connect to: a wildcard bind is reached through `fallback`. */
function reachable(host: string, fallback: string): string {
  return host === '0.0.0.0' || host === '::' ? fallback : host;
}
