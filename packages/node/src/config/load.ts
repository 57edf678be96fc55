/**
 * Loading the configuration once, at the edge: its sources — a JSON or YAML file (files.ts), then
 * `CORAL_*` environment variables over it (env.ts), then the caller's overrides — merged,
 * validated against the schema and across fields with every problem reported at once — each with
 * its path, where its value came from and the value given (provenance.ts) — then the files fields
 * name read in, and the result deeply frozen.
 */
import { ConfigError, type ConfigIssue } from '../errors.js';
import { readEnv } from './env.js';
import { readBlocklistFile, readConfigFile, readKeysFile } from './files.js';
import { describer } from './provenance.js';
import { checkAdvertise, type NameLookup } from './resolve.js';
import { configSchema, type CoralConfig } from './schema.js';

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
