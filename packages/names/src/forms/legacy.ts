/**
 * The legacy multi-label form of CoralCDN, for http origins:
 *
 *   www.example.com.nyud.net        http://www.example.com:80
 *   www.example.com.8080.nyud.net   http://www.example.com:8080
 *   192.0.2.7.8080.nyud.net         http://192.0.2.7:8080
 *
 * An all-numeric label right before the zone is the port when the labels before it are a host;
 * otherwise all the labels are the host, port 80. The two readings never both apply: a host with
 * an all-numeric label appended is never a host, because its last label is all digits, so it
 * would have to be an IPv4 address, and it is not one (a DNS name has a non-numeric top-level
 * label; an IPv4 address with one more label has five).
 */
import { DEFAULT_PORTS } from '../constants.js';
import { checkHost } from '../host.js';
import { fail, ok, type Checked, type Origin } from '../types.js';

const ALL_DIGITS = /^[0-9]+$/;
const PORT = /^[1-9][0-9]{0,4}$/;

/** True for a canonical decimal port 1–65535. */
export function isPortLabel(label: string): boolean {
  return PORT.test(label) && Number(label) <= 65535;
}

/** Decode the labels before the zone (two or more, lowercase). Never throws. */
export function decodeLegacy(labels: readonly string[]): Checked<Origin> {
  const last = labels[labels.length - 1]!;
  if (labels.length >= 2 && ALL_DIGITS.test(last)) {
    const rest = checkHost(labels.slice(0, -1).join('.'));
    if (rest.ok) {
      if (!isPortLabel(last)) {
        return fail(
          'NAMES_ERR_BAD_PORT',
          `bad port label ${JSON.stringify(last)}: 1 to 65535, no leading zero`,
        );
      }
      return ok({ scheme: 'http', host: rest.value, port: Number(last) });
    }
  }
  const whole = checkHost(labels.join('.'));
  if (!whole.ok) return whole;
  return ok({ scheme: 'http', host: whole.value, port: DEFAULT_PORTS.http });
}

/** The labels before the zone for a canonical http origin (`www.example.com.8080`). */
export function encodeLegacy(origin: Origin): Checked<string> {
  if (origin.scheme !== 'http') {
    return fail(
      'NAMES_ERR_LEGACY_HTTPS',
      `the legacy multi-label form stands for http origins only, not ${origin.scheme}://${origin.host}`,
    );
  }
  return ok(origin.port === DEFAULT_PORTS.http ? origin.host : `${origin.host}.${origin.port}`);
}
