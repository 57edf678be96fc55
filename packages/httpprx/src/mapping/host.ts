/** Host header values (RFC 9110 §7.2) as a pure function. */
import { ProxyError } from '../errors.js';

/**
 * Split a Host header value (RFC 9110 §7.2: `uri-host [ ":" port ]`) into name and optional port;
 * lowercases and drops a trailing dot. The name is a DNS-style name (letters, digits, `.`, `-`,
 * `_`); anything else (IPv6 literals, which name no Coralized host or site, userinfo, paths,
 * commas of a repeated field, spaces) is `CORAL_BAD_HOST`.
 */
export function splitHostHeader(host: string): { name: string; port?: number } {
  const m = /^([A-Za-z0-9._-]+)(?::([0-9]{1,5}))?$/.exec(host.trim());
  if (!m) throw new ProxyError('CORAL_BAD_HOST', `malformed Host header: ${JSON.stringify(host)}`);
  let name = m[1]!.toLowerCase();
  if (name.endsWith('.')) name = name.slice(0, -1);
  if (name.length === 0 || name.length > 253) {
    throw new ProxyError('CORAL_BAD_HOST', `malformed Host header: ${JSON.stringify(host)}`);
  }
  if (m[2] === undefined) return { name };
  const port = Number(m[2]);
  if (port > 65535) throw new ProxyError('CORAL_BAD_HOST', `bad port in Host header: ${host}`);
  return { name, port };
}
