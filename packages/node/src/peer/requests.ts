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
 *
 * A member acts only on a request addressed to it: the signed authority must be one of its own
 * admin addresses ({@link PeerRequestsComponents.self}), so a request signed for member B and
 * sent to A (with `Host: B`) is refused like a forged one. Every answer to a request that
 * verified is sealed with the fleet's keys (peer/answers.ts, `Coral-Peer-Answer`: the request's
 * nonce and signature, the status and the body's SHA-256), and the sender reads an answer only
 * up to {@link PEER_MAX_ANSWER_BYTES} and believes it only when the seal checks.
 *
 * A member is reached at the address the fleet verified it at and at the admin port it published
 * itself (trust/admin-records.ts), never at this node's own port; a member whose port is not
 * known is a failed result ({@link PEER_NO_ADMIN_RECORD}), like one that did not answer: nothing
 * that did not reach a member counts as done there.
 */
import { createHash } from 'node:crypto';
import type { PeerAuth } from '@coral/httpprx';
import type { Logger } from 'pino';
import { PeerAuthError } from '../errors.js';
import { PEER_ANSWER_HEADER, type PeerAnswerAuth } from './answers.js';

/** The keyring's header name (`@coral/keyring` PEER_AUTH_HEADER), lowercase as Node reads it. */
export const PEER_AUTH_HEADER = 'coral-peer-auth';
/** Bound on one member's answer to a peer request. */
export const PEER_REQUEST_TIMEOUT_MS = 5_000;
/**
 * Largest answer read from a member: twice a full page of the purge log (1,000 entries whose value
 * is at most 8 KB; URLs and prefixes are normalized and tags hold no space, so JSON adds little).
 */
export const PEER_MAX_ANSWER_BYTES = 16 * 1024 * 1024;
/** `PeerResult.error` of an answer larger than the bound (refused unread past it). */
export const PEER_ANSWER_TOO_LARGE = 'answer-too-large';
/** `PeerResult.error` of an answer whose `Coral-Peer-Answer` seal is missing or wrong. */
export const PEER_ANSWER_UNAUTHENTICATED = 'answer-unauthenticated';
/** `PeerResult.error` of a member whose admin record (its admin port) was not found. */
export const PEER_NO_ADMIN_RECORD = 'no-admin-record';

/** Requests that verified, with their `Coral-Peer-Auth` value (for sealing their answer). */
const verified = new WeakMap<object, string>();

/** The `Coral-Peer-Auth` value of `req` when it verified ({@link PeerRequests.verify}). */
export function verifiedPeerAuth(req: object): string | undefined {
  return verified.get(req);
}

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

/**
 * The admin port a member published (trust/admin-records.ts `AdminRecords.port`), undefined when
 * it is not known; `fresh`: do not answer from a cache (a request to the cached port failed);
 * `patient`: look again a few times when the record is not found (a member that just joined).
 */
export type AdminPortOf = (
  member: PeerMember,
  opts: { fresh?: boolean; patient?: boolean; signal?: AbortSignal },
) => Promise<number | undefined>;

/** Every member on one port: for components used on their own (tests), never for a fleet. */
export function fixedAdminPort(port: number): AdminPortOf {
  return () => Promise.resolve(port);
}

export interface PeerRequestsComponents {
  /** The fleet's peer signer; absent (open mode): nothing is sent, every peer request refused. */
  peerAuth?: PeerAuth | undefined;
  /** Seals and checks answers (peer/answers.ts); required with `peerAuth`. */
  answerAuth?: PeerAnswerAuth | undefined;
  /**
   * This node's own admin addresses (`host:port`, as members write them: the address it was
   * verified at, brackets around IPv6). A request signed for any other authority is refused.
   * Absent: not checked (a component used on its own in tests).
   */
  self?: () => readonly string[];
  /** Called once per refused request with the reason (a metric). */
  onRefused?: (reason: string) => void;
  /** The live members other than this node, with the address they were verified at. */
  members: () => PeerMember[];
  /** Each member's own admin port (its admin record). */
  adminPorts: AdminPortOf;
  fetch?: typeof fetch;
  logger?: (Pick<Logger, 'info' | 'warn'> & Partial<Pick<Logger, 'debug'>>) | undefined;
}

export interface PeerRequestsOptions {
  timeoutMs?: number;
  /** Largest answer read (default {@link PEER_MAX_ANSWER_BYTES}). */
  maxAnswerBytes?: number;
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
  readonly #answerAuth: PeerAnswerAuth | undefined;
  readonly #self: PeerRequestsComponents['self'];
  readonly #onRefused: PeerRequestsComponents['onRefused'];
  readonly #maxAnswerBytes: number;
  /** Refused requests by reason (also passed to `onRefused`). */
  readonly refused: Record<string, number> = {};
  readonly #members: PeerRequestsComponents['members'];
  readonly #fetch: typeof fetch;
  readonly #logger: PeerRequestsComponents['logger'];
  readonly #adminPorts: AdminPortOf;
  readonly #timeoutMs: number;

