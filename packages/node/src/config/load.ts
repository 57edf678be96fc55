/**
 * Loading the configuration once, at the edge: a JSON or YAML file, then `CORAL_*` environment
 * variables over it, validated against the schema with every problem reported at once — each with
 * its path, where its value came from (the file, the `CORAL_*` variable, the overrides or the
 * default) and the value given, secrets ({@link SECRET_FIELDS}) redacted — then deeply frozen.
 * Nothing else in the process reads the environment.
 */
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { decodeKey } from '@coral/keyring';
import { ConfigError, type ConfigIssue } from '../errors.js';
import { parseBlocklistText } from '../blocklist/blocklist.js';
import { checkAdvertise, type NameLookup } from './resolve.js';
import { configSchema, type CoralConfig } from './schema.js';

type EnvKind = 'string' | 'int' | 'number' | 'bool' | 'list' | 'map' | 'nameservers' | 'workers';

/** Every configuration field settable from the environment, by dotted path. */
export const ENV_FIELDS: ReadonlyArray<readonly [path: string, kind: EnvKind]> = [
  ['dataDir', 'string'],
  ['zone', 'string'],
  ['host', 'string'],
  ['advertise', 'string'],
  ['region', 'string'],
  ['bootstrap', 'list'],
  ['hosts', 'map'],
  ['allowPrivateOrigins', 'bool'],
  ['proxy.host', 'string'],
  ['proxy.port', 'int'],
  ['proxy.diskBudgetBytes', 'int'],
  ['proxy.memoryBudgetBytes', 'int'],
  ['proxy.maxObjectBytes', 'int'],
  ['proxy.defaultTtlSeconds', 'int'],
  ['proxy.staleOnErrorSeconds', 'int'],
  ['proxy.sites', 'map'],
  ['proxy.peerTimeoutMs', 'int'],
  ['proxy.indexTimeoutMs', 'int'],
  ['proxy.peerFetchingTimeoutMs', 'int'],
  ['proxy.peerMaxTtlSeconds', 'int'],
  ['proxy.peerVerifyWholeBytes', 'int'],
  ['proxy.auditFraction', 'number'],
  ['proxy.auditsPerMinute', 'int'],
  ['proxy.reportsPerMinute', 'int'],
  ['proxy.quarantineSeconds', 'int'],
  ['proxy.quarantineMaxSeconds', 'int'],
  ['proxy.suspectSeconds', 'int'],
  ['proxy.clientRateLimitPerSecond', 'int'],
  ['proxy.originBytesPerSec', 'int'],
  ['proxy.servedBytesPerSec', 'int'],
  ['proxy.tlsPort', 'int'],
  ['proxy.followHttpsUpgrade', 'bool'],
  ['proxy.blocklist', 'list'],
  ['proxy.blocklistFile', 'string'],
  ['dsht.host', 'string'],
  ['dsht.port', 'int'],
  ['dsht.allowNat', 'bool'],
  ['dsht.maxIdsPerIp', 'int'],
  ['dns.enabled', 'bool'],
  ['dns.host', 'string'],
  ['dns.port', 'int'],
  ['dns.answerCount', 'int'],
  ['dns.ttl', 'int'],
  ['dns.nameservers', 'nameservers'],
  ['dns.rateLimitPerSecond', 'int'],
  ['dns.delegation', 'bool'],
  ['dns.delegationPort', 'int'],
  ['tls.cert', 'string'],
  ['tls.key', 'string'],
  ['tls.originCa', 'list'],
  ['tls.localCa', 'bool'],
  ['index.designated', 'bool'],
  ['index.claims', 'bool'],
  ['index.claimStepMs', 'int'],
  ['index.claimRankCap', 'int'],
  ['purge.logMaxEntries', 'int'],
  ['purge.logRetentionSeconds', 'int'],
  ['purge.syncIntervalMs', 'int'],
  ['admin.host', 'string'],
  ['admin.port', 'int'],
  ['admin.token', 'string'],
  ['admin.publicMetrics', 'bool'],
  ['connections.max', 'int'],
  ['connections.reserve', 'int'],
  ['connections.perAddress', 'int'],
  ['connections.perPrefix', 'int'],
  ['connections.idleTimeoutMs', 'int'],
  ['connections.keepAliveTimeoutMs', 'int'],
  ['connections.headerTimeoutMs', 'int'],
  ['connections.bodyTimeoutMs', 'int'],
  ['fleet.keys', 'list'],
  ['fleet.keysFile', 'string'],
  ['fleet.open', 'bool'],
  ['fleet.isolationAfterMs', 'int'],
  ['log.level', 'string'],
  ['log.access.format', 'string'],
  ['log.access.destination', 'string'],
  ['log.access.sample', 'number'],
  ['workers', 'workers'],
  ['shutdownGraceMs', 'int'],
  ['heapTrimIntervalMs', 'int'],
  ['exampleOrigin', 'string'],
];

