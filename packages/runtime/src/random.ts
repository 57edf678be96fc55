/**
 * A seeded pseudo-random source (xoshiro128**), so simulations, fuzzers and jittered timers
 * replay exactly from a seed. Not for cryptography: use `node:crypto` for ids an attacker
 * must not guess.
 */
export interface Random {
  /** Uniform float in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
  /** Fill `buf` with random bytes and return it. */
  bytes(buf: Uint8Array): Uint8Array;
}

export class SeededRandom implements Random {
  #s: Uint32Array;

  constructor(seed: number) {
    // splitmix32 expands the seed into the four state words.
    let x = seed >>> 0;
    const next = (): number => {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.#s = new Uint32Array([next(), next(), next(), next()]);
  }

  #u32(): number {
    const s = this.#s;
    const result = Math.imul(rotl(Math.imul(s[1]!, 5) >>> 0, 7), 9) >>> 0;
    const t = (s[1]! << 9) >>> 0;
    s[2]! ^= s[0]!;
    s[3]! ^= s[1]!;
    s[1]! ^= s[2]!;
    s[0]! ^= s[3]!;
    s[2]! ^= t;
    s[3] = rotl(s[3]!, 11);
    return result;
  }

  next(): number {
    return this.#u32() / 4294967296;
  }

  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  bytes(buf: Uint8Array): Uint8Array {
    for (let i = 0; i < buf.length; i++) buf[i] = this.#u32() & 0xff;
    return buf;
  }

  /** A new generator whose stream is independent of this one's future output. */
  fork(): SeededRandom {
    return new SeededRandom(this.#u32());
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

/** Fisher-Yates shuffle in place with the given source. */
export function shuffle<T>(items: T[], rng: Random): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

/** `Math.random` behind the `Random` interface, for production paths that accept one. */
export const systemRandom: Random = {
  next: () => Math.random(),
  int: (n) => Math.floor(Math.random() * n),
  bytes: (buf) => {
    for (let i = 0; i < buf.length; i++) buf[i] = Math.floor(Math.random() * 256);
    return buf;
  },
};
