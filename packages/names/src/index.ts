/**
 * @coral/names — the Coralized name codec: pure functions between origins and names under a
 * Coral zone, shared by the DNS server (dnssrv), the proxy (httpprx) and `coral-node coralize`.
 *
 * Two forms (docs/names.md has the scheme, the proof that it is unambiguous and the examples):
 *
 *   legacy      www.example.com.nyud.net          http://www.example.com
 *               www.example.com.8080.nyud.net     http://www.example.com:8080
 *   one-label   www-example-com.nyud.net          https://www.example.com
 *               www-example-com---8443.nyud.net   https://www.example.com:8443
 *               www-example-com---h.nyud.net      http://www.example.com
 *               www-example-com---h8080.nyud.net  http://www.example.com:8080
 *
 * Usage:
 *
 *   import { parseCoralName, coralizeUrl, splitHostHeader, originUrlOf } from '@coral/names';
 *
 *   const r = parseCoralName(splitHostHeader(req.headers.host).name, ['nyud.net']);
 *   if (r.kind === 'origin') fetch(originUrlOf(r, req.url));    // https://www.example.com/a.jpg
 *   coralizeUrl('https://www.example.com/a.jpg', 'nyud.net');    // https://www-example-com.nyud.net:8443/a.jpg
 */
export {
  ACME_CHALLENGE_LABEL,
  DEFAULT_PORTS,
  DEFAULT_PROXY_HTTP_PORT,
  DEFAULT_PROXY_TLS_PORT,
  HTTP_TAG,
  MAX_LABEL_OCTETS,
  MAX_NAME_OCTETS,
  ONE_LABEL_MARKER,
} from './constants.js';
export { NAMES_ERROR_CODES, NamesError, isNamesError, type NamesErrorCode } from './errors.js';
export type { Form, Origin, Scheme } from './types.js';
export { canonicalHost, isIPv4, unicodeHost } from './host.js';
export { normalizeZone } from './zone.js';
export { parseCoralName, type CoralName } from './parse.js';
export {
  coralizeHost,
  coralizeUrl,
  coralizeUrlDetailed,
  originOfUrl,
  type CoralizeHostOptions,
  type CoralizeUrlOptions,
  type CoralizedUrl,
} from './coralize.js';
export { originUrlOf, splitHostHeader } from './http.js';
