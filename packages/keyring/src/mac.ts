/**
 * Message authentication over byte parts: HMAC-SHA-256 from node:crypto, the tag truncated to
 * `tagBytes` (16 by default, at least 16, at most 32: RFC 2104 §5 allows truncation to half the
 * hash length), compared in constant time.
 *
 * Parts are fed to the HMAC one after another with no separators: callers that MAC variable-length
 * fields either fix their lengths (the DSHT datagram header) or join them with a separator that
 * cannot occur inside a field (the HTTP peer header), so two different messages never share bytes.
 */
import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { KEYRING_ERR_INVALID_ARGUMENT, KeyringError } from './errors.js';

/** Default length of a MAC tag in bytes. */
export const MAC_TAG_BYTES = 16;
/** Shortest tag the helpers produce or accept. */
export const MAC_MIN_TAG_BYTES = 16;
/** Longest tag (the full HMAC-SHA-256 output). */
export const MAC_MAX_TAG_BYTES = 32;

export type MacKey = KeyObject | Uint8Array;
export type MacPart = Uint8Array | string;

function checkTagBytes(n: number): void {
  if (!Number.isInteger(n) || n < MAC_MIN_TAG_BYTES || n > MAC_MAX_TAG_BYTES) {
    throw new KeyringError(
      KEYRING_ERR_INVALID_ARGUMENT,
      `MAC tag length must be an integer from ${MAC_MIN_TAG_BYTES} to ${MAC_MAX_TAG_BYTES} bytes, got ${n}`,
    );
  }
}

/** A KeyObject for repeated MACs with the same secret (faster than passing raw bytes each time). */
export function macKey(secret: Uint8Array): KeyObject {
  return createSecretKey(secret);
}

/** HMAC-SHA-256 of the parts, truncated to `tagBytes`. */
export function mac(key: MacKey, parts: readonly MacPart[], tagBytes = MAC_TAG_BYTES): Uint8Array {
  checkTagBytes(tagBytes);
  const h = createHmac('sha256', key);
  for (const p of parts) h.update(p);
  const d = h.digest();
  return new Uint8Array(d.buffer, d.byteOffset, tagBytes);
}

/**
 * Does `tag` authenticate the parts? The tag's own length (16..32) selects the truncation; any
 * other length is simply false. Constant time in the tag's contents.
 */
export function verifyMac(key: MacKey, parts: readonly MacPart[], tag: Uint8Array): boolean {
  if (tag.length < MAC_MIN_TAG_BYTES || tag.length > MAC_MAX_TAG_BYTES) return false;
  const h = createHmac('sha256', key);
  for (const p of parts) h.update(p);
  const d = h.digest();
  return timingSafeEqual(d.subarray(0, tag.length), tag);
}
