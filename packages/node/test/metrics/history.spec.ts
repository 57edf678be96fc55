import { ManualClock } from '@coral/testkit';
import { describe, expect, it } from 'vitest';
import { MetricsHistory, type Readings } from '../../src/metrics/history.js';

describe('MetricsHistory', () => {
  it('samples at start and then every interval, in columns', async () => {
    const clock = new ManualClock(1_000);
    let n = 0;
    const h = new MetricsHistory(
      { clock, read: () => ({ 'requests.hit': n }) },
      { intervalMs: 2_000, capacity: 10 },
    );
    await h.start();
    expect(h.columns()).toEqual({ t: [1_000], series: { 'requests.hit': [0] } });
    n = 5;
    await clock.advance(2_000);
    await h.settled();
    n = 7;
    await clock.advance(2_000);
    await h.settled();
    expect(h.columns()).toEqual({
      t: [1_000, 3_000, 5_000],
      series: { 'requests.hit': [0, 5, 7] },
    });
    expect(h.columns(3_000)).toEqual({ t: [5_000], series: { 'requests.hit': [7] } });
    expect(h.columns(5_000)).toEqual({ t: [], series: {} });
    h.stop();
    await clock.advance(10_000);
    await h.settled();
    expect(h.size).toBe(3);
  });

  it('keeps the newest samples once full, and pads series that appear later with null', async () => {
    const clock = new ManualClock(0);
    let r: Readings = { a: 1 };
    const h = new MetricsHistory({ clock, read: () => r }, { intervalMs: 1_000, capacity: 3 });
    await h.start();
    for (let i = 2; i <= 5; i++) {
      r = i >= 4 ? { a: i, b: i * 10 } : { a: i };
      await clock.advance(1_000);
      await h.settled();
    }
    expect(h.columns()).toEqual({
      t: [2_000, 3_000, 4_000],
      series: { a: [3, 4, 5], b: [null, 40, 50] },
    });
  });

  it('skips a sample whose read fails and goes on', async () => {
    const clock = new ManualClock(0);
    const errors: unknown[] = [];
    let fail = true;
    const h = new MetricsHistory(
      {
        clock,
        read: () => {
          if (fail) throw new Error('registry gone');
          return { a: 1 };
        },
        onError: (e) => errors.push(e),
      },
      { intervalMs: 500 },
    );
    await h.start();
    expect(h.size).toBe(0);
    expect(errors).toHaveLength(1);
    fail = false;
    await clock.advance(500);
    await h.settled();
    expect(h.columns()).toEqual({ t: [500], series: { a: [1] } });
  });

  it('refuses a bad interval or capacity', () => {
    const clock = new ManualClock();
    const read = () => ({});
    expect(() => new MetricsHistory({ clock, read }, { intervalMs: 0 })).toThrow(RangeError);
    expect(() => new MetricsHistory({ clock, read }, { capacity: 1 })).toThrow(RangeError);
  });
});
