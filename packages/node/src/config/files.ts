/**
 * The configuration's file sources: the configuration file (JSON by its `.json` extension, YAML
 * otherwise), and the list files fields name (`fleet.keysFile`, `proxy.blocklistFile`). Problems
 * name the file (and the line), never a secret.
 */
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { decodeKey } from '@coral/keyring';
import { parseBlocklistText } from '../blocklist/blocklist.js';
import type { ConfigIssue } from '../errors.js';

/** The configuration file as an object, or undefined (and an issue) when it cannot be used. */
export function readConfigFile(
  file: string,
  issues: ConfigIssue[],
): Record<string, unknown> | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    issues.push({ path: `file ${file}`, message: `cannot read: ${(err as Error).message}` });
    return undefined;
  }
  let parsed: unknown;
  try {
    parsed = extname(file).toLowerCase() === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    issues.push({ path: `file ${file}`, message: `cannot parse: ${(err as Error).message}` });
    return undefined;
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    issues.push({ path: `file ${file}`, message: 'must contain an object (a mapping of fields)' });
    return undefined;
  }
  return parsed as Record<string, unknown>;
}

/**
 * The keys of `fleet.keysFile`: one per line or comma-separated, blank lines and `#` comments
 * ignored. Problems name the file and the line, never the secret.
 */
export function readKeysFile(file: string, issues: ConfigIssue[]): string[] {
  const text = readListFile('fleet.keysFile', file, issues);
  if (text === undefined) return [];
  const keys: string[] = [];
  const before = issues.length;
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/#.*$/, '').trim();
    for (const key of line.split(/[\s,]+/).filter(Boolean)) {
      try {
        decodeKey(key, `key on line ${i + 1}`);
        keys.push(key);
      } catch (err) {
        issues.push({ path: `fleet.keysFile ${file}`, message: (err as Error).message });
      }
    }
  });
  if (keys.length === 0 && issues.length === before) {
    issues.push({ path: 'fleet.keysFile', message: `${file} holds no key` });
  }
  return keys;
}

/** The text of a file a field names, or undefined (and an issue) when it cannot be read. */
function readListFile(field: string, file: string, issues: ConfigIssue[]): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    issues.push({ path: field, message: `cannot read ${file}: ${(err as Error).message}` });
    return undefined;
  }
}

/** The domains of `proxy.blocklistFile`; problems name the file and the line. */
export function readBlocklistFile(file: string, issues: ConfigIssue[]): string[] {
  const text = readListFile('proxy.blocklistFile', file, issues);
  if (text === undefined) return [];
  const { domains, problems } = parseBlocklistText(text);
  for (const message of problems) issues.push({ path: `proxy.blocklistFile ${file}`, message });
  return domains;
}
