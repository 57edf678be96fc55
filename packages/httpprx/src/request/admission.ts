/**
 * Admission of a parsed request: exactly one valid Host (RFC 9112 §3.2) and a target that is a
 * path on that Host's authority (../mapping/target.ts). Runs before any routing, cache or upstream work;
 * every refusal is a 400 the proxy answers with `Connection: close`.
 */
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { ProxyError } from '../errors.js';
import { splitHostHeader } from '../mapping/host.js';
import { absoluteAuthority, requestTarget } from '../mapping/target.js';
import type { Authority } from '../mapping/target.js';

export interface Admitted {
  /** The Host header value as sent (or the absolute-form authority of an HTTP/1.0 request). */
  host: string;
  authority: Authority;
  /** Canonical path and query (../mapping/target.ts). */
  path: string;
}

/**
 * Every `Host` field line of the request. Node keeps only the first in `req.headers` (unless the
 * server joins duplicates), so the raw header list is the only reliable count.
 */
export function hostFields(rawHeaders: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const k = rawHeaders[i]!;
    if (k.length === 4 && k.toLowerCase() === 'host') out.push(rawHeaders[i + 1] ?? '');
  }
  return out;
}

/** True when the request carries exactly one Host field line (the fast path's cheap check). */
export function singleHost(rawHeaders: readonly string[]): boolean {
  let n = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const k = rawHeaders[i]!;
    if (k.length === 4 && k.toLowerCase() === 'host' && ++n > 1) return false;
  }
  return n === 1;
}

function badHost(message: string): ProxyError {
  return new ProxyError('CORAL_BAD_HOST', message);
}

/** Check Host and target; throws `CORAL_BAD_HOST` or `CORAL_BAD_TARGET`. */
export function admit(req: IncomingMessage): Admitted {
  const protocol = (req.socket as TLSSocket | undefined)?.encrypted ? 'https:' : 'http:';
  const fields = hostFields(req.rawHeaders);
  if (fields.length > 1) {
    throw badHost(`${fields.length} Host header fields (RFC 9112 §3.2 allows one)`);
  }
  const target = req.url;
  if (fields.length === 0) {
    const http11 = req.httpVersionMajor > 1 || req.httpVersionMinor >= 1;
    // HTTP/1.0 may name the authority in an absolute-form target instead (RFC 9112 §3.2.2).
    const m = http11 ? null : /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)/.exec(target ?? '');
    if (!m) {
      throw badHost(
        http11
          ? 'missing Host header (required in HTTP/1.1, RFC 9112 §3.2)'
          : 'missing Host header',
      );
    }
    const authority = absoluteAuthority(m[1]!, m[2]!, protocol);
    return { host: m[2]!, authority, path: requestTarget(target, authority, protocol) };
  }
  const host = fields[0]!;
  if (host.length === 0) throw badHost('empty Host header');
  const authority = splitHostHeader(host);
  return { host, authority, path: requestTarget(target, authority, protocol) };
}
