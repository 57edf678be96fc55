import { ManualClock } from '@coral/testkit';
import { describe, expect, it } from 'vitest';
import {
  HEAP_TRIM_RSS_GROWTH_BYTES,
  HeapTrimmer,
  loadMallocTrim,
} from '../../src/runtime/heap-trim.js';
import { glibc } from '../helpers.js';

const MB = 2 ** 20;

/** A trimmer on a manual clock whose event-loop load and RSS the test sets per interval. */
function setup() {
  const clock = new ManualClock();
  const state = { utilization: 0, rss: 200 * MB, releasable: 0 };
  const trims: Array<[number, number]> = [];
  const trimmer = new HeapTrimmer({
    intervalMs: 10_000,
    clock,
    utilization: () => state.utilization,
    rss: () => state.rss,
    trim: () => {
      state.rss -= state.releasable;
      const released = state.releasable > 0;
      state.releasable = 0;
      return released;
    },
    onTrim: (released, tookMs) => trims.push([released, tookMs]),
  });
  /** One second (a check) with the event loop this busy. */
  const second = async (utilization: number) => {
    state.utilization = utilization;
    await clock.advance(1_000);
  };
  /** Ten seconds (the interval) with the event loop this busy. */
  const interval = async (utilization: number) => {
    for (let i = 0; i < 10; i++) await second(utilization);
  };
  return { clock, state, trims, trimmer, interval, second };
}

describe('HeapTrimmer', () => {
  it('trims in the first quiet interval after start, reporting the RSS it released', async () => {
    const { state, trims, trimmer, interval } = setup();
    trimmer.start();
    state.releasable = 12 * MB;
    await interval(0.01);
    expect(trims).toEqual([[12 * MB, 0]]);
    const releasedBytes = trims.reduce((sum, [released]) => sum + released, 0);
    expect({ trims: trims.length, releasedBytes }).toEqual({ trims: 1, releasedBytes: 12 * MB });
  });

  it('never trims while the event loop is busy, then once in the quiet interval that follows', async () => {
    const { state, trims, trimmer, interval } = setup();
    trimmer.start();
    await interval(0); // the start's trim
    for (let i = 0; i < 6; i++) {
      state.rss += 20 * MB; // a busy spell grows the heap
      await interval(0.6);
    }
    expect(trims).toHaveLength(1);
    state.releasable = 30 * MB;
    await interval(0.02);
    expect(trims).toHaveLength(2);
    expect(trims[1]![0]).toBe(30 * MB);
    // Quiet afterwards, nothing grew: nothing to do.
    await interval(0);
    await interval(0.05);
    expect(trims).toHaveLength(2);
  });

  it('trims again at rest once the RSS grew by the threshold since the last trim', async () => {
    const { state, trims, trimmer, interval } = setup();
    trimmer.start();
    await interval(0);
    state.rss += HEAP_TRIM_RSS_GROWTH_BYTES; // not above the threshold
    await interval(0);
    expect(trims).toHaveLength(1);
    state.rss += 1;
    await interval(0);
    expect(trims).toHaveLength(2);
  });

  it('waits for a whole quiet interval up to now: load that resumes puts the trim off', async () => {
    const { trims, trimmer, second, interval } = setup();
    trimmer.start();
    for (let i = 0; i < 9; i++) await second(0);
    await second(0.5); // load comes back in the tenth second
    expect(trims).toHaveLength(0);
    for (let i = 0; i < 9; i++) await second(0);
    expect(trims).toHaveLength(0);
    await second(0);
    expect(trims).toHaveLength(1);
    await interval(0);
    expect(trims).toHaveLength(1);
  });

  it('treats an interval busy exactly at the threshold as busy', async () => {
    const { trims, trimmer, interval } = setup();
    trimmer.start();
    await interval(0.1);
    expect(trims).toHaveLength(0);
    await interval(0.099);
    expect(trims).toHaveLength(1);
  });

  it('stops checking once stopped', async () => {
    const { clock, trims, trimmer, interval } = setup();
    trimmer.start();
    trimmer.stop();
    await interval(0);
    await clock.runUntilIdle();
    expect(trims).toHaveLength(0);
  });

  it('refuses a period that is not positive', () => {
    expect(() => new HeapTrimmer({ intervalMs: 0, trim: () => false })).toThrow(/intervalMs/);
  });
});

describe('loadMallocTrim', () => {
  it.runIf(glibc)('calls glibc malloc_trim on this machine', async () => {
    const loaded = await loadMallocTrim();
    if ('unavailable' in loaded) throw new Error(loaded.unavailable);
    expect(typeof loaded.trim()).toBe('boolean');
  });

  it('says why when the library has no malloc_trim', async () => {
    const loaded = await loadMallocTrim('libcoral-no-such-library.so');
    expect(loaded).toEqual({
      unavailable: expect.stringMatching(/malloc_trim not found|no glibc/),
    });
  });
});

describe('HeapTrimmer out of descriptors', () => {
  it('survives EMFILE from process.memoryUsage.rss(): counted, skipped, trims again once it passes', async () => {
    // What libuv's uv_resident_set_memory throws when the process cannot open /proc/self/stat.
    const emfile = Object.assign(new Error('EMFILE: too many open files, uv_resident_set_memory'), {
      code: 'EMFILE',
      syscall: 'uv_resident_set_memory',
    });
    const clock = new ManualClock();
    let exhausted = true;
    const errors: unknown[] = [];
    const trims: number[] = [];
    const trimmer = new HeapTrimmer({
      intervalMs: 10_000,
      clock,
      utilization: () => 0,
      rss: () => {
        if (exhausted) throw emfile;
        return 100 * MB;
      },
      trim: () => true,
      onTrim: (released) => trims.push(released),
      onError: (err) => errors.push(err),
    });
    trimmer.start();
    await clock.advance(30_000); // three quiet intervals, every trim attempt failing
    expect(errors.length).toBeGreaterThanOrEqual(3);
    expect(errors.every((e) => e === emfile)).toBe(true);
    expect(trims).toEqual([]);
    expect(clock.pending).toBe(1); // its timer still runs
    exhausted = false;
    await clock.advance(10_000);
    expect(trims).toEqual([0]);
    trimmer.stop();
    expect(clock.pending).toBe(0);
  });
});
