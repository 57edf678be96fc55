import { describe, expect, it } from 'vitest';
import { waitFor } from '../src/index.js';

describe('waitFor', () => {
  it('returns the first truthy value, from a sync or an async function', async () => {
    let n = 0;
    expect(await waitFor(() => (++n >= 3 ? `after ${n}` : undefined))).toBe('after 3');
    let m = 0;
    expect(await waitFor(async () => ++m >= 2, { everyMs: 1 })).toBe(true);
    expect(m).toBe(2);
  });

  it('gives up after limitMs and says what it waited for', async () => {
    await expect(waitFor(() => false, { what: 'the moon', limitMs: 5 })).rejects.toThrow(
      'timed out waiting for the moon',
    );
  });
});
