/**
 * The start banner's https lines: which CA to trust and a curl command that works as printed
 * (`--resolve` sends the one-label name to this node, as DNS would once the zone is delegated).
 */
import { coralizeUrlDetailed } from '@coral/names';
import type { TlsMaterial } from './certificates.js';

export function tlsBannerLines(o: {
  /** The banner's example origin (http); its https form is shown. */
  exampleOrigin: URL;
  zone: string;
  tlsPort: number;
  proxyHost: string;
  material: TlsMaterial;
}): string[] {
  const https = new URL(o.exampleOrigin.href);
  https.protocol = 'https:';
  let coralized: { url: string; name: string };
  try {
    coralized = coralizeUrlDetailed(https.href, o.zone, { tlsPort: o.tlsPort });
  } catch {
    return []; // an example origin with no one-label name: no https example
  }
  const host = o.proxyHost.includes(':') ? `[${o.proxyHost}]` : o.proxyHost;
  const resolve = `--resolve ${coralized.name}:${o.tlsPort}:${host}`;
  const ca = o.material.localCa;
  if (!ca) {
    return [
      `Over https (certificate ${o.material.certPath}):`,
      `  curl ${resolve} ${coralized.url}`,
    ];
  }
  return [
    `Over https, with this node's local development CA ${ca.caPath}`,
    `(trust it in a browser, or start Chromium with --ignore-certificate-errors-spki-list=${ca.caSpkiSha256}):`,
    `  curl --cacert ${ca.caPath} ${resolve} ${coralized.url}`,
  ];
}
