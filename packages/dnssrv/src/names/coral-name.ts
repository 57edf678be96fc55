/**
 * The Coralized name parser: pure, no I/O.
 *
 * `www.example.com.nyud.net`      → origin `www.example.com`, port 80
 * `www.example.com.8080.nyud.net` → origin `www.example.com`, port 8080
 *
 * Names are compared case-insensitively (ASCII only, as DNS does) and returned lowercased. A name
 * in a zone that cannot be an origin (a single label, a numeric top-level label, an IP literal, a
 * bad port, a label with characters a hostname cannot have) is `invalid` → NXDOMAIN.
 */

export type CoralName =
  /** Not under any configured zone → REFUSED. */
  | { kind: 'outside' }
  /** The zone apex itself (SOA, NS). */
  | { kind: 'apex'; zone: string }
  /** A Coralized origin. */
  | { kind: 'origin'; zone: string; host: string; port: number }
  /** Under a zone but not a Coralized origin → NXDOMAIN. */
  | { kind: 'invalid'; zone: string; reason: string };

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;
const PORT = /^[1-9][0-9]{0,4}$/;
const NUMERIC = /^[0-9]+$/;

/** Lowercase a zone and drop its trailing dot (`NYUD.net.` → `nyud.net`). */
export function normalizeZone(zone: string): string {
  const z = zone.toLowerCase();
  return z.endsWith('.') ? z.slice(0, -1) : z;
}

/**
 * Parse `name` (presentation form; a trailing dot is allowed) against `zones`. When zones nest,
 * the longest matching zone wins.
 */
export function parseCoralName(name: string, zones: readonly string[]): CoralName {
  let n = name.toLowerCase();
  if (n.endsWith('.')) n = n.slice(0, -1);
  let zone: string | undefined;
  for (const raw of zones) {
    const z = normalizeZone(raw);
    if (z === '') continue;
    if ((n === z || n.endsWith(`.${z}`)) && (zone === undefined || z.length > zone.length)) {
      zone = z;
    }
  }
  if (zone === undefined) return { kind: 'outside' };
  if (n === zone) return { kind: 'apex', zone };
  const labels = n.slice(0, -(zone.length + 1)).split('.');
  const last = labels[labels.length - 1]!;
  if (labels.length >= 2 && NUMERIC.test(last)) {
    const host = labels.slice(0, -1);
    const why = hostProblem(host);
    if (why === undefined) {
      if (!PORT.test(last) || Number(last) > 65535) {
        return { kind: 'invalid', zone, reason: `bad port label "${last}"` };
      }
      return { kind: 'origin', zone, host: host.join('.'), port: Number(last) };
    }
  }
  const why = hostProblem(labels);
  if (why !== undefined) return { kind: 'invalid', zone, reason: why };
  return { kind: 'origin', zone, host: labels.join('.'), port: 80 };
}

/** Why `labels` cannot be a public origin host name, or undefined when they can. */
function hostProblem(labels: readonly string[]): string | undefined {
  if (labels.length < 2) return 'origin needs at least two labels';
  for (const l of labels) {
    if (!LABEL.test(l)) return `bad label "${l}"`;
  }
  if (NUMERIC.test(labels[labels.length - 1]!)) return 'numeric top-level label (IP literal?)';
  if (labels.join('.').length > 253) return 'origin name too long';
  return undefined;
}
