/**
 * Name resolution for origins, as an injected component: the connector asks a {@link Resolver} for
 * every IPv4 and IPv6 address of a name, so tests substitute their own answers and production uses
 * the system resolver (getaddrinfo, which honours /etc/hosts and nsswitch).
 */
import { promises as dnsPromises } from 'node:dns';
import type { LookupAddress } from 'node:dns';
import { isIP } from 'node:net';

import {
  ConnectAbortedError,
  InvalidOriginError,
  OriginAddressUnavailableError,
  OriginResolveError,
  errorCode,
} from './errors.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export interface Resolver {
  /**
   * Every address of `host`, IPv4 and IPv6, in the resolver's order. Rejects with
   * `OriginAddressUnavailableError` (`EADDRNOTAVAIL`) when the name has none, with
   * `OriginResolveError` on other failures, and with an abort error when `signal` fires.
   */
  resolve(host: string, opts?: { signal?: AbortSignal }): Promise<ResolvedAddress[]>;
}

/** Hosts-file style overrides: name → addresses (`{ 'origin.test': ['127.0.0.1', '::1'] }`). */
export type HostsMap = Readonly<Record<string, readonly string[]>>;

/** DNS answer codes that mean "this name has no address" rather than "DNS is broken". */
const NO_ADDRESS_CODES = new Set(['ENOTFOUND', 'ENODATA', 'EAI_NONAME', 'EAI_NODATA', 'NXDOMAIN']);

/** Lower-case, strip a trailing dot and IPv6 brackets: the form used for lookups and cache keys. */
export function normalizeHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.endsWith('.') && h.length > 1) h = h.slice(0, -1);
  return h;
}

/** An IP literal resolves to itself; anything else gives undefined. */
export function literalAddress(host: string): ResolvedAddress | undefined {
  const h = normalizeHost(host);
  const fam = isIP(h);
  return fam === 4 || fam === 6 ? { address: h, family: fam } : undefined;
}

/** Reject a host that cannot be a DNS name or an IP literal (empty, spaces, control characters...). */
export function assertValidHost(host: unknown): asserts host is string {
  if (typeof host !== 'string') throw new InvalidOriginError('origin host must be a string');
  const h = normalizeHost(host);
  if (h === '' || h.length > 253) {
    throw new InvalidOriginError(`invalid origin host ${JSON.stringify(host)}`);
  }
  if (isIP(h)) return;
  // Letters, digits, '-', '_', '.'; labels 1..63 characters. Anything else (spaces, '/', '@', '%')
  // is refused before it reaches getaddrinfo.
  const ok = h.split('.').every((l) => l.length >= 1 && l.length <= 63 && /^[a-z0-9_-]+$/.test(l));
  if (!ok) throw new InvalidOriginError(`invalid origin host ${JSON.stringify(host)}`);
}

function abortable<T>(p: Promise<T>, host: string, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(new ConnectAbortedError(host, 0, signal.reason));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new ConnectAbortedError(host, 0, signal.reason));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

export type LookupAll = (
  host: string,
  opts: { all: true; verbatim: true },
) => Promise<LookupAddress[]>;

/**
 * The system resolver: `dns.promises.lookup(host, { all: true, verbatim: true })`, i.e. getaddrinfo
 * with both families in the order the system returns them. getaddrinfo cannot be cancelled; an
 * aborted call returns at once and its late answer is dropped.
 */
export class SystemResolver implements Resolver {
  readonly #lookup: LookupAll;

  constructor(components: { lookup?: LookupAll } = {}) {
    this.#lookup = components.lookup ?? ((host, opts) => dnsPromises.lookup(host, opts));
  }

  async resolve(host: string, opts: { signal?: AbortSignal } = {}): Promise<ResolvedAddress[]> {
    const h = normalizeHost(host);
    const literal = literalAddress(h);
    if (literal) return [literal];
    let answers: LookupAddress[];
    try {
      answers = await abortable(this.#lookup(h, { all: true, verbatim: true }), h, opts.signal);
    } catch (err) {
      if (err instanceof ConnectAbortedError) throw err;
      const code = errorCode(err);
      if (code !== undefined && NO_ADDRESS_CODES.has(code)) {
        throw new OriginAddressUnavailableError(h, undefined, err);
      }
      throw new OriginResolveError(h, undefined, err);
    }
    const out = dedupe(
      answers
        .filter((a) => a.family === 4 || a.family === 6)
        .map((a) => ({ address: a.address, family: a.family as 4 | 6 })),
    );
    if (out.length === 0) throw new OriginAddressUnavailableError(h);
    return out;
  }
}

/**
 * A hosts-file overlay: names in `hosts` resolve to the listed addresses and never reach the
 * fallback resolver (like /etc/hosts winning over DNS); IP literals resolve to themselves; other
 * names go to `fallback`, or fail with `EADDRNOTAVAIL` when there is none.
 */
export class HostsResolver implements Resolver {
  readonly #hosts = new Map<string, ResolvedAddress[]>();
  readonly #fallback: Resolver | undefined;

  constructor(components: { fallback?: Resolver } = {}, options: { hosts?: HostsMap } = {}) {
    this.#fallback = components.fallback;
    for (const [name, addrs] of Object.entries(options.hosts ?? {})) {
      const list: ResolvedAddress[] = [];
      for (const a of addrs) {
        const lit = literalAddress(a);
        if (!lit) {
          throw new InvalidOriginError(
            `hosts entry ${JSON.stringify(name)}: ${JSON.stringify(a)} is not an IP address`,
          );
        }
        list.push(lit);
      }
      this.#hosts.set(normalizeHost(name), dedupe(list));
    }
  }

  async resolve(host: string, opts: { signal?: AbortSignal } = {}): Promise<ResolvedAddress[]> {
    const h = normalizeHost(host);
    const literal = literalAddress(h);
    if (literal) return [literal];
    const mapped = this.#hosts.get(h);
    if (mapped) {
      if (mapped.length === 0) throw new OriginAddressUnavailableError(h);
      return mapped.map((a) => ({ ...a }));
    }
    if (!this.#fallback) throw new OriginAddressUnavailableError(h);
    const out = await this.#fallback.resolve(h, opts);
    if (out.length === 0) throw new OriginAddressUnavailableError(h);
    return out;
  }
}

function dedupe(list: ResolvedAddress[]): ResolvedAddress[] {
  const seen = new Set<string>();
  return list.filter((a) => (seen.has(a.address) ? false : (seen.add(a.address), true)));
}
