/**
 * @coral/testkit — time and randomness as injected dependencies.
 *
 * Every Coral component takes a `Clock` (and, where it draws random numbers, a `Random`), so the
 * same code runs on real timers in production and on a hand-driven clock in tests:
 *
 * ```ts
 * const clock = new ManualClock();
 * const table = new RoutingTable({ clock }, { k: 20 });
 * await clock.advance(60_000); // a minute passes, instantly
 * ```
 */
export {
  type Clock,
  type TimerHandle,
  systemClock,
  ioFirst,
  ManualClock,
  flushMicrotasks,
} from './clock.js';
export { type Random, SeededRandom, systemRandom, shuffle } from './random.js';
export { waitFor, type WaitForOptions } from './wait.js';
export {
  type CaOptions,
  type IssueOptions,
  type IssuedCert,
  type TestCa,
  issueCert,
  loadCa,
  makeTestCa,
} from './tls.js';
