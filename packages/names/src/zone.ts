/** Coral zones: the DNS names the fleet is authoritative for (`nyud.net`). */
import { MAX_LABEL_OCTETS, MAX_NAME_OCTETS } from './constants.js';
import { NamesError } from './errors.js';
import { hostToAscii, isAscii } from './idna.js';

const ZONE_LABEL = /^[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?$/;

/** Lowercase, drop a leading and a trailing dot. Cheap; used on every parse. */
export function zoneKey(zone: string): string {
  let z = zone.trim().toLowerCase();
  if (z.startsWith('.')) z = z.slice(1);
  if (z.endsWith('.')) z = z.slice(0, -1);
  return z;
}

/**
 * The canonical spelling of a zone (`NYUD.net.` → `nyud.net`, IDN to A-labels). Throws
 * `NAMES_ERR_BAD_ZONE` when it is not a DNS name.
 */
export function normalizeZone(zone: string): string {
  let z = zoneKey(zone);
  if (!isAscii(z)) {
    const a = hostToAscii(z);
    if (a === null)
      throw new NamesError('NAMES_ERR_BAD_ZONE', `zone ${JSON.stringify(zone)} is not a valid IDN`);
    z = a;
  }
  if (z.length === 0 || z.length > MAX_NAME_OCTETS - 2) {
    throw new NamesError('NAMES_ERR_BAD_ZONE', `zone ${JSON.stringify(zone)} is empty or too long`);
  }
  for (const label of z.split('.')) {
    if (label.length > MAX_LABEL_OCTETS || !ZONE_LABEL.test(label)) {
      throw new NamesError(
        'NAMES_ERR_BAD_ZONE',
        `zone ${JSON.stringify(zone)} has a bad label ${JSON.stringify(label)}`,
      );
    }
  }
  return z;
}

/** The longest zone that `name` (lowercase, no trailing dot) is or is inside, or undefined. */
export function matchZone(name: string, zones: readonly string[]): string | undefined {
  let best: string | undefined;
  for (const raw of zones) {
    const z = zoneKey(raw);
    if (z === '') continue;
    if ((name === z || name.endsWith(`.${z}`)) && (best === undefined || z.length > best.length)) {
      best = z;
    }
  }
  return best;
}
