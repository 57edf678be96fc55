/** HTTP helpers: the Host header in, the origin URL out. Pure. */
import { MAX_NAME_OCTETS, DEFAULT_PORTS } from './constants.js';
import { NamesError } from './errors.js';
import type { Origin } from './types.js';

// RFC 9110 §7.2 / RFC 3986 §3.2.2: uri-host [ ":" port ]; reg-name without percent-encoding.
const HOST_HEADER = /^(?:(\[[0-9a-f:.]+\])|([a-z0-9._~!$&'()*+,;=-]+))(?::([0-9]{1,5}))?$/i;

/**
 * Split a Host header value into name and optional port: lowercased, trailing dot dropped.
 * An IPv6 literal keeps its brackets (`[::1]`), which no zone contains. Throws
 * `NAMES_ERR_BAD_HOST_HEADER` for anything that is not `host[:port]`.
 */
export function splitHostHeader(value: string): { name: string; port?: number } {
  const m = HOST_HEADER.exec(value.trim());
  const bad = (why: string) =>
    new NamesError(
      'NAMES_ERR_BAD_HOST_HEADER',
      `malformed Host header ${JSON.stringify(value)}: ${why}`,
    );
  if (m === null) throw bad('not host[:port]');
  let name = (m[1] ?? m[2]!).toLowerCase();
  if (name.endsWith('.') && m[1] === undefined) name = name.slice(0, -1);
  if (name.length === 0 || name.length > MAX_NAME_OCTETS) throw bad('empty or too long');
  if (m[3] === undefined) return { name };
  const port = Number(m[3]);
  if (port > 65535) throw bad(`port ${port} is over 65535`);
  return { name, port };
}

/**
 * The origin URL a request to a Coralized name stands for:
 * `originUrlOf({ scheme: 'https', host: 'www.example.com', port: 8443 }, '/a?b')`
 * → `https://www.example.com:8443/a?b`. The origin is expected canonical (as `parseCoralName`
 * returns it); a request target that does not begin with `/` gets one.
 */
export function originUrlOf(origin: Origin, pathAndQuery = '/'): string {
  const path = pathAndQuery.startsWith('/') ? pathAndQuery : `/${pathAndQuery}`;
  return originText(origin) + path;
}

/** `scheme://host[:port]`, the port left out when it is the scheme's default. */
export function originText(origin: Origin): string {
  const port = origin.port === DEFAULT_PORTS[origin.scheme] ? '' : `:${origin.port}`;
  return `${origin.scheme}://${origin.host}${port}`;
}
