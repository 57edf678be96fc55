/** The Coralized name parser: name under a zone → what it stands for. Pure; never throws. */
import { ACME_CHALLENGE_LABEL, MAX_NAME_OCTETS } from './constants.js';
import type { NamesErrorCode } from './errors.js';
import { decodeLegacy } from './forms/legacy.js';
import { decodeOneLabel } from './forms/one-label.js';
import { isInZone } from './host.js';
import { hostToAscii, isAscii } from './idna.js';
import type { Form, Scheme } from './types.js';
import { matchZone, zoneKey } from './zone.js';

export type CoralName =
  /** Not under any configured zone (DNS: REFUSED; proxy: not Coralized). */
  | { kind: 'outside' }
  /** The zone apex itself (SOA, NS; the proxy's own pages). */
  | { kind: 'apex'; zone: string }
  /** `_acme-challenge.<zone>`: the ACME DNS-01 TXT name for the zone's wildcard certificate. */
  | { kind: 'acme-challenge'; zone: string }
  /** A Coralized origin: canonical host (lowercase, A-labels), port, and which form named it. */
  | { kind: 'origin'; zone: string; form: Form; scheme: Scheme; host: string; port: number }
  /** Under a zone but not a Coralized origin (DNS: NXDOMAIN; proxy: 400). */
  | { kind: 'invalid'; zone: string; code: NamesErrorCode; reason: string };

/**
 * Parse `name` (presentation form, any case, trailing dot or not; U-labels are mapped by UTS #46)
 * against `zones`. When zones nest, the longest match wins. One label before the zone is the
 * one-label form; two or more are the legacy form.
 */
export function parseCoralName(name: string, zones: readonly string[]): CoralName {
  let n = name.toLowerCase();
  let idnError = false;
  if (!isAscii(n)) {
    const a = hostToAscii(n);
    if (a === null) idnError = true;
    else n = a;
  }
  if (n.endsWith('.')) n = n.slice(0, -1);
  if (n === '') return { kind: 'outside' };
  const zone = matchZone(n, zones);
  if (zone === undefined) return { kind: 'outside' };
  const invalid = (code: NamesErrorCode, reason: string): CoralName => ({
    kind: 'invalid',
    zone,
    code,
    reason,
  });
  if (idnError) return invalid('NAMES_ERR_BAD_IDN', `${JSON.stringify(name)} is not a valid IDN`);
  if (n === zone) return { kind: 'apex', zone };
  if (n.length > MAX_NAME_OCTETS) {
    return invalid(
      'NAMES_ERR_NAME_TOO_LONG',
      `name is ${n.length} octets, over ${MAX_NAME_OCTETS}`,
    );
  }
  const labels = n.slice(0, -(zone.length + 1)).split('.');
  if (labels.length === 1 && labels[0] === ACME_CHALLENGE_LABEL)
    return { kind: 'acme-challenge', zone };
  if (labels.length === 1 && labels[0]!.startsWith('_')) {
    return invalid(
      'NAMES_ERR_RESERVED',
      `${JSON.stringify(labels[0])}: underscore labels under the zone are reserved`,
    );
  }
  const form: Form = labels.length === 1 ? 'one-label' : 'legacy';
  const r = form === 'one-label' ? decodeOneLabel(labels[0]!) : decodeLegacy(labels);
  if (!r.ok) return invalid(r.code, r.reason);
  for (const z of zones) {
    const k = zoneKey(z);
    if (k !== '' && isInZone(r.value.host, k)) {
      return invalid(
        'NAMES_ERR_ORIGIN_IN_ZONE',
        `origin ${r.value.host} is inside the Coral zone ${k}`,
      );
    }
  }
  return { kind: 'origin', zone, form, ...r.value };
}