  constructor(components: PeerRequestsComponents, options: PeerRequestsOptions = {}) {
    this.#peerAuth = components.peerAuth;
    this.#answerAuth = components.answerAuth;
    if (this.#peerAuth && !this.#answerAuth) {
      throw new TypeError('PeerRequests: peerAuth needs answerAuth (answers are authenticated)');
    }
    this.#self = components.self;
    this.#onRefused = components.onRefused;
    this.#maxAnswerBytes = options.maxAnswerBytes ?? PEER_MAX_ANSWER_BYTES;
    this.#members = components.members;
    this.#fetch = components.fetch ?? fetch;
    this.#logger = components.logger;
    this.#adminPorts = components.adminPorts;
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
   * Check a received peer request (method, target exactly as received, Host, `Coral-Peer-Auth`)
   * against the fleet's keys and this node's own addresses; throws {@link PeerAuthError} unless
   * it verifies. A request that verifies is remembered so its answer can be sealed
   * ({@link verifiedPeerAuth}).
   */
  verify(req: {
    method: string;
    url: string;
    headers: Record<string, string | string[] | undefined>;
  }): void {
    const parts = peerRequestParts(req);
    const refuse = (reason: string, message: string): never => {
      this.refused[reason] = (this.refused[reason] ?? 0) + 1;
      this.#onRefused?.(reason);
      // Strangers can send these at will: debug only (the counter and the metric keep count).
      this.#logger?.debug?.({ reason, method: parts.method, path: parts.path }, 'peer refused');
      throw new PeerAuthError(reason, message);
    };
    if (!this.#peerAuth) {
      return refuse('no-keys', 'this node has no fleet keys: it takes no peer requests');
    }
    const host = (parts.host ?? '').toLowerCase();
    if (this.#self && !this.#self().some((a) => a.toLowerCase() === host)) {
      return refuse('wrong-host', `peer request not addressed to this node (Host ${host || '-'})`);
    }
    const verdict = this.#peerAuth.verify({
      method: parts.method,
      authority: parts.host ?? '',
      path: parts.path,
      header: parts.header,
    });
    if (verdict !== 'ok') return refuse(verdict, `peer request not authenticated: ${verdict}`);
    verified.set(req, parts.header!);
  }

  /** The seal of an answer to a request that verified (undefined for any other request). */
  sealAnswer(req: object, status: number, body: string): string | undefined {
    const auth = verified.get(req);
    return auth !== undefined ? this.#answerAuth?.seal(auth, status, body) : undefined;
  }

  /**
   * Send one signed request to every member in `to` (default: every live member), in parallel,
   * each bounded by the timeout. Never throws: a member that fails is a result with `ok: false`.
   * A fleet-wide change: a member whose admin record is not found yet is looked up again a few
   * times before it counts as not reached (`patient`).
   * Throws only when this node has no keys (check {@link enabled} first).
   */
  async sendAll(
    method: string,
    path: string,
    body?: string,
    to: PeerMember[] = this.#members(),
  ): Promise<PeerResult[]> {
    return Promise.all(to.map((m) => this.send(m, method, path, body, { patient: true })));
  }

  /**
   * One signed request to one member (see {@link sendAll}), at the port of its admin record. A
   * request to a port from the cache that did not connect is tried once more when a fresh lookup
   * gives another port (the member restarted on it).
   */
  async send(
    member: PeerMember,
    method: string,
    path: string,
    body?: string,
    opts: { patient?: boolean } = {},
  ): Promise<PeerResult> {
    if (!this.#peerAuth) throw new PeerAuthError('no-keys', 'this node has no fleet keys');
    const port = await this.#adminPorts(member, opts.patient ? { patient: true } : {});
    if (port === undefined) return this.#noRecord(member);
    const first = await this.#sendTo(member, port, method, path, body);
    if (first.status !== undefined) return first;
    const again = await this.#adminPorts(member, { fresh: true });
    return again === undefined || again === port
      ? first
      : this.#sendTo(member, again, method, path, body);
  }

  #noRecord(member: PeerMember): PeerResult {
    return {
      nodeId: member.nodeId,
      address: fmtIp(member.ip),
      ok: false,
      error: PEER_NO_ADMIN_RECORD,
    };
  }

  async #sendTo(
    member: PeerMember,
    port: number,
    method: string,
    path: string,
    body?: string,
  ): Promise<PeerResult> {
    const signer = this.#peerAuth!;
    const { nodeId, ip } = member;
    const authority = `${fmtIp(ip)}:${port}`;
    const abort = new AbortController();
    try {
      const auth = signer.sign({ method, authority, path });
      const headers: Record<string, string> = { [PEER_AUTH_HEADER]: auth };
      if (body !== undefined) headers['content-type'] = 'application/json';
      const res = await this.#fetch(`http://${authority}${path}`, {
        method,
        headers,
        ...(body !== undefined ? { body } : {}),
        signal: AbortSignal.any([abort.signal, AbortSignal.timeout(this.#timeoutMs)]),
      });
      const result: PeerResult = { nodeId, address: authority, ok: false, status: res.status };
      const bytes = await readCapped(res, this.#maxAnswerBytes);
      if (bytes === undefined) {
        abort.abort();
        result.error = PEER_ANSWER_TOO_LARGE;
        return result;
      }
      // Nothing of an answer is believed (not even its status) before its seal checks.
      if (
        !this.#answerAuth!.check(
          auth,
          res.status,
          bytes,
          res.headers.get(PEER_ANSWER_HEADER) ?? undefined,
        )
      ) {
        result.error = PEER_ANSWER_UNAUTHENTICATED;
        return result;
      }
      result.ok = res.ok;
      const text = Buffer.from(bytes).toString('utf8');
      if (text.length > 0) {
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
    } finally {
      abort.abort();
    }
  }
}

/** An IP as an authority writes it (brackets around IPv6). */
function fmtIp(ip: string): string {
  return ip.includes(':') ? `[${ip}]` : ip;
}

/**
 * The body of `res`, or undefined when it is larger than `max` bytes: refused at once on a
 * larger Content-Length, else read no further than `max` (the stream is cancelled past it).
 */
async function readCapped(res: Response, max: number): Promise<Uint8Array | undefined> {
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (declared > max) {
    await res.body?.cancel().catch(() => undefined);
    return undefined;
  }
  if (!res.body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader: ReadableStreamDefaultReader<Uint8Array> = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, total);
}
