/**
 * @coral/testkit — the test doubles of `@coral/runtime`'s vocabulary: a hand-driven clock, a
 * waiter for events outside the test's reach, CAs and a resuming client (`tlsVisit`) for loopback TLS. No production code imports
 * it (`npm test` checks); it re-exports the runtime contracts so a test needs one import.
 *
 * ```ts
 * const clock = new ManualClock();
 * const table = new RoutingTable({ clock }, { k: 20 });
 * await clock.advance(60_000); // a minute passes, instantly
 * ```
 */
export { ManualClock, flushMicrotasks } from './clock.js';
export { waitFor, type Truthy, type WaitForOptions } from './wait.js';
export { type TestCa, makeTestCa, tlsVisit, type TlsVisit, type TlsVisitOptions } from './tls.js';
export {
  type Clock,
  type TimerHandle,
  systemClock,
  ioFirst,
  type Random,
  SeededRandom,
  systemRandom,
  shuffle,
  type CaOptions,
  type IssueOptions,
  type IssuedCert,
  issueCert,
  loadCa,
} from '@coral/runtime';
