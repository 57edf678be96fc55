/** Helpers for the structures kept in typed arrays (value store, registry, peer tokens, RTT). */

type Numeric = Float64Array | Uint32Array | Int32Array | Uint8Array;

/** A new array of `a`'s type, `n` long, holding `a`'s values (`n` ≥ a.length). */
export function resized<T extends Numeric>(a: T, n: number): T {
  const out = new (a.constructor as new (n: number) => T)(n);
  out.set(a);
  return out;
}
