import type { NamesErrorCode } from './errors.js';

/** The two origin schemes Coral fetches from. */
export type Scheme = 'http' | 'https';

/**
 * The two spellings of a Coralized name:
 * - `legacy`: the origin host's labels, then an optional port label, then the zone
 *   (`www.example.com.8080.nyud.net`); http origins only; not covered by a wildcard certificate.
 * - `one-label`: the origin as one label under the zone (`www-example-com.nyud.net`), so that one
 *   `*.<zone>` certificate covers every site.
 */
export type Form = 'legacy' | 'one-label';

/** An origin server: scheme, canonical host (lowercase, A-labels, no trailing dot) and port. */
export interface Origin {
  scheme: Scheme;
  host: string;
  port: number;
}

/** The outcome of a pure check: a value, or a stable code and a reason for people. */
export type Checked<T> =
  { ok: true; value: T } | { ok: false; code: NamesErrorCode; reason: string };

export const ok = <T>(value: T): Checked<T> => ({ ok: true, value });
export const fail = <T = never>(code: NamesErrorCode, reason: string): Checked<T> => ({
  ok: false,
  code,
  reason,
});
