/**
 * The configuration's environment source: every field settable by a `CORAL_*` variable, the
 * variable's name for a field, and reading the variables into a partial configuration — each value
 * parsed by its field's kind, every problem collected (an unknown variable, a value of the wrong
 * kind) with the variable it came from. Nothing else in the process reads the environment.
 */
import type { ConfigIssue } from '../errors.js';

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
  ['proxy.compress', 'bool'],
  ['proxy.defaultTtlSeconds', 'int'],
  ['proxy.staleOnErrorSeconds', 'int'],
  ['proxy.heuristicMaxSeconds', 'int'],
  ['proxy.negativeTtlSeconds', 'int'],
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
  ['tls.ticketKeyRotationSeconds', 'int'],
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

/**
 * The configuration fields the `CORAL_*` variables of `env` set (a partial configuration), every
 * problem to `issues`.
 */
export function readEnv(
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
