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
import type { Clock, TimerHandle } from '@coral/runtime';

/** Microtask turns let run after each timer (and before the first). */
export const SIM_CLOCK_TURNS = 43;

const settled = Promise.resolve();
/** Heap slots the key arrays start with (they double when full). */
const INITIAL_TIMERS = 1024;

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
  /**
   * The timers, a binary heap ordered by (time, creation order), kept as parallel arrays: the keys
   * in typed arrays (a sift compares neighbouring numbers, not fields of timer objects scattered
   * over the heap — the pop was 3 % of a 10,000-node run's CPU), the timers beside them.
   */
  #at = new Float64Array(INITIAL_TIMERS);
  #seqs = new Float64Array(INITIAL_TIMERS);
  #timers: Array<SimTimer | undefined> = [];
  #size = 0;
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
    return this.#size - this.#cancelled;
  }

  /** Time of the next pending timer, or undefined. */
  nextAt(): number | undefined {
    this.#dropCancelled();
    return this.#size > 0 ? this.#at[0] : undefined;
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
        if (this.#size === 0) return resolve();
        const at = this.#at[0]!;
        if (at > target || (strict && at === target)) return resolve();
        const t = this.#pop();
        this.#now = Math.max(this.#now, at);
        const fn = t.fn!;
        t.fn = undefined;
        try {
          fn();
        } catch (err) {
          reject(err);
          return;
        }
        void settled.then(step);
      };
      void settled.then(step);
    });
  }

  #dropCancelled(): void {
    if (this.#cancelled > 64 && this.#cancelled * 2 > this.#size) {
      // Mostly cancelled (RPC timeouts whose answers came): rebuild from the live ones.
      const live: SimTimer[] = [];
      for (let i = 0; i < this.#size; i++) {
        const t = this.#timers[i]!;
        if (t.fn !== undefined) live.push(t);
      }
      this.#timers.length = 0;
      this.#size = 0;
      this.#cancelled = 0;
      for (const t of live) this.#push(t);
      return;
    }
    while (this.#size > 0 && this.#timers[0]!.fn === undefined) {
      this.#pop();
      this.#cancelled--;
    }
  }

  #push(t: SimTimer): void {
    let i = this.#size++;
    if (i >= this.#at.length) {
      const at = new Float64Array(2 * this.#at.length);
      const seqs = new Float64Array(2 * this.#at.length);
      at.set(this.#at);
      seqs.set(this.#seqs);
      this.#at = at;
      this.#seqs = seqs;
    }
    const ats = this.#at;
    const seqs = this.#seqs;
    const timers = this.#timers;
    const a = t.at;
    const q = t.seq;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const pa = ats[p]!;
      if (pa < a || (pa === a && seqs[p]! < q)) break;
      ats[i] = pa;
      seqs[i] = seqs[p]!;
      timers[i] = timers[p];
      i = p;
    }
    ats[i] = a;
    seqs[i] = q;
    timers[i] = t;
  }

  /** Take the first timer off the heap. */
  #pop(): SimTimer {
    const ats = this.#at;
    const seqs = this.#seqs;
    const timers = this.#timers;
    const top = timers[0]!;
    const n = --this.#size;
    const last = timers[n]!;
    const la = ats[n]!;
    const lq = seqs[n]!;
    timers[n] = undefined;
    if (n === 0) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      let m = l;
      let ma = ats[l]!;
      let mq = seqs[l]!;
      if (r < n) {
        const ra = ats[r]!;
        if (ra < ma || (ra === ma && seqs[r]! < mq)) {
          m = r;
          ma = ra;
          mq = seqs[r]!;
        }
      }
      if (la < ma || (la === ma && lq < mq)) break;
      ats[i] = ma;
      seqs[i] = mq;
      timers[i] = timers[m];
      i = m;
    }
    ats[i] = la;
    seqs[i] = lq;
    timers[i] = last;
    return top;
  }
}
