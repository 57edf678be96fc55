import { describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { SimClock } from '../../src/clock/sim-clock.js';

describe('SimClock', () => {
  it('fires timers in time order, then creation order, only when advanced', async () => {
    const clock = new SimClock(1000);
    const fired: string[] = [];
    clock.setTimeout(() => fired.push('b'), 20);
    clock.setTimeout(() => fired.push('a'), 10);
    clock.setTimeout(() => fired.push('c'), 20);
    expect(fired).toEqual([]);
    expect(clock.nextAt()).toBe(1010);
    await clock.advance(15);
    expect(fired).toEqual(['a']);
    expect(clock.now()).toBe(1015);
    await clock.advance(5);
    expect(fired).toEqual(['a', 'b', 'c']);
    expect(clock.nextAt()).toBeUndefined();
  });

  it('does not fire cancelled timers and fires timers scheduled by timers', async () => {
    const clock = new SimClock();
    const fired: number[] = [];
    const t = clock.setTimeout(() => fired.push(1), 10);
    clock.setTimeout(() => clock.setTimeout(() => fired.push(3), 5), 10);
    t.cancel();
    t.cancel();
    expect(clock.pending).toBe(1);
    await clock.advance(100);
    expect(fired).toEqual([3]);
    expect(clock.pending).toBe(0);
  });

  it('lets promise chains started by a timer settle before the next timer', async () => {
    const clock = new SimClock();
    const order: string[] = [];
    clock.setTimeout(() => {
      void (async () => {
        // A chain several turns deep.
        for (let i = 0; i < 10; i++) await Promise.resolve();
        order.push('chain');
      })();
    }, 1);
    clock.setTimeout(() => order.push('second'), 1);
    await clock.advance(1);
    expect(order).toEqual(['chain', 'second']);
  });

  it('sweeps cancelled timers out of the heap and keeps the live ones in order', async () => {
    const clock = new SimClock();
    const fired: number[] = [];
    const handles = Array.from({ length: 1000 }, (_, i) =>
      clock.setTimeout(() => fired.push(i), 1000 - i),
    );
    for (let i = 0; i < 1000; i++) if (i % 10 !== 0) handles[i]!.cancel();
    expect(clock.pending).toBe(100);
    // The sweep runs when the next due time is asked for: the earliest live timer is i = 990.
    expect(clock.nextAt()).toBe(10);
    await clock.runUntilIdle();
    expect(fired).toEqual(Array.from({ length: 100 }, (_, j) => 990 - 10 * j));
    expect(clock.pending).toBe(0);
  });

  it('runUntil stops between timers once the condition holds, at the last timer’s time', async () => {
    const clock = new SimClock(0);
    let n = 0;
    for (let i = 1; i <= 5; i++) clock.setTimeout(() => n++, i * 10);
    expect(await clock.runUntil(() => n >= 3, 1000)).toBe(true);
    expect(n).toBe(3);
    expect(clock.now()).toBe(30);
    expect(await clock.runUntil(() => false, 45)).toBe(false);
    expect(n).toBe(4);
    expect(clock.now()).toBe(40);
  });

  it('rejects when a timer throws, and keeps the later timers', async () => {
    const clock = new SimClock();
    const fired: string[] = [];
    clock.setTimeout(() => {
      throw new Error('boom');
    }, 1);
    clock.setTimeout(() => fired.push('later'), 2);
    await expect(clock.advance(5)).rejects.toThrow('boom');
    await clock.advance(5);
    expect(fired).toEqual(['later']);
  });

  it('orders the same work as the testkit ManualClock driven timer by timer', async () => {
    const trace = async (clock: SimClock | ManualClock): Promise<string[]> => {
      const out: string[] = [];
      for (let i = 0; i < 20; i++) {
        clock.setTimeout(
          () => {
            out.push(`t${i}`);
            void Promise.resolve()
              .then(() => out.push(`a${i}`))
              .then(() => out.push(`b${i}`));
          },
          (i * 7) % 5,
        );
      }
      for (let at = clock.nextAt(); at !== undefined; at = clock.nextAt())
        await clock.advanceTo(at);
      return out;
    };
    expect(await trace(new SimClock())).toEqual(await trace(new ManualClock()));
  });
});

describe('SimClock for a parallel fleet’s windows', () => {
  it('runBefore fires only timers strictly before the end; setTimeoutAt keeps the exact time', async () => {
    const clock = new SimClock(100);
    const fired: number[] = [];
    const at = 100.1 + 0.2; // an absolute time, kept as given
    clock.setTimeoutAt(() => fired.push(clock.now()), at);
    clock.setTimeout(() => fired.push(clock.now()), 10);
    clock.setTimeout(() => fired.push(clock.now()), 20);
    await clock.runBefore(110);
    expect(fired).toEqual([at]);
    await clock.runBefore(110.000001);
    expect(fired).toEqual([at, 110]);
    expect(clock.nextAt()).toBe(120);
  });

  it('refuses a timer in the past and a jump over a pending timer', () => {
    const clock = new SimClock(100);
    expect(() => clock.setTimeoutAt(() => undefined, 99.5)).toThrow(RangeError);
    clock.setTimeout(() => undefined, 10);
    expect(() => clock.jumpTo(111)).toThrow(RangeError);
    clock.jumpTo(110);
    expect(clock.now()).toBe(110);
    clock.jumpTo(105);
    expect(clock.now()).toBe(110);
  });
});
