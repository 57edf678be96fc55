/**
 * Time as an injected dependency. Production code takes a `Clock` (here: {@link systemClock});
 * tests pass `@coral/testkit`'s `ManualClock` and advance it by hand, so nothing waits on real
 * time and every run is deterministic.
 */

/** A cancellable timer handle returned by {@link Clock.setTimeout}. */
export interface TimerHandle {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since an arbitrary epoch (wall time for `systemClock`). */
  now(): number;
  /** Run `fn` after `ms` milliseconds of this clock's time. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
}

/** The real clock: `Date.now()` and Node timers (unref'd, so they never keep a process alive). */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
};

/**
 * On the real clock, a timer that gives a verdict (a probe or a peer timed out) waits one turn of
 * the event loop for I/O: a process that was busy for a while runs its expired timers before it
 * reads what arrived meanwhile, and an answer already in the socket must not lose to its own
 * timeout. Any other clock is returned as it is (its time is the only time).
 */
export function ioFirst(clock: Clock): Clock {
  if (clock !== systemClock) return clock;
  return {
    now: () => clock.now(),
    setTimeout(fn, ms) {
      let immediate: NodeJS.Immediate | undefined;
      const t = clock.setTimeout(() => {
        immediate = setImmediate(fn);
      }, ms);
      return {
        cancel() {
          t.cancel();
          if (immediate) clearImmediate(immediate);
        },
      };
    },
  };
}
