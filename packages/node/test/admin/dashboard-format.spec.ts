import { describe, expect, it } from 'vitest';
import {
  fmtAgo,
  fmtBytes,
  fmtInt,
  fmtPercent,
  fmtRate,
  rates,
  sumColumns,
} from '../../src/admin/dashboard/client/format.js';

describe('the dashboard page formats', () => {
  it('writes numbers, bytes, shares and durations the way the page shows them', () => {
    expect(fmtInt(1_234_567)).toBe('1,234,567');
    expect(fmtBytes(512)).toBe('512 B');
    expect(fmtBytes(1536)).toBe('1.50 KiB');
    expect(fmtBytes(10 * 1024 * 1024)).toBe('10.0 MiB');
    expect(fmtBytes(300 * 1024 ** 3)).toBe('300 GiB');
    expect(fmtRate(0)).toBe('0');
    expect(fmtRate(0.25)).toBe('0.25');
    expect(fmtRate(12.34)).toBe('12.3');
    expect(fmtPercent(0.934)).toBe('93.4%');
    expect(fmtPercent(1)).toBe('100%');
    expect(fmtPercent(null)).toBe('–');
    expect(fmtAgo(860)).toBe('0.9 s');
    expect(fmtAgo(42_000)).toBe('42 s');
    expect(fmtAgo(3_600_000)).toBe('60 min');
    expect(fmtAgo(7_500_000)).toBe('2 h 5 min');
  });

  it('turns cumulative samples into per-second rates, with gaps for restarts and holes', () => {
    expect(rates([0, 1_000, 3_000, 4_000, 5_000], [0, 10, 30, 5, null])).toEqual([
      null,
      10,
      10,
      null, // the counter went back: the node restarted
      null,
    ]);
    expect(
      sumColumns(
        [
          [1, null, null],
          [2, 3, null],
        ],
        3,
      ),
    ).toEqual([3, 3, null]);
  });
});
