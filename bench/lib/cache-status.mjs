// Where a proxy's answer came from, read from its RFC 9211 Cache-Status header, as the benches
// tally it: `peer` (a member's copy), `local` (this node's cache: a hit, or a fetch it joined),
// else `origin`.

/** `peer`, `local` or `origin` for a Cache-Status field value ('' when absent). */
export function servedFrom(cacheStatus) {
  const cs = cacheStatus.toLowerCase();
  if (/peer/.test(cs)) return 'peer';
  return /\bhit\b|collapsed|coalesced/.test(cs) ? 'local' : 'origin';
}
