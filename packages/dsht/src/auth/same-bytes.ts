/**
 * Constant-time comparison of a digest taken as a binary (latin1) string with received bytes: the
 * datagram MAC and the write tokens are digested to strings (no Buffer per digest) and compared
 * here, every byte, with no early exit on a difference.
 */

/**
 * Do the first `n` characters of latin1 string `s` equal `b[at .. at + n)`, with `b` ending there?
 * Defaults: the whole of `s` against the whole of `b` (false when their lengths differ).
 */
export function sameBytes(s: string, b: Uint8Array, at = 0, n = s.length): boolean {
  if (s.length < n || b.length - at !== n) return false;
  let d = 0;
  for (let i = 0; i < n; i++) d |= s.charCodeAt(i) ^ b[at + i]!;
  return d === 0;
}
