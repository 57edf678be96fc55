/**
 * The admin API's answer to a fleet-wide change (`POST /v1/purge`, the ACME challenge routes):
 * 200 when every live member applied it, else **502** `CORAL_ERR_FLEET_INCOMPLETE` with the whole
 * answer (each member's result) beside the error, so that neither a script nor the CLI can take a
 * change that did not reach a member for done.
 */
import { FleetIncompleteError } from '../errors.js';
import { json, type AdminResponse } from './http.js';

interface Propagated {
  propagation: {
    mode: 'off' | 'sent';
    complete: boolean;
    members: { ok: boolean; address: string; error?: string }[];
    reason?: string;
  };
}

export function fleetAnswer(what: string, answer: Propagated): AdminResponse {
  const p = answer.propagation;
  if (p.complete) return json(200, answer);
  const missed = p.members.filter((m) => !m.ok).map((m) => `${m.address} ${m.error ?? ''}`.trim());
  const why =
    missed.length > 0
      ? `not applied by ${missed.length} of ${p.members.length} live members (${missed.join(', ')})`
      : `not passed on to the fleet: ${p.reason ?? 'no member reached'}`;
  const err = new FleetIncompleteError(`${what} applied here but ${why}`);
  return json(err.statusCode, { ...answer, error: { code: err.code, message: err.message } });
}
