/**
 * ACME DNS-01 for the whole fleet. An ACME CA may ask any nameserver of the zone for
 * `_acme-challenge.<zone>` TXT, so a value set on one node (admin API, `coral-node acme set`)
 * is applied to this node's DNS server at once and sent to every live member, node to node:
 *
 *   PUT    /v1/peer/acme/challenges/<value>?ttl=<seconds>   (on each member's admin port)
 *   DELETE /v1/peer/acme/challenges/<value>
 *   DELETE /v1/peer/acme/challenges                          (every value)
 *
 * Each peer request is signed with the fleet's keys (`Coral-Peer-Auth`, @coral/keyring's
 * `HttpPeerSigner`: method, authority and path, which holds the value and its lifetime, under a
 * MAC with a timestamp and a nonce), and a member applies it only when it verifies: a value in
 * this TXT record is what lets its holder get a certificate for the whole zone, so nobody but
 * the operator (admin API) and the fleet (its keys) may set one. A node without fleet keys
 * neither sends nor accepts peer requests: its values are answered by itself only, and the
 * answer says so.
 */
import type { ChallengeEntry, InMemoryChallengeStore } from '@coral/dnssrv';
import type { PeerAuth } from '@coral/httpprx';
import type { Logger } from 'pino';
import { PeerAuthError } from '../errors.js';

/** The keyring's header name (`@coral/keyring` PEER_AUTH_HEADER), lowercase as Node reads it. */
export const PEER_AUTH_HEADER = 'coral-peer-auth';
/** Path of the peer endpoint on every member's admin port. */
export const PEER_ACME_PATH = '/v1/peer/acme/challenges';
/** Lifetime of a value set without one (as dnssrv's store: 10 min). */
export const DEFAULT_ACME_TTL_SECONDS = 600;
/** Bound on one member's answer to a propagated change. */
export const ACME_PROPAGATION_TIMEOUT_MS = 5_000;

export interface ChallengeView {
  zone: string;
  value: string;
  expiresAt: string;
}

/** What became of a change at one member. */
export interface PropagationResult {
  nodeId: string;
  address: string;
  ok: boolean;
  /** The member's HTTP status, when it answered. */
  status?: number;
  error?: string;
}

export interface Propagation {
  /** `off`: no fleet keys, nothing sent; `sent`: every live member was asked. */
  mode: 'off' | 'sent';
  /** True when every live member applied the change (or there is none). */
  complete: boolean;
  members: PropagationResult[];
  reason?: string;
}

export interface FleetChallengesComponents {
  store: InMemoryChallengeStore;
  /** The fleet's peer signer; absent: no propagation, and peer requests are refused. */
  peerAuth?: PeerAuth | undefined;
  /** The live members other than this node, with the address they were verified at. */
  members: () => { nodeId: string; ip: string }[];
  fetch?: typeof fetch;
  logger?: Pick<Logger, 'info' | 'warn'>;
}

export interface FleetChallengesOptions {
  zone: string;
  /** The members' admin port (the fleet's configuration gives every member the same). */
  adminPort: number;
  timeoutMs?: number;
}

export class FleetChallenges {
  readonly #store: InMemoryChallengeStore;
  readonly #peerAuth: PeerAuth | undefined;
  readonly #members: FleetChallengesComponents['members'];
  readonly #fetch: typeof fetch;
  readonly #logger: FleetChallengesComponents['logger'];
  readonly zone: string;
  readonly #adminPort: number;
  readonly #timeoutMs: number;

  constructor(components: FleetChallengesComponents, options: FleetChallengesOptions) {
    this.#store = components.store;
    this.#peerAuth = components.peerAuth;
    this.#members = components.members;
    this.#fetch = components.fetch ?? fetch;
    this.#logger = components.logger;
    this.zone = options.zone;
    this.#adminPort = options.adminPort;
    this.#timeoutMs = options.timeoutMs ?? ACME_PROPAGATION_TIMEOUT_MS;
  }

  list(): ChallengeView[] {
    return this.#store
      .list()
      .filter((e) => e.zone === this.zone)
      .map(view);
  }

