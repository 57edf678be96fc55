/**
 * Authentication of node-to-node HTTP requests (peer fetches) with the fleet keyring: one header,
 *
 *   Coral-Peer-Auth: v1;kid=<8 hex>;ts=<ms since epoch>;nonce=<16 bytes b64url>;mac=<16 bytes b64url>
 *
 * where mac = HMAC-SHA-256 (truncated to 16 bytes) under the key's `coral-http-peer-v1` subkey over
 *
 *   "coral-peer-auth/v1" LF kid LF ts LF nonce LF METHOD LF authority LF path
 *
 * (method upper-cased, authority lower-cased, path = the origin-form request target with its
 * query). The request line and Host are bound, so a captured header cannot be reused for another
 * object or another node; the timestamp window and the nonce memory stop replays of the same one.
 * The body is not covered: peer fetches are GET / HEAD.
 *
 * `verify` answers 'ok' or why not: 'missing' | 'malformed' | 'unknown-key' | 'bad-mac' | 'stale' |
 * 'replayed', and counts each. Structurally it satisfies @coral/httpprx's `PeerAuth`.
 */
import { randomBytes } from 'node:crypto';
import { systemClock, type Clock } from '@coral/runtime';
import { KEYRING_ERR_INVALID_ARGUMENT, KeyringError } from './errors.js';
import type { Keyring } from './keyring.js';
import { mac, verifyMac } from './mac.js';
import { ReplayGuard, type ReplayGuardOptions } from './replay-guard.js';

/** Name of the header. */
export const PEER_AUTH_HEADER = 'Coral-Peer-Auth';
/** HKDF purpose of the subkey that signs peer requests. */
export const PEER_AUTH_PURPOSE = 'coral-http-peer-v1';
const NONCE_BYTES = 16;
const TAG_BYTES = 16;
const HEADER_RE =
  /^v1;kid=([0-9a-f]{8});ts=(0|[1-9][0-9]{0,14});nonce=([A-Za-z0-9_-]{22});mac=([A-Za-z0-9_-]{22})$/;

export type PeerAuthVerdict =
  'ok' | 'missing' | 'malformed' | 'unknown-key' | 'bad-mac' | 'stale' | 'replayed';

export interface PeerRequest {
  method: string;
  /** Host[:port] as sent in the Host header. */
  authority: string;
  /** Origin-form target: path and query. */
  path: string;
}

export interface HttpPeerSignerComponents {
  keyring: Keyring;
  clock?: Clock;
}

export type HttpPeerSignerOptions = ReplayGuardOptions;

function canonical(kid: string, ts: string, nonce: string, req: PeerRequest): string | undefined {
  const method = req.method.toUpperCase();
  const authority = req.authority.toLowerCase();
  const path = req.path;
  // LF separates the fields, so no field may hold one (HTTP never allows CR/LF there anyway).
  if (/[\r\n]/.test(method + authority + path)) return undefined;
  return `coral-peer-auth/v1\n${kid}\n${ts}\n${nonce}\n${method}\n${authority}\n${path}`;
}

export class HttpPeerSigner {
  readonly header = PEER_AUTH_HEADER;
  readonly counters: Record<PeerAuthVerdict, number> = {
    ok: 0,
    missing: 0,
    malformed: 0,
    'unknown-key': 0,
    'bad-mac': 0,
    stale: 0,
    replayed: 0,
  };
  #keyring: Keyring;
  #clock: Clock;
  #replay: ReplayGuard;

  constructor(components: HttpPeerSignerComponents, options: HttpPeerSignerOptions = {}) {
    this.#keyring = components.keyring;
    this.#clock = components.clock ?? systemClock;
    this.#replay = new ReplayGuard({ clock: this.#clock }, options);
  }

  /** The header value for a request, signed with the primary key. */
  sign(req: PeerRequest): string {
    const { id, key } = this.#keyring.signing(PEER_AUTH_PURPOSE);
    const ts = String(Math.floor(this.#clock.now()));
    const nonce = randomBytes(NONCE_BYTES).toString('base64url');
    const text = canonical(id, ts, nonce, req);
    if (text === undefined) {
      throw new KeyringError(
        KEYRING_ERR_INVALID_ARGUMENT,
        'cannot sign a request whose method, authority or path holds CR or LF',
      );
    }
    const tag = Buffer.from(mac(key, [text], TAG_BYTES)).toString('base64url');
    return `v1;kid=${id};ts=${ts};nonce=${nonce};mac=${tag}`;
  }

  /** Check a request's header; counts and returns the verdict. */
  verify(req: PeerRequest & { header: string | undefined }): PeerAuthVerdict {
    const v = this.#verify(req);
    this.counters[v]++;
    return v;
  }

  #verify(req: PeerRequest & { header: string | undefined }): PeerAuthVerdict {
    if (req.header === undefined || req.header === '') return 'missing';
    const m = HEADER_RE.exec(req.header.trim());
    if (!m) return 'malformed';
    const [, kid = '', ts = '', nonce = '', tagText = ''] = m; // every group takes part
    const text = canonical(kid, ts, nonce, req);
    if (text === undefined) return 'malformed';
    const key = this.#keyring.derive(kid, PEER_AUTH_PURPOSE);
    if (!key) return 'unknown-key';
    if (!verifyMac(key, [text], Buffer.from(tagText, 'base64url'))) return 'bad-mac';
    const verdict = this.#replay.check(Number(ts), nonce);
    return verdict;
  }
}
