import { describe, expect, it } from 'vitest';
import { connectionCeiling, CONNGUARD_ERR_OPTIONS } from '../src/index.js';

describe('connectionCeiling', () => {
  it('keeps a quarter of the limit (at least 128, at most half) and caps large limits', () => {
    expect(connectionCeiling(256)).toEqual({ limit: 256, reserve: 128, ceiling: 128 });
    expect(connectionCeiling(200)).toEqual({ limit: 200, reserve: 100, ceiling: 100 });
    expect(connectionCeiling(1024)).toEqual({ limit: 1024, reserve: 256, ceiling: 768 });
    expect(connectionCeiling(20_000)).toEqual({ limit: 20_000, reserve: 5_000, ceiling: 15_000 });
    expect(connectionCeiling(1_048_576).ceiling).toBe(16_384);
    expect(connectionCeiling(1024, { reserveMin: 0, reserveFraction: 0, max: 100 }).ceiling).toBe(
      100,
    );
  });

  it('refuses a limit or a reserve that makes no sense', () => {
    for (const [limit, o] of [
      [1, {}],
      [1.5, {}],
      [1024, { reserveFraction: 1 }],
      [1024, { reserveMin: -1 }],
      [1024, { max: 0 }],
    ] as const) {
      expect(() => connectionCeiling(limit, o)).toThrow(
        expect.objectContaining({ code: CONNGUARD_ERR_OPTIONS }),
      );
    }
  });
});
