import { describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';

describe('ManualClock', () => {
  it('fires timers in time order, then creation order, only when advanced', async () => {
    const clock = new ManualClock(1000);
    const fired: string[] = [];
    clock.setTimeout(() => fired.push('b'), 20);
    clock.setTimeout(() => fired.push('a'), 10);
    clock.setTimeout(() => fired.push('c'), 20);
    expect(fired).toEqual([]);
    await clock.advance(15);
    expect(fired).toEqual(['a']);
    expect(clock.now()).toBe(1015);
    await clock.advance(5);
    expect(fired).toEqual(['a', 'b', 'c']);
  });

  it('does not fire cancelled timers and fires timers scheduled by timers', async () => {
    const clock = new ManualClock();
    const fired: number[] = [];
    const t = clock.setTimeout(() => fired.push(1), 10);
    clock.setTimeout(() => clock.setTimeout(() => fired.push(3), 5), 10);
    t.cancel();
    await clock.advance(100);
    expect(fired).toEqual([3]);
    expect(clock.pending).toBe(0);
  });

  it('lets promise chains started by a timer settle before the next timer', async () => {
    const clock = new ManualClock();
    const order: string[] = [];
    clock.setTimeout(() => {
      void Promise.resolve().then(() => order.push('micro'));
    }, 1);
    clock.setTimeout(() => order.push('second'), 2);
    await clock.advance(2);
    expect(order).toEqual(['micro', 'second']);
  });
});
