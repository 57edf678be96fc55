/**
 * @coral/runtime — the vocabulary every Coral package shares at run time: time, randomness, IP
 * addresses and certificates. No Coral dependency, so any package may use it without a cycle.
 *
 * Every component takes a `Clock` (and, where it draws random numbers, a `Random`), so the same
 * code runs on real timers in production and on a hand-driven clock in tests (`@coral/testkit`
 * holds the test doubles: `ManualClock`, `waitFor`, `makeTestCa`):
 *
 * ```ts
 * import { systemClock, systemRandom, parseIp, prefixKey } from '@coral/runtime';
 * const table = new RoutingTable({ clock: systemClock, random: systemRandom }, { k: 20 });
 * prefixKey(parseIp('203.0.113.77')!, 24); // '203.0.113.0/24'
 * ```
 */
export { type Clock, type TimerHandle, systemClock, ioFirst } from './clock.js';
export { type Random, SeededRandom, systemRandom, shuffle } from './random.js';
export {
  type Cidr,
  parseIp,
  parseIPv4,
  parseIPv6,
  isV4Mapped,
  formatIp,
  maskBytes,
  ipv6Groups,
  parseCidr,
  cidrContains,
  prefixKey,
} from './ip.js';
export {
  type CertificateAuthority,
  type CaOptions,
  type IssueOptions,
  type IssuedCert,
  makeCa,
  issueCert,
  loadCa,
} from './x509.js';
