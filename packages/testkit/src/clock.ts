/**
 * The hand-driven clock of tests: {@link ManualClock} implements `@coral/runtime`'s `Clock`, and
 * time moves only when a test says so, so nothing waits on real time and every run is
 * deterministic.
 */
import type { Clock, TimerHandle } from '@coral/runtime';

interface PendingTimer {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/**
 * A clock that only moves when told to. Timers fire in (time, creation order) during
 * {@link ManualClock.advance} / {@link ManualClock.runUntilIdle}; a timer scheduled by a firing
 * timer fires in the same advance if it is due.
 */
export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  #heap: PendingTimer[] = [];

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer: PendingTimer = {
      at: this.#now + Math.max(0, ms),
      seq: this.#seq++,
      fn,
      cancelled: false,
    };
    this.#push(timer);
    return {
      cancel: () => {
        timer.cancelled = true;
      },
    };
  }

  /** Number of timers still pending (cancelled ones excluded). */
  get pending(): number {
    return this.#heap.filter((t) => !t.cancelled).length;
  }

  /** Time of the next pending timer, or undefined. */
  nextAt(): number | undefined {
    this.#dropCancelled();
    return this.#heap[0]?.at;
  }

  /**
   * Move time forward by `ms`, firing every timer that falls due, in order. Between timers the
   * microtask queue is drained (`await`), so promise chains started by a timer run before the next one.
   */
  async advance(ms: number): Promise<void> {
    await this.advanceTo(this.#now + ms);
  }

  async advanceTo(target: number): Promise<void> {
    await flushMicrotasks();
    for (;;) {
      this.#dropCancelled();
      const next = this.#heap[0];
      if (!next || next.at > target) break;
      this.#pop();
      this.#now = Math.max(this.#now, next.at);
      next.fn();
      await flushMicrotasks();
    }
    this.#now = Math.max(this.#now, target);
  }

  /** Fire timers until none is left or `limitMs` of clock time has passed. */
  async runUntilIdle(limitMs = 3_600_000): Promise<void> {
    const stop = this.#now + limitMs;
    for (;;) {
      const at = this.nextAt();
      if (at === undefined || at > stop) return;
      await this.advanceTo(at);
    }
  }

  #dropCancelled(): void {
    while (this.#heap[0]?.cancelled) this.#pop();
  }

  #less(a: PendingTimer, b: PendingTimer): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  #push(t: PendingTimer): void {
    const h = this.#heap;
    h.push(t);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.#less(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  #pop(): PendingTimer | undefined {
    const h = this.#heap;
    const top = h[0];
    const last = h.pop();
    if (h.length > 0 && last) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.#less(h[l]!, h[m]!)) m = l;
        if (r < h.length && this.#less(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}

/** Let queued promise callbacks run (a few macrotask-free turns of the microtask queue). */
export async function flushMicrotasks(turns = 20): Promise<void> {
  for (let i = 0; i < turns; i++) await Promise.resolve();
}
