import { ManualClock } from '@coral/testkit';
import { describe, expect, it } from 'vitest';
import { RttEstimator, medianOf, RTT_WINDOW } from '../../src/cluster/rtt.js';
import { ERR_BAD_RTT, ERR_CLUSTER_OPTIONS } from '../../src/cluster/errors.js';

describe('medianOf', () => {
  it('takes the middle value, or the mean of the two middle values', () => {
    expect(medianOf([5])).toBe(5);
    expect(medianOf([9, 1, 5])).toBe(5);
    expect(medianOf([4, 1, 3, 2])).toBe(2.5);
    expect(() => medianOf([])).toThrow(RangeError);
  });
});

describe('RttEstimator', () => {
  it('estimates the median of the last N samples and shrugs off spikes', () => {
    const clock = new ManualClock();
    const rtt = new RttEstimator({ clock }, { window: 5 });
    for (const v of [10, 11, 400, 9, 12]) rtt.add('p', v);
    expect(rtt.median('p')).toBe(11);
    expect(rtt.sampleCount('p')).toBe(5);
    // The window slides: the oldest samples drop out.
    for (const v of [50, 50, 50]) rtt.add('p', v);
    expect(rtt.sampleCount('p')).toBe(5);
    expect(rtt.median('p')).toBe(50);
    expect(rtt.median('unknown')).toBeUndefined();
  });

  it('defaults to a window of RTT_WINDOW samples', () => {
    const rtt = new RttEstimator({ clock: new ManualClock() });
    for (let i = 0; i < 20; i++) rtt.add('p', i);
    expect(rtt.sampleCount('p')).toBe(RTT_WINDOW);
    expect(rtt.window).toBe(RTT_WINDOW);
  });

  it('knows the fastest live sample', async () => {
    const clock = new ManualClock();
    const rtt = new RttEstimator({ clock }, { maxAgeMs: 1_000 });
    expect(rtt.minimum('p')).toBeUndefined();
    rtt.add('p', 30);
    await clock.advance(600);
    rtt.add('p', 50);
    expect(rtt.minimum('p')).toBe(30);
    await clock.advance(500);
    expect(rtt.minimum('p')).toBe(50);
  });

  it('needs minSamples before it gives an estimate', () => {
    const rtt = new RttEstimator({ clock: new ManualClock() });
    rtt.add('p', 10);
    rtt.add('p', 12);
    expect(rtt.median('p', 3)).toBeUndefined();
    rtt.add('p', 14);
    expect(rtt.median('p', 3)).toBe(12);
  });

  it('ages samples out', async () => {
    const clock = new ManualClock();
    const rtt = new RttEstimator({ clock }, { maxAgeMs: 1_000 });
    rtt.add('p', 100);
    rtt.add('p', 100);
    await clock.advance(600);
    rtt.add('p', 10);
    expect(rtt.median('p')).toBe(100);
    await clock.advance(500); // the two old samples are now 1100 ms old
    expect(rtt.median('p')).toBe(10);
    expect(rtt.sampleCount('p')).toBe(1);
    expect(rtt.lastSampleAt('p')).toBe(600);
    rtt.add('q', 5);
    await clock.advance(700); // p's last sample is 1200 ms old, q's 700 ms
    expect(rtt.median('p')).toBeUndefined();
    expect(rtt.lastSampleAt('p')).toBeUndefined();
    expect(rtt.peers()).toEqual(['q']);
    expect(rtt.prune()).toBe(1);
    expect(rtt.size).toBe(1);
  });

  it('keeps at most maxPeers peers, dropping the least recently sampled', () => {
    const rtt = new RttEstimator({ clock: new ManualClock() }, { maxPeers: 2 });
    rtt.add('a', 1);
    rtt.add('b', 2);
    rtt.add('a', 1); // a is now the most recent
    rtt.add('c', 3);
    expect(rtt.peers().sort()).toEqual(['a', 'c']);
  });

  it('forgets a peer and lists estimates in its snapshot', async () => {
    const clock = new ManualClock();
    const rtt = new RttEstimator({ clock });
    rtt.add('a', 4);
    await clock.advance(10);
    rtt.add('a', 6);
    rtt.add('b', 7);
    expect(rtt.snapshot()).toEqual([
      { peerId: 'a', medianMs: 5, samples: 2, lastAt: 10 },
      { peerId: 'b', medianMs: 7, samples: 1, lastAt: 10 },
    ]);
    rtt.forget('a');
    expect(rtt.median('a')).toBeUndefined();
  });

  it('rejects bad samples with DSHT_ERR_BAD_RTT and leaves its state alone', () => {
    const rtt = new RttEstimator({ clock: new ManualClock() });
    rtt.add('p', 10);
    for (const bad of [-1, NaN, Infinity, '5' as unknown as number]) {
      expect(() => rtt.add('p', bad)).toThrow(expect.objectContaining({ code: ERR_BAD_RTT }));
    }
    expect(() => rtt.add('', 5)).toThrow(expect.objectContaining({ code: ERR_BAD_RTT }));
    expect(rtt.sampleCount('p')).toBe(1);
    expect(rtt.median('p')).toBe(10);
  });

  it('rejects bad options with DSHT_ERR_CLUSTER_OPTIONS', () => {
    const clock = new ManualClock();
    for (const o of [{ window: 0 }, { window: 1.5 }, { maxAgeMs: 0 }, { maxPeers: 0 }]) {
      expect(() => new RttEstimator({ clock }, o)).toThrow(
        expect.objectContaining({ code: ERR_CLUSTER_OPTIONS }),
      );
    }
  });
});
