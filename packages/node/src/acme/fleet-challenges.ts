/**
 * ACME DNS-01 for the whole fleet. An ACME CA may ask any nameserver of the zone for
 * `_acme-challenge.<zone>` TXT, so a value set on one node (admin API, `coral-node acme set`)
 * is applied to this node's DNS server at once and sent to every live member, node to node:
 *
 *   PUT    /v1/peer/acme/challenges/<value>?ttl=<seconds>   (on each member's own admin port)
 *   DELETE /v1/peer/acme/challenges/<value>
 *   DELETE /v1/peer/acme/challenges                          (every value)
 *
 * Each peer request is signed with the fleet's keys and checked by the member before it applies
 * it (peer/requests.ts: `Coral-Peer-Auth` over method, authority and path, which holds the value
 * and its lifetime): a value in this TXT record is what lets its holder get a certificate for the
 * whole zone, so nobody but the operator (admin API) and the fleet (its keys) may set one. A node
 * without fleet keys neither sends nor accepts peer requests: its values are answered by itself
 * only, and the answer says so.
 */
import type { ChallengeEntry, InMemoryChallengeStore } from '@coral/dnssrv';
import type { PeerAuth } from '@coral/httpprx';
import type { Logger } from 'pino';
import type { PeerAnswerAuth } from '../peer/answers.js';
import { PeerRequests, PEER_REQUEST_TIMEOUT_MS, type AdminPortOf } from '../peer/requests.js';

export { PEER_AUTH_HEADER } from '../peer/requests.js';
/** Path of the peer endpoint on every member's admin port. */
export const PEER_ACME_PATH = '/v1/peer/acme/challenges';
/** Lifetime of a value set without one (as dnssrv's store: 10 min). */
export const DEFAULT_ACME_TTL_SECONDS = 600;
/** Bound on one member's answer to a propagated change. */
export const ACME_PROPAGATION_TIMEOUT_MS = PEER_REQUEST_TIMEOUT_MS;

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
  /** Seals and checks peer answers; required with `peerAuth` (peer/requests.ts). */
  answerAuth?: PeerAnswerAuth | undefined;
  /** This node's own admin addresses (peer/requests.ts `self`). */
  self?: () => readonly string[];
  onRefused?: (reason: string) => void;
  /** The live members other than this node, with the address they were verified at. */
  members: () => { nodeId: string; ip: string }[];
  /** Each member's own admin port (trust/admin-records.ts). */
  adminPorts: AdminPortOf;
  /**
   * Why this node may not see every member it should (isolated from the fleet's keys, not joined
   * yet), or undefined: with a reason, no live member means "not reached", not "none to reach".
   */
  cutOff?: () => string | undefined;
  fetch?: typeof fetch;
  logger?: Pick<Logger, 'info' | 'warn'> & Partial<Pick<Logger, 'debug'>>;
}

export interface FleetChallengesOptions {
  zone: string;
  timeoutMs?: number;
}

export class FleetChallenges {
  readonly #store: InMemoryChallengeStore;
  readonly #peers: PeerRequests;
  readonly #logger: FleetChallengesComponents['logger'];
  readonly #cutOff: FleetChallengesComponents['cutOff'];
  readonly zone: string;

  constructor(components: FleetChallengesComponents, options: FleetChallengesOptions) {
    this.#store = components.store;
    this.#logger = components.logger;
    this.#cutOff = components.cutOff;
    this.#peers = new PeerRequests(
      {
        peerAuth: components.peerAuth,
        answerAuth: components.answerAuth,
        ...(components.self ? { self: components.self } : {}),
        ...(components.onRefused ? { onRefused: components.onRefused } : {}),
        members: components.members,
        adminPorts: components.adminPorts,
        ...(components.fetch ? { fetch: components.fetch } : {}),
        logger: components.logger,
      },
      { timeoutMs: options.timeoutMs ?? ACME_PROPAGATION_TIMEOUT_MS },
    );
    this.zone = options.zone;
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
  verifyPeer(req: {
    method: string;
    url: string;
    headers: Record<string, string | string[] | undefined>;
  }) {
    this.#peers.verify(req);
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
    if (!this.#peers.enabled) {
      return {
        mode: 'off',
        complete: this.#peers.members().length === 0,
        members: [],
        reason: 'no fleet keys (fleet.keys): only this node answers the challenge',
      };
    }
    const members = (await this.#peers.sendAll(method, path)).map(
      ({ body: _body, ...result }): PropagationResult => result,
    );
    const failed = members.filter((m) => !m.ok);
    if (failed.length > 0) {
      this.#logger?.warn({ method, failed }, 'ACME challenge change not applied by every member');
    }
    const cutOff = members.length === 0 ? this.#cutOff?.() : undefined;
    if (cutOff !== undefined) return { mode: 'sent', complete: false, members, reason: cutOff };
    return { mode: 'sent', complete: failed.length === 0, members };
  }
}

function view(e: ChallengeEntry): ChallengeView {
  return { zone: e.zone, value: e.value, expiresAt: new Date(e.expiresAt).toISOString() };
}
