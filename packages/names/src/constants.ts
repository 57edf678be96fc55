/** Longest DNS label, in octets (RFC 1035 §2.3.4). A one-label name must fit in one. */
export const MAX_LABEL_OCTETS = 63;

/** Longest domain name in presentation form without the trailing dot (255 wire octets). */
export const MAX_NAME_OCTETS = 253;

/** The label of the ACME DNS-01 challenge name under the zone (RFC 8555 §8.4). */
export const ACME_CHALLENGE_LABEL = '_acme-challenge';

/**
 * The scheme/port marker of the one-label form: a run of exactly three hyphens, which the
 * encoding of a host never contains (see docs/names.md, "Why it is unambiguous").
 */
export const ONE_LABEL_MARKER = '---';

/** The tag after the marker that says "http origin" (`---h` = http:80, `---h8080`). */
export const HTTP_TAG = 'h';

/** Default port of the proxy's plain-http listener, put into legacy Coralized URLs. */
export const DEFAULT_PROXY_HTTP_PORT = 8090;

/** Default port of the proxy's TLS listener (`proxy.tlsPort`), put into one-label URLs. */
export const DEFAULT_PROXY_TLS_PORT = 8443;

/** The port an origin URL leaves out for each scheme. */
export const DEFAULT_PORTS = { http: 80, https: 443 } as const;