  /** Publish `value` here and on every live member. Throws DNS_ERR_CHALLENGE for a bad value. */
  async set(
    value: string,
    ttlSeconds = DEFAULT_ACME_TTL_SECONDS,
  ): Promise<{ challenge: ChallengeView; propagation: Propagation }> {
    const entry = this.#store.set(this.zone, value, { ttlMs: ttlSeconds * 1000 });
    this.#logger?.info({ zone: this.zone, value, ttlSeconds }, 'ACME challenge set');
    const path = `${PEER_ACME_PATH}/${encodeURIComponent(value)}?ttl=${ttlSeconds}`;
    return { challenge: view(entry), propagation: await this.#propagate('PUT', path) };
  }

  /** Remove one value (or all) here and on every live member. */
  async remove(value?: string): Promise<{ removed: number; propagation: Propagation }> {
    const removed = this.#store.remove(this.zone, value);
    this.#logger?.info({ zone: this.zone, value, removed }, 'ACME challenge removed');
    const path =
      value === undefined ? PEER_ACME_PATH : `${PEER_ACME_PATH}/${encodeURIComponent(value)}`;
    return { removed, propagation: await this.#propagate('DELETE', path) };
  }

  /**
   * Check a peer request against the fleet's keys; throws {@link PeerAuthError} unless it
   * verifies. `path` is the request target exactly as received.
   */
  verifyPeer(req: { method: string; host: string | undefined; path: string; header?: string }) {
    if (!this.#peerAuth) {
      throw new PeerAuthError('no-keys', 'this node has no fleet keys: it takes no peer requests');
    }
    const verdict = this.#peerAuth.verify({
      method: req.method,
      authority: req.host ?? '',
      path: req.path,
      header: req.header,
    });
    if (verdict !== 'ok') {
      this.#logger?.warn({ reason: verdict, method: req.method, path: req.path }, 'peer refused');
      throw new PeerAuthError(verdict, `peer request not authenticated: ${verdict}`);
    }
  }

  /** Apply a change a member sent (already verified): no further propagation. */
  applyPeer(change: { set: string; ttlSeconds: number } | { remove: string | undefined }) {
    if ('set' in change) {
      return {
        challenge: view(
          this.#store.set(this.zone, change.set, { ttlMs: change.ttlSeconds * 1000 }),
        ),
      };
    }
    return { removed: this.#store.remove(this.zone, change.remove) };
  }

  async #propagate(method: 'PUT' | 'DELETE', path: string): Promise<Propagation> {
    if (!this.#peerAuth) {
      return {
        mode: 'off',
        complete: this.#members().length === 0,
        members: [],
        reason: 'no fleet keys (fleet.keys): only this node answers the challenge',
      };
    }
    const signer = this.#peerAuth;
    const members = await Promise.all(
      this.#members().map(async ({ nodeId, ip }): Promise<PropagationResult> => {
        const authority = `${ip.includes(':') ? `[${ip}]` : ip}:${this.#adminPort}`;
        try {
          const res = await this.#fetch(`http://${authority}${path}`, {
            method,
            headers: { [PEER_AUTH_HEADER]: signer.sign({ method, authority, path }) },
            signal: AbortSignal.timeout(this.#timeoutMs),
          });
          await res.arrayBuffer().catch(() => undefined);
          return { nodeId, address: authority, ok: res.ok, status: res.status };
        } catch (err) {
          const cause = (err as { cause?: { code?: string } }).cause;
          return {
            nodeId,
            address: authority,
            ok: false,
            error: cause?.code ?? (err as Error).name ?? String(err),
          };
        }
      }),
    );
    const failed = members.filter((m) => !m.ok);
    if (failed.length > 0) {
      this.#logger?.warn({ method, failed }, 'ACME challenge change not applied by every member');
    }
    return { mode: 'sent', complete: failed.length === 0, members };
  }
}

function view(e: ChallengeEntry): ChallengeView {
  return { zone: e.zone, value: e.value, expiresAt: new Date(e.expiresAt).toISOString() };
}
