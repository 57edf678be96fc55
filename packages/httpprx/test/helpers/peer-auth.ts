/**
 * A small, real HMAC-SHA-256 `PeerAuth` for tests (the fleet's own comes from @coral/keyring):
 * `v1.<key id>.<time ms>.<nonce>.<tag>` where the tag is the first 16 bytes of
 * HMAC(key, method \n authority \n path \n time \n nonce), base64url. A verifier accepts a time
 * within ±`windowMs` of its clock and each nonce once (remembered for the window).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '@coral/testkit';
import type { PeerAuth } from '../../src/peer/auth.js';

export class HmacPeerAuth implements PeerAuth {
  readonly #key: Buffer;
  readonly #id: string;
  readonly #clock: Clock;
  readonly #windowMs: number;
  readonly #seen = new Map<string, number>();

  constructor(key: string | Buffer, clock: Clock, windowMs = 30_000) {
    this.#key = typeof key === 'string' ? Buffer.from(key, 'hex') : key;
    this.#id = createHash('sha256').update(this.#key).digest('hex').slice(0, 8);
    this.#clock = clock;
    this.#windowMs = windowMs;
  }

  #tag(method: string, authority: string, path: string, time: string, nonce: string): Buffer {
    return createHmac('sha256', this.#key)
      .update([method, authority, path, time, nonce].join('\n'))
      .digest()
      .subarray(0, 16);
  }

  sign(req: { method: string; authority: string; path: string }): string {
    const time = String(this.#clock.now());
    const nonce = randomBytes(12).toString('base64url');
    const tag = this.#tag(req.method, req.authority, req.path, time, nonce);
    return `v1.${this.#id}.${time}.${nonce}.${tag.toString('base64url')}`;
  }

  verify(req: {
    method: string;
    authority: string;
    path: string;
    header: string | undefined;
  }): string {
    if (req.header === undefined) return 'missing';
    const parts = req.header.split('.');
    if (parts.length !== 5 || parts[0] !== 'v1' || !/^[0-9]+$/.test(parts[2]!)) return 'malformed';
    const [, id, time, nonce, tag] = parts as [string, string, string, string, string];
    if (id !== this.#id) return 'unknown-key';
    const got = Buffer.from(tag, 'base64url');
    const want = this.#tag(req.method, req.authority, req.path, time, nonce);
    if (got.length !== want.length || !timingSafeEqual(got, want)) return 'bad-mac';
    const now = this.#clock.now();
    if (Math.abs(now - Number(time)) > this.#windowMs) return 'stale';
    for (const [n, at] of this.#seen) if (now - at > 2 * this.#windowMs) this.#seen.delete(n);
    if (this.#seen.has(nonce)) return 'replayed';
    this.#seen.set(nonce, now);
    return 'ok';
  }
}

/** A 32-byte key as 64 hex characters. */
export function testKey(fill: number): string {
  return Buffer.alloc(32, fill).toString('hex');
}
