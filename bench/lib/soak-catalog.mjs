// The objects of bench:soak's origin, by index (`/obj/<i>`), shared by the origin process and the
// clients that check what they get: the large objects first, then a fixed hot set, then the stream
// of new URLs. Bytes are objectBody(i, size) (@coral/node/fleet), a pure function of the index.

/** `/obj/0` … `/obj/<L-1>`: the large objects (their sizes are the bench's `--large-mb`). */
export const LARGE_BASE = 0;
/** `/obj/1000` …: the hot set (hits once fetched; the purges pick from it). */
export const HOT_BASE = 1_000;
/**
 * `/obj/500000` …: the warm-up's objects (4–64 KiB, like the hot set), asked to fill each node's
 * memory tier before the run and after each restart; never asked by the load, never counted.
 */
export const WARM_BASE = 500_000;
/** `/obj/1000000` …: the stream of new URLs, each index asked for the first time once. */
export const NEW_BASE = 1_000_000;

/** A well-mixed 32-bit hash of an index (sizes vary without a pattern). */
function mix(i) {
  let x = Math.imul(i ^ (i >>> 16), 0x45d9f3b);
  x = Math.imul(x ^ (x >>> 16), 0x45d9f3b);
  return (x ^ (x >>> 16)) >>> 0;
}

/**
 * Size in bytes of object `i`: `largeBytes[i]` for the large ones, 4–64 KiB in the hot set,
 * 1–8 KiB in the stream of new URLs (they pile up in every cache and in the origin's memory).
 */
export function soakObjectBytes(i, largeBytes) {
  if (i - LARGE_BASE < largeBytes.length) return largeBytes[i - LARGE_BASE];
  if (i >= NEW_BASE) return 1024 + (mix(i) % (7 * 1024));
  return 4096 + (mix(i) % (60 * 1024));
}