/** Fields whose values are never echoed in a problem (keys and tokens). */
export const SECRET_FIELDS: readonly string[] = ['fleet.keys', 'admin.token'];
/** Longest echo of a given value in a problem. */
const MAX_GIVEN_CHARS = 80;

/** Environment variables the process reads that are not configuration fields. */
export const ENV_OTHER = ['CORAL_CONFIG', 'CORAL_ADMIN_URL'] as const;

/** `proxy.diskBudgetBytes` → `CORAL_PROXY_DISK_BUDGET_BYTES`. */
export function envName(path: string): string {
  return (
    'CORAL_' +
    path
      .split('.')
      .map((part) => part.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase())
      .join('_')
  );
}

export interface LoadConfigOptions {
  /** Path of a JSON (`.json`) or YAML file; default `env.CORAL_CONFIG`; none → defaults only. */
  file?: string;
  /** The environment to read `CORAL_*` variables from (default: none). */
  env?: Record<string, string | undefined>;
  /** Already-parsed overrides applied last (used by tests and the fleet launcher). */
  overrides?: Record<string, unknown>;
}

/**
 * Build the node's configuration. Throws {@link ConfigError} listing every problem found in the
 * file, the environment and the merged result; on success the result is deeply frozen.
 */
export function loadConfig(options: LoadConfigOptions = {}): CoralConfig {
  const { config, issues } = collect(options);
  if (!config || issues.length > 0) throw new ConfigError(issues);
  return config;
}

/**
 * What `coral-node start` loads: {@link loadConfig}, plus the check that `advertise` resolves
 * (through `hosts`, then `lookup`) to an address peers can reach. Problems of both kinds are
 * reported together in one {@link ConfigError}.
 */
export async function loadStartConfig(
  options: LoadConfigOptions & { lookup?: NameLookup } = {},
): Promise<CoralConfig> {
  const { config, issues, input, describe } = collect(options);
  // Even when other fields are wrong, check a well-formed `advertise`, so that one run lists all.
  const advertise = config
    ? config.advertise
    : typeof input.advertise === 'string' && !issues.some((i) => i.path === 'advertise')
      ? input.advertise
      : undefined;
  if (advertise !== undefined) {
    const hosts = config?.hosts ?? configSchema.shape.hosts.safeParse(input.hosts).data ?? {};
    const checked = await checkAdvertise(hosts, advertise, options.lookup);
    if ('issue' in checked) issues.push(describe(checked.issue));
  }
  if (!config || issues.length > 0) throw new ConfigError(issues);
  return config;
}

/** Parse and validate; every problem goes to `issues`, `config` only when the schema accepted. */
function collect(options: LoadConfigOptions): {
  config: CoralConfig | undefined;
  issues: ConfigIssue[];
  input: Record<string, unknown>;
  describe: (issue: ConfigIssue, parsed?: unknown) => ConfigIssue;
} {
  const env = options.env ?? {};
  const issues: ConfigIssue[] = [];
  let merged: Record<string, unknown> = {};
  let fromFile: Record<string, unknown> | undefined;
  const fromEnv = new Map<string, string>();

  const file = options.file ?? env.CORAL_CONFIG;
  if (file !== undefined && file !== '') {
    fromFile = readConfigFile(file, issues);
    if (fromFile) merged = fromFile;
  }
  merged = deepMerge(merged, readEnv(env, issues, fromEnv));
  if (options.overrides) merged = deepMerge(merged, options.overrides);
  const describe = describer(merged, {
    file: fromFile && file ? { name: file, value: fromFile } : undefined,
    env: fromEnv,
    overrides: options.overrides,
  });

  const result = configSchema.safeParse(merged);
  if (!result.success) {
    for (const issue of result.error.issues) {
      const path = issue.path.map(String).join('.') || '(root)';
      issues.push(describe({ path, message: issue.message }));
    }
    return { config: undefined, issues, input: merged, describe };
  }
  issues.push(...crossFieldIssues(result.data).map((i) => describe(i, result.data)));
  const keysFile = result.data.fleet.keysFile;
  if (keysFile !== undefined && result.data.fleet.keys.length === 0) {
    result.data.fleet.keys = readKeysFile(keysFile, issues);
  }
  const blocklistFile = result.data.proxy.blocklistFile;
  if (blocklistFile !== undefined) {
    const listed = new Set(result.data.proxy.blocklist);
    for (const d of readBlocklistFile(blocklistFile, issues)) listed.add(d);
    result.data.proxy.blocklist = [...listed];
  }
  return { config: deepFreeze(result.data), issues, input: merged, describe };
}

/**
 * Adds to an issue about a field (a dotted path) where its value came from and the value given:
 * the overrides, then the environment, then the file win, as they are merged; a field none of them
 * set holds its default (its value read from `parsed`, the validated configuration, when given).
 * Issues about a source (`env X`, `file F`) are left as they are.
 */
