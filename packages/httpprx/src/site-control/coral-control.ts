/**
 * The `Coral-Control` response field an origin sends to steer the fleet, as a pure parser. It is
 * an RFC 9651 List of tokens with parameters; the one directive defined today:
 *
 *   Coral-Control: redirect-home; max-age=600
 *
 * "Send my clients back to me for the next 600 seconds": every member of the fleet answers
 * requests for this origin (scheme, host and port) with a redirect to the origin's own URL
 * instead of serving or fetching (./opt-outs.ts). `max-age` defaults to
 * `OPT_OUT_DEFAULT_SECONDS` and is capped at `OPT_OUT_MAX_SECONDS`; `max-age=0` lifts an opt-out.
 * Unknown directives and parameters are ignored (so origins can send future ones); a field that
 * does not parse is ignored as a whole.
 */
import { Token, parseList } from 'structured-headers';
import { OPT_OUT_DEFAULT_SECONDS, OPT_OUT_MAX_SECONDS } from '../constants.js';

/** Response field name (lowercase, as Node hands it over). */
export const CORAL_CONTROL_HEADER = 'coral-control';

export type CoralControl =
  | { kind: 'none' }
  | { kind: 'invalid'; reason: string }
  /** `seconds` 0 lifts an opt-out. */
  | { kind: 'redirect-home'; seconds: number };

/** The directive a `Coral-Control` value carries (repeated fields arrive joined with ", "). */
export function parseCoralControl(value: string | string[] | undefined): CoralControl {
  if (value === undefined) return { kind: 'none' };
  const raw = Array.isArray(value) ? value.join(', ') : value;
  let list;
  try {
    list = parseList(raw);
  } catch (e) {
    return { kind: 'invalid', reason: `not an RFC 9651 list: ${(e as Error).message}` };
  }
  for (const [item, params] of list) {
    if (!(item instanceof Token) || item.toString() !== 'redirect-home') continue;
    const maxAge = params.get('max-age');
    if (maxAge === undefined) return { kind: 'redirect-home', seconds: OPT_OUT_DEFAULT_SECONDS };
    if (typeof maxAge !== 'number' || !Number.isInteger(maxAge) || maxAge < 0) {
      return { kind: 'invalid', reason: `max-age must be a non-negative integer` };
    }
    return { kind: 'redirect-home', seconds: Math.min(maxAge, OPT_OUT_MAX_SECONDS) };
  }
  return { kind: 'none' };
}
