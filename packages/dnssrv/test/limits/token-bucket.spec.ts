import { describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { TokenBucket } from '../../src/limits/token-bucket.js';

describe('TokenBucket', () => {
  it('a burst, then the rate; a rate of 0 never gives a token', async () => {
    const clock = new ManualClock();
    const b = new TokenBucket(clock, 4, 2);
    expect([b.take(), b.take(), b.take()]).toEqual([true, true, false]);
    await clock.advance(250);
    expect([b.take(), b.take()]).toEqual([true, false]);
    await clock.advance(10_000); // refills to the burst, no further
    expect([b.take(), b.take(), b.take()]).toEqual([true, true, false]);
    const never = new TokenBucket(clock, 0);
    expect(never.take()).toBe(false);
  });
});
