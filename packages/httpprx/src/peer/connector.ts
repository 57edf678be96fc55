/**
 * The socket layer of peer fetches. Peer requests go to IP literals only (a member's verified
 * address; no name is ever resolved), and every connection passes the same address policy as an
 * origin connection (loopback, private, link-local… refused unless `allowPrivate`), with one
 * exception: the address of a verified fleet member that a peer fetch in progress is asking
 * (`sanction`). So even a fault in holder selection cannot open a connection to an internal
 * service on the proxy's behalf.
 */
import { isIP } from 'node:net';
import type { Socket } from 'node:net';
import type { Clock } from '@coral/runtime';
import { classifyAddress, isAddressAllowed } from '../connect/address-policy.js';
import { OriginForbiddenError, OriginTimeoutError } from '../connect/errors.js';
import { netDial } from '../connect/smart-connect.js';
import type { Dial, UndiciConnector } from '../connect/smart-connect.js';

function endpointKey(ip: string, port: number): string {
  return `${ip}|${port}`;
}

export class PeerConnector {
  readonly #clock: Clock;
  readonly #dial: Dial;
  readonly #allowPrivate: boolean;
  readonly #timeoutMs: number;
  /** Member endpoints currently being asked, with a reference count. */
  readonly #sanctioned = new Map<string, number>();
  /** Connections refused by the policy (for tests and metrics). */
  refused = 0;

  constructor(
    components: { clock: Clock; dial?: Dial },
    options: { allowPrivate: boolean; timeoutMs: number },
  ) {
    this.#clock = components.clock;
    this.#dial = components.dial ?? netDial;
    this.#allowPrivate = options.allowPrivate;
    this.#timeoutMs = options.timeoutMs;
  }

  /** Allow connections to a verified member's address until the returned function is called. */
  sanction(ip: string, port: number): () => void {
    const key = endpointKey(ip, port);
    this.#sanctioned.set(key, (this.#sanctioned.get(key) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const n = (this.#sanctioned.get(key) ?? 1) - 1;
      if (n <= 0) this.#sanctioned.delete(key);
      else this.#sanctioned.set(key, n);
    };
  }

  /** May a peer connection go to `ip:port` now? */
  allows(ip: string, port: number): boolean {
    if (isIP(ip) === 0) return false;
    return (
      this.#sanctioned.has(endpointKey(ip, port)) ||
      isAddressAllowed(ip, { allowPrivate: this.#allowPrivate })
    );
  }

  /** The undici `connect` of the peer agent (plain TCP: peers speak http). */
  undiciConnect(): UndiciConnector {
    return (opts, callback) => {
      const ip = opts.hostname.startsWith('[') ? opts.hostname.slice(1, -1) : opts.hostname;
      const port = Number(opts.port || 80);
      if (opts.protocol !== 'http:' || opts.httpSocket || !this.allows(ip, port)) {
        this.refused++;
        const family = isIP(ip) === 6 ? 6 : 4;
        let cls = 'not an IP address';
        try {
          cls = classifyAddress(ip);
        } catch {
          /* a name: peers are only ever reached at IP literals */
        }
        callback(new OriginForbiddenError(ip, port, [{ address: ip, family, class: cls }]), null);
        return;
      }
      const ac = new AbortController();
      const timer = this.#clock.setTimeout(
        () => ac.abort(new OriginTimeoutError(ip, port, this.#timeoutMs)),
        this.#timeoutMs,
      );
      this.#dial({ address: ip, family: isIP(ip) === 6 ? 6 : 4, port }, ac.signal).then(
        (socket: Socket) => {
          timer.cancel();
          socket.setNoDelay(true);
          callback(null, socket);
        },
        (err: Error) => {
          timer.cancel();
          callback(err, null);
        },
      );
    };
  }
}
