/**
 * Node-to-node requests on the members' admin ports (`/v1/peer/...`), shared by every fleet-wide
 * operation of the admin API (ACME challenges: acme/fleet-challenges.ts; purges:
 * purge/fleet-purge.ts).
 *
 * Each request is signed with the fleet's keys (`Coral-Peer-Auth`, @coral/keyring's
 * `HttpPeerSigner`: method, authority and path under a MAC with a timestamp and a nonce), and a
 * member acts on one only when it verifies (unsigned, forged, stale and replayed requests are
 * refused with 403 `CORAL_ERR_PEER_UNAUTHORIZED`). The signature covers the path, not the body:
 * an operation that sends a body puts the body's SHA-256 in its path and checks it
 * ({@link bodyDigest}). A node without fleet keys (open mode) neither sends nor accepts peer
 * requests.
 */
import { createHash } from 'node:crypto';
import type { PeerAuth } from '@coral/httpprx';
import type { Logger } from 'pino';
import { PeerAuthError } from '../errors.js';

/** The keyring's header name (`@coral/keyring` PEER_AUTH_HEADER), lowercase as Node reads it. */
export const PEER_AUTH_HEADER = 'coral-peer-auth';
/** Bound on one member's answer to a peer request. */
export const PEER_REQUEST_TIMEOUT_MS = 5_000;
/** Largest answer read from a member (a full page of the purge log: 1,000 entries of ≤ 8 KB). */
export const PEER_MAX_ANSWER_BYTES = 16 * 1024 * 1024;

/** What became of a request at one member. */
export interface PeerResult {
  nodeId: string;
  address: string;
  ok: boolean;
  /** The member's HTTP status, when it answered. */
  status?: number;
  error?: string;
  /** The member's JSON answer, when it sent one. */
  body?: unknown;
}

/** A member other than this node, at the address it was verified at. */
export interface PeerMember {
  nodeId: string;
  ip: string;
}

export interface PeerRequestsComponents {
  /** The fleet's peer signer; absent (open mode): nothing is sent, every peer request refused. */
  peerAuth?: PeerAuth | undefined;
  /** The live members other than this node, with the address they were verified at. */
  members: () => PeerMember[];
  fetch?: typeof fetch;
  logger?: Pick<Logger, 'info' | 'warn'> | undefined;
}

export interface PeerRequestsOptions {
  /** The members' admin port (the fleet's configuration gives every member the same). */
  adminPort: number;
  timeoutMs?: number;
}

/** The SHA-256 (hex) of a request body, which a signed path carries to bind the body. */
export function bodyDigest(body: string): string {
  return createHash('sha256').update(body).digest('hex');
}

/** What a peer check reads of a received request (method, Host, target, `Coral-Peer-Auth`). */
export function peerRequestParts(req: {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
}): { method: string; host: string | undefined; path: string; header?: string } {
  const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  const header = first(req.headers[PEER_AUTH_HEADER]);
  return {
    method: req.method,
    host: first(req.headers.host),
    path: req.url,
    ...(header !== undefined ? { header } : {}),
  };
}

export class PeerRequests {
  readonly #peerAuth: PeerAuth | undefined;
  readonly #members: PeerRequestsComponents['members'];
  readonly #fetch: typeof fetch;
  readonly #logger: PeerRequestsComponents['logger'];
  readonly #adminPort: number;
  readonly #timeoutMs: number;

  constructor(components: PeerRequestsComponents, options: PeerRequestsOptions) {
    this.#peerAuth = components.peerAuth;
    this.#members = components.members;
    this.#fetch = components.fetch ?? fetch;
    this.#logger = components.logger;
    this.#adminPort = options.adminPort;
    this.#timeoutMs = options.timeoutMs ?? PEER_REQUEST_TIMEOUT_MS;
  }

  /** True when this node holds fleet keys: it signs, sends and takes peer requests. */
  get enabled(): boolean {
    return this.#peerAuth !== undefined;
  }

  /** The live members other than this node. */
  members(): PeerMember[] {
    return this.#members();
  }

  /**
   * Check a peer request against the fleet's keys; throws {@link PeerAuthError} unless it
   * verifies. `path` is the request target exactly as received.
   */
  verify(req: { method: string; host: string | undefined; path: string; header?: string }): void {
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

  /**
   * Send one signed request to every member in `to` (default: every live member), in parallel,
   * each bounded by the timeout. Never throws: a member that fails is a result with `ok: false`.
   * Throws only when this node has no keys (check {@link enabled} first).
   */
  async sendAll(
    method: string,
    path: string,
    body?: string,
    to: PeerMember[] = this.#members(),
  ): Promise<PeerResult[]> {
    return Promise.all(to.map((m) => this.send(m, method, path, body)));
  }

  /** One signed request to one member (see {@link sendAll}). */
  async send(member: PeerMember, method: string, path: string, body?: string): Promise<PeerResult> {
    const signer = this.#peerAuth;
    if (!signer) throw new PeerAuthError('no-keys', 'this node has no fleet keys');
    const { nodeId, ip } = member;
    const authority = `${ip.includes(':') ? `[${ip}]` : ip}:${this.#adminPort}`;
    try {
      const headers: Record<string, string> = {
        [PEER_AUTH_HEADER]: signer.sign({ method, authority, path }),
      };
      if (body !== undefined) headers['content-type'] = 'application/json';
      const res = await this.#fetch(`http://${authority}${path}`, {
        method,
        headers,
        ...(body !== undefined ? { body } : {}),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      const text = await res.text().catch(() => '');
      const result: PeerResult = { nodeId, address: authority, ok: res.ok, status: res.status };
      if (text.length > 0 && text.length <= PEER_MAX_ANSWER_BYTES) {
        try {
          result.body = JSON.parse(text);
        } catch {
          // not JSON: the status says enough
        }
      }
      if (!res.ok) {
        const err = (result.body as { error?: { code?: string } } | undefined)?.error;
        result.error = err?.code ?? `HTTP ${res.status}`;
      }
      return result;
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause;
      return {
        nodeId,
        address: authority,
        ok: false,
        error: cause?.code ?? (err as Error).name ?? String(err),
      };
    }
  }
}
