/**
 * Where a configuration value came from: each problem about a field says which source set it (the
 * file, the `CORAL_*` variable, the overrides or the default) and the value given, secrets
 * ({@link SECRET_FIELDS}) redacted and long values cut short.
 */
import type { ConfigIssue } from '../errors.js';

/** Fields whose values are never echoed in a problem (keys and tokens). */
export const SECRET_FIELDS: readonly string[] = ['fleet.keys', 'admin.token'];
/** Longest echo of a given value in a problem. */
const MAX_GIVEN_CHARS = 80;

/**
 * Adds to an issue about a field (a dotted path) where its value came from and the value given:
 * the overrides, then the environment, then the file win, as they are merged; a field none of them
 * set holds its default (its value read from `parsed`, the validated configuration, when given).
 * Issues about a source (`env X`, `file F`) are left as they are.
 */
export function describer(
  merged: Record<string, unknown>,
  sources: {
    file: { name: string; value: Record<string, unknown> } | undefined;
    env: ReadonlyMap<string, string>;
    overrides: Record<string, unknown> | undefined;
  },
): (issue: ConfigIssue, parsed?: unknown) => ConfigIssue {
  return (issue, parsed) => {
    if (!/^[A-Za-z0-9_.]+$/.test(issue.path)) return issue;
    const parts = issue.path.split('.');
    let source = 'default';
    for (let n = parts.length; n > 0 && source === 'default'; n--) {
      const prefix = parts.slice(0, n);
      if (sources.overrides && getPath(sources.overrides, prefix) !== undefined) {
        source = 'overrides';
      } else if (sources.env.has(prefix.join('.'))) {
        source = sources.env.get(prefix.join('.'))!;
      } else if (sources.file && getPath(sources.file.value, prefix) !== undefined) {
        source = `file ${sources.file.name}`;
      }
    }
    const value = getPath(merged, parts) ?? getPath(parsed, parts);
    const secret = SECRET_FIELDS.some((f) => issue.path === f || issue.path.startsWith(`${f}.`));
    const out: ConfigIssue = { ...issue, source };
    if (value !== undefined) out.given = secret ? '[redacted]' : given(value);
    return out;
  };
}

/** A value as JSON, cut short. */
function given(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > MAX_GIVEN_CHARS ? `${text.slice(0, MAX_GIVEN_CHARS - 1)}…` : text;
}

function getPath(target: unknown, parts: readonly string[]): unknown {
  let node = target;
  for (const part of parts) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}
