/**
 * Authentication of a member's *answer* to a peer request (peer/requests.ts). The request is
 * signed (`Coral-Peer-Auth`); the answer carries
 *
 *   Coral-Peer-Answer: v1;kid=<8 hex>;mac=<16 bytes b64url>
 *
 * where mac = HMAC-SHA-256 (truncated to 16 bytes) under the key's `coral-http-peer-answer-v1`
 * subkey (@coral/keyring `derive`) over
 *
 *   "coral-peer-answer/v1" LF <the request's Coral-Peer-Auth value> LF <status> LF <SHA-256 hex of the body>
 *
 * The request's value holds its nonce and its own MAC, so an answer is bound to the one request
 * it answers: whatever else listens at a member's address (a local process on the member's host
 * when its admin API is bound to loopback, a machine that took over the address) cannot make up
 * an answer, replay an old one or change one byte of a real one. The sender checks the MAC before
 * it parses the body. Only a request that verified gets a sealed answer.
 */
import { createHash } from 'node:crypto';
import { mac, verifyMac, type Keyring } from '@coral/keyring';

/** Name of the answer header, lowercase as Node reads it. */
export const PEER_ANSWER_HEADER = 'coral-peer-answer';
/** HKDF purpose of the subkey that seals answers (never the one that signs requests). */
export const PEER_ANSWER_PURPOSE = 'coral-http-peer-answer-v1';
const TAG_BYTES = 16;
const HEADER_RE = /^v1;kid=([0-9a-f]{8});mac=([A-Za-z0-9_-]{22})$/;

export type AnswerKeys = Pick<Keyring, 'signing' | 'derive'>;

export class PeerAnswerAuth {
  readonly #keys: AnswerKeys;

  constructor(keys: AnswerKeys) {
    this.#keys = keys;
  }

  /** The header value sealing `body` sent with `status` in answer to the request `requestAuth`. */
  seal(requestAuth: string, status: number, body: string | Uint8Array): string {
    const { id, key } = this.#keys.signing(PEER_ANSWER_PURPOSE);
    const tag = mac(key, [canonical(requestAuth, status, body)], TAG_BYTES);
    return `v1;kid=${id};mac=${Buffer.from(tag).toString('base64url')}`;
  }

  /** Does `header` seal exactly this status and body as the answer to `requestAuth`? */
  check(
    requestAuth: string,
    status: number,
    body: string | Uint8Array,
    header: string | undefined,
  ): boolean {
    const m = header === undefined ? null : HEADER_RE.exec(header.trim());
    if (!m) return false;
    const key = this.#keys.derive(m[1]!, PEER_ANSWER_PURPOSE);
    if (!key) return false;
    return verifyMac(key, [canonical(requestAuth, status, body)], Buffer.from(m[2]!, 'base64url'));
  }
}

function canonical(requestAuth: string, status: number, body: string | Uint8Array): string {
  const digest = createHash('sha256').update(body).digest('hex');
  return `coral-peer-answer/v1\n${requestAuth}\n${status}\n${digest}`;
}
