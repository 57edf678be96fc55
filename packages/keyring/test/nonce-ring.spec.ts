import { describe, expect, it } from 'vitest';
import { SeededRandom } from '@coral/testkit';
import { NonceRing } from '../src/nonce-ring.js';

describe('NonceRing', () => {
  it('agrees with a Set through adds and oldest-first removals, across growth', () => {
    const rng = new SeededRandom(7);
    const ring = new NonceRing();
    const model: Array<[number, number]> = [];
    const key = (hi: number, lo: number): string => `${hi}:${lo}`;
    const held = new Set<string>();
    for (let step = 0; step < 20_000; step++) {
      // Few distinct high halves: many keys share a probe neighbourhood.
      const hi = rng.int(4);
      const lo = rng.int(3_000);
      if (rng.next() < 0.55) {
        if (!held.has(key(hi, lo))) {
          ring.add(hi, lo, step);
          model.push([hi, lo]);
          held.add(key(hi, lo));
        }
      } else if (model.length > 0) {
        const [h, l] = model.shift()!;
        expect(ring.oldestTs()).toBeLessThanOrEqual(step);
        ring.removeOldest();
        held.delete(key(h, l));
      }
      expect(ring.has(hi, lo)).toBe(held.has(key(hi, lo)));
      expect(ring.size).toBe(model.length);
    }
    for (const [h, l] of model) expect(ring.has(h, l)).toBe(true);
    while (ring.size > 0) ring.removeOldest();
    for (const [h, l] of model) expect(ring.has(h, l)).toBe(false);
    expect(ring.removeOldest()).toBeUndefined();
  });
});