function describer(
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

function readConfigFile(file: string, issues: ConfigIssue[]): Record<string, unknown> | undefined {
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

function readEnv(
  env: Record<string, string | undefined>,
  issues: ConfigIssue[],
  /** Filled: field path → the variable that set it. */
  sources: Map<string, string>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const known = new Map(ENV_FIELDS.map(([path, kind]) => [envName(path), { path, kind }]));
  for (const [name, raw] of Object.entries(env)) {
    if (!name.startsWith('CORAL_') || raw === undefined) continue;
    if ((ENV_OTHER as readonly string[]).includes(name)) continue;
    const field = known.get(name);
    if (!field) {
      issues.push({ path: `env ${name}`, message: 'unknown variable (see docs/configuration.md)' });
      continue;
    }
    const value = parseEnvValue(raw, field.kind);
    if (value instanceof Error) {
      issues.push({ path: `env ${name}`, message: `${field.path} ${value.message}` });
      continue;
    }
    setPath(out, field.path, value);
    sources.set(field.path, name);
  }
  return out;
}

function parseEnvValue(raw: string, kind: EnvKind): unknown {
  const text = raw.trim();
  switch (kind) {
    case 'string':
      return text;
    case 'int': {
      if (!/^-?\d+$/.test(text)) return new Error(`must be an integer, got "${raw}"`);
      return Number(text);
    }
    case 'workers': {
      if (/^auto$/i.test(text)) return 'auto';
      if (!/^\d+$/.test(text)) return new Error(`must be auto or an integer, got "${raw}"`);
      return Number(text);
    }
    case 'number': {
      if (!/^-?(\d+\.?\d*|\.\d+)$/.test(text)) return new Error(`must be a number, got "${raw}"`);
      return Number(text);
    }
    case 'bool': {
      if (/^(1|true|yes|on)$/i.test(text)) return true;
      if (/^(0|false|no|off)$/i.test(text)) return false;
      return new Error(`must be true or false, got "${raw}"`);
    }
    case 'list':
      return text === '' ? [] : text.split(/[\s,]+/).filter(Boolean);
    case 'map':
    case 'nameservers': {
      const entries: [string, string][] = [];
      for (const item of text.split(/[\s,]+/).filter(Boolean)) {
        const eq = item.indexOf('=');
        if (eq <= 0 || eq === item.length - 1) {
          return new Error(`must be a list of name=value pairs, got "${item}"`);
        }
        entries.push([item.slice(0, eq), item.slice(eq + 1)]);
      }
      return kind === 'map'
        ? Object.fromEntries(entries)
        : entries.map(([name, ip]) => ({ name, ip }));
    }
  }
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

/** Problems that involve more than one field: two services on the same port and address. */
function crossFieldIssues(c: ReturnType<typeof configSchema.parse>): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  if (c.fleet.open && (c.fleet.keys.length > 0 || c.fleet.keysFile !== undefined)) {
    issues.push({
      path: 'fleet.open',
      message: 'an open fleet has no keys: set fleet.open or fleet.keys (fleet.keysFile), not both',
    });
  }
  if (c.fleet.keys.length > 0 && c.fleet.keysFile !== undefined) {
    issues.push({
      path: 'fleet.keysFile',
      message: 'the keys come from fleet.keys or from fleet.keysFile, not both',
    });
  }
  const tcp: [string, string, number][] = [
    ['proxy.port', c.proxy.host ?? c.host, c.proxy.port],
    ['proxy.tlsPort', c.proxy.host ?? c.host, c.proxy.tlsPort],
    ['admin.port', c.admin.host, c.admin.port],
  ];
  const udp: [string, string, number][] = [['dsht.port', c.dsht.host ?? c.host, c.dsht.port]];
  if (c.dns.enabled) {
    tcp.push(['dns.port', c.dns.host, c.dns.port]);
    udp.push(['dns.port', c.dns.host, c.dns.port]);
  }
  for (const group of [tcp, udp]) {
    for (let i = 0; i < group.length; i++) {
      for (let j = i + 1; j < group.length; j++) {
        const [pa, ha, a] = group[i]!;
        const [pb, hb, b] = group[j]!;
        if (a === b && hostsOverlap(ha, hb)) {
          issues.push({ path: pb, message: `port ${b} is already used by ${pa} on ${ha}` });
        }
      }
    }
  }
  return issues;
}

function hostsOverlap(a: string, b: string): boolean {
  const wildcard = (h: string) => h === '0.0.0.0' || h === '::';
  return a === b || wildcard(a) || wildcard(b);
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (typeof next !== 'object' || next === null) node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts[parts.length - 1]!] = value;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Merge `over` into a copy of `base`: objects merge key by key, everything else is replaced. */
export function deepMerge(
  base: Record<string, unknown>,
  over: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const prev = out[key];
    out[key] = isPlainObject(prev) && isPlainObject(value) ? deepMerge(prev, value) : value;
  }
  return out;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
