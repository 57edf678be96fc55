/**
 * The simulation's clock: `@coral/testkit`'s `ManualClock` contract (time moves only when told;
 * timers fire in (time, creation order); promise chains a timer starts run before the next timer)
 * at the cost a fleet of thousands of nodes needs — millions of timers per run.
 *
 * What differs from `ManualClock`, and why (a 1,000-node `bench:dsht`, sampled allocations):
 * - Between two timers the microtask queue is let run for `turns` turns by a chain of `then`
 *   callbacks on one settled promise, not by awaiting in an async function: the testkit clock's
 *   flush (twice per timer when driven timer by timer, as `SimFleet.run` did) was 48 % of all
 *   bytes the simulation allocated, and so most of its scavenges.
 * - A cancelled timer drops its callback at once (what it closes over — an RPC's promise chain —
 *   is garbage then, not when the timer would have come due), and cancelled timers are swept out
 *   of the heap when they are more than half of it.
 * - `runUntil(done, stop)` fires timers until a condition holds, checking it between timers
 *   without returning to the caller after each one.
 *
 * The default of 43 turns is what the testkit clock let run between two timers under
 * `SimFleet.run` (two flushes of 20 awaits and three returns), so a run gives the same results
 * with either clock.
 */
import type { Clock, TimerHandle } from '@coral/testkit';

/** Microtask turns let run after each timer (and before the first). */
export const SIM_CLOCK_TURNS = 43;

const settled = Promise.resolve();

class SimTimer implements TimerHandle {
  at: number;
  seq: number;
  fn: (() => void) | undefined;
  readonly #onCancel: () => void;

  constructor(at: number, seq: number, fn: () => void, onCancel: () => void) {
    this.at = at;
    this.seq = seq;
    this.fn = fn;
    this.#onCancel = onCancel;
  }

  cancel(): void {
    if (this.fn === undefined) return;
    this.fn = undefined;
    this.#onCancel();
  }
}

export class SimClock implements Clock {
  readonly turns: number;
  #now: number;
  #seq = 0;
  #heap: SimTimer[] = [];
  /** Cancelled timers still in the heap. */
  #cancelled = 0;
  readonly #onCancel = (): void => {
    this.#cancelled++;
  };

  constructor(start = 0, options: { turns?: number } = {}) {
    this.#now = start;
    this.turns = Math.max(1, options.turns ?? SIM_CLOCK_TURNS);
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const t = new SimTimer(this.#now + Math.max(0, ms), this.#seq++, fn, this.#onCancel);
    this.#push(t);
    return t;
  }

  /**
   * A timer at the absolute time `at` (not `now + ms`, which may round differently): a parallel
   * fleet injects a datagram from another worker at exactly its sender's `now + latency`.
   */
  setTimeoutAt(fn: () => void, at: number): TimerHandle {
    if (!(at >= this.#now)) throw new RangeError(`timer in the past: ${at} < now ${this.#now}`);
    const t = new SimTimer(at, this.#seq++, fn, this.#onCancel);
    this.#push(t);
    return t;
  }

  /**
   * Set the time to `at` without firing anything: every timer before `at` must have fired (a
   * parallel fleet's workers all stand at the end of the last window before new work starts).
   */
  jumpTo(at: number): void {
    const next = this.nextAt();
    if (next !== undefined && next < at) throw new RangeError(`a timer at ${next} is before ${at}`);
    this.#now = Math.max(this.#now, at);
  }

  /** Timers still pending (cancelled ones excluded). */
  get pending(): number {
    return this.#heap.length - this.#cancelled;
  }

  /** Time of the next pending timer, or undefined. */
  nextAt(): number | undefined {
    this.#dropCancelled();
    return this.#heap[0]?.at;
  }

  /** Move time forward by `ms`, firing every timer that falls due, in order. */
  async advance(ms: number): Promise<void> {
    await this.advanceTo(this.#now + ms);
  }

  /** Fire every timer due by `target`, in order, then set the time to `target`. */
  async advanceTo(target: number): Promise<void> {
    await this.#drive(target, undefined);
    this.#now = Math.max(this.#now, target);
  }

  /** Fire timers until none is left or `limitMs` of clock time has passed. */
  async runUntilIdle(limitMs = 3_600_000): Promise<void> {
    await this.#drive(this.#now + limitMs, undefined);
  }

  /**
   * Fire timers due by `stop` one by one, letting promise chains run after each, until `done()`
   * holds (checked before each timer) or no timer is due by `stop`. The time stays at the last
   * timer fired. Resolves with `done()`.
   */
  async runUntil(done: () => boolean, stop: number): Promise<boolean> {
    await this.#drive(stop, done);
    return done();
  }

  /** Fire every timer due strictly before `end` (a parallel fleet's window); the time stays at the last. */
  async runBefore(end: number): Promise<void> {
    await this.#drive(end, undefined, true);
  }

  #drive(target: number, done: (() => boolean) | undefined, strict = false): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const turns = this.turns;
      let tick = 0;
      const step = (): void => {
        if (++tick < turns) {
          void settled.then(step);
          return;
        }
        tick = 0;
        if (done?.()) return resolve();
        this.#dropCancelled();
        const t = this.#heap[0];
        if (!t || t.at > target || (strict && t.at === target)) return resolve();
        this.#pop();
        this.#now = Math.max(this.#now, t.at);
        const fn = t.fn!;
        t.fn = undefined;
        try {
          fn();
        } catch (err) {
          reject(err as Error);
          return;
        }
        void settled.then(step);
      };
      void settled.then(step);
    });
  }

  #dropCancelled(): void {
    const h = this.#heap;
    if (this.#cancelled > 64 && this.#cancelled * 2 > h.length) {
      // Mostly cancelled (RPC timeouts whose answers came): rebuild from the live ones.
      const live = h.filter((t) => t.fn !== undefined);
      this.#heap = [];
      this.#cancelled = 0;
      for (const t of live) this.#push(t);
      return;
    }
    while (h.length > 0 && h[0]!.fn === undefined) {
      this.#pop();
      this.#cancelled--;
    }
  }

  #push(t: SimTimer): void {
    const h = this.#heap;
    let i = h.length;
    h.push(t);
    while (i > 0) {
      const p = (i - 1) >> 1;
      const q = h[p]!;
      if (q.at < t.at || (q.at === t.at && q.seq < t.seq)) break;
      h[i] = q;
      i = p;
    }
    h[i] = t;
  }

  #pop(): void {
    const h = this.#heap;
    const last = h.pop()!;
    const n = h.length;
    if (n === 0) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      let m = l;
      let c = h[l]!;
      if (r < n) {
        const cr = h[r]!;
        if (cr.at < c.at || (cr.at === c.at && cr.seq < c.seq)) {
          m = r;
          c = cr;
        }
      }
      if (last.at < c.at || (last.at === c.at && last.seq < c.seq)) break;
      h[i] = c;
      i = m;
    }
    h[i] = last;
  }
}
