/**
 * The start banner's https lines: which CA to trust and a curl command that works as printed
 * (`--resolve` sends the one-label name to this node, as DNS would once the zone is delegated).
 * The name is the one-label name of the example origin itself, an http origin
 * (`http://www.mysite.test:8080/` → `www-mysite-test---h8080`, docs/names.md): the client speaks
 * TLS to the proxy, the proxy plain http to the origin. Naming the https origin of the same host
 * instead would send the proxy to a TLS port the origin may not have.
 */
import { coralizeUrlDetailed } from '@coral/names';
import type { TlsMaterial } from './certificates.js';

export function tlsBannerLines(o: {
  /** The banner's example origin (http): its one-label name is shown, served over TLS. */
  exampleOrigin: URL;
  zone: string;
  tlsPort: number;
  proxyHost: string;
  material: TlsMaterial;
}): string[] {
  let coralized: { url: string; name: string };
  try {
    coralized = coralizeUrlDetailed(o.exampleOrigin.href, o.zone, {
      tlsPort: o.tlsPort,
      form: 'one-label',
    });
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
