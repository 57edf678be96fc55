/**
 * Errors thrown by `@coral/node`. Each condition has one class and one stable `code`, never reused;
 * errors that reach an HTTP client also carry the status they are answered with. Every code is
 * listed in docs/node.md ("Error codes") and a test checks that list against this file.
 */

/** Base class: a stable `code`, and the HTTP status used when the error is answered over HTTP. */
export class CoralNodeError extends Error {
  readonly code: string;
  readonly statusCode: number;
  constructor(code: string, message: string, statusCode = 500, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    this.statusCode = statusCode;
  }
}

/** One problem found in the configuration, with the path of the offending field. */
export interface ConfigIssue {
  /** Dotted path of the field (`dns.port`), or the source (`env CORAL_DNS_PORT`, `file`). */
  path: string;
  message: string;
  /**
   * Where the field's value came from: `CORAL_DNS_PORT`, `file coral.yaml`, `overrides`, or
   * `default` (set by config/load.ts for issues about a field).
   */
  source?: string;
  /** The value given, as JSON (cut short); `[redacted]` for keys and tokens. */
  given?: string;
}

/** `path: message (given VALUE in SOURCE)`, as the configuration error lists each problem. */
export function formatConfigIssue(i: ConfigIssue): string {
  const where =
    i.source === undefined
      ? ''
      : i.source === 'default'
        ? ` (the default${i.given !== undefined ? ` ${i.given}` : ''})`
        : ` (${i.given !== undefined ? `given ${i.given} ` : ''}in ${i.source})`;
  return `${i.path}: ${i.message}${where}`;
}

/** The configuration (file, environment or flags) is invalid; `issues` lists every problem at once. */
export class ConfigError extends CoralNodeError {
  readonly issues: readonly ConfigIssue[];
  constructor(issues: ConfigIssue[]) {
    super(
      'CORAL_ERR_CONFIG_INVALID',
      `invalid configuration (${issues.length} problem${issues.length === 1 ? '' : 's'}):\n` +
        issues.map((i) => `  - ${formatConfigIssue(i)}`).join('\n'),
      400,
    );
    this.issues = Object.freeze([...issues]);
  }
}

/** The setting (and its variable) that chooses the port of each listening service. */
const PORT_SETTINGS: Readonly<Record<string, readonly [setting: string, env: string]>> = {
  proxy: ['proxy.port', 'CORAL_PROXY_PORT'],
  'proxy tls': ['proxy.tlsPort', 'CORAL_PROXY_TLS_PORT'],
  dsht: ['dsht.port', 'CORAL_DSHT_PORT'],
  dns: ['dns.port', 'CORAL_DNS_PORT'],
  admin: ['admin.port', 'CORAL_ADMIN_PORT'],
};

/**
 * A service could not start (port in use, unreadable data directory, ...). A port in use names
 * the setting that moves it (two nodes on one machine need their own port for every service).
 */
export class StartError extends CoralNodeError {
  constructor(service: string, cause: unknown) {
    const e = cause as { code?: string } | undefined;
    const setting = PORT_SETTINGS[service];
    const hint =
      e?.code === 'EADDRINUSE' && setting
        ? `: set ${setting[0]} (${setting[1]}) to a free port (another node on this machine ` +
          'needs its own), or stop what holds it'
        : '';
    super(
      'CORAL_ERR_START_FAILED',
      `${service} failed to start: ${cause instanceof Error ? cause.message : String(cause)}${hint}`,
      500,
      { cause },
    );
  }
}

/**
 * A data directory is held by another running node: LevelDB allows one process per database. The
 * message names the directory, the lock file and, when the kernel tells (Linux /proc/locks), the
 * pid holding it.
 */
export class DataDirLockedError extends CoralNodeError {
  readonly dataDir: string;
  readonly lockFile: string;
  readonly pid: number | undefined;
  constructor(dataDir: string, lockFile: string, pid: number | undefined, cause?: unknown) {
    super(
      'CORAL_ERR_DATA_DIR_LOCKED',
      `data directory ${dataDir} is in use by another node` +
        `${pid !== undefined ? ` (pid ${pid})` : ''}: ${lockFile} is locked. ` +
        'Stop that node, or give this one its own dataDir (CORAL_DATA_DIR).',
      500,
      { cause },
    );
    this.dataDir = dataDir;
    this.lockFile = lockFile;
    this.pid = pid;
  }
}

/** The admin API refused a request: not loopback and no (or a wrong) bearer token. */
export class AdminAuthError extends CoralNodeError {
  constructor(message: string, statusCode: 401 | 403) {
    super(
      statusCode === 401 ? 'CORAL_ERR_ADMIN_UNAUTHORIZED' : 'CORAL_ERR_ADMIN_FORBIDDEN',
      message,
      statusCode,
    );
  }
}

/** The admin API got a request it cannot serve: bad parameter, bad body, unknown path or method. */
export class AdminRequestError extends CoralNodeError {
  constructor(
    code:
      | 'CORAL_ERR_ADMIN_BAD_REQUEST'
      | 'CORAL_ERR_ADMIN_NOT_FOUND'
      | 'CORAL_ERR_ADMIN_METHOD_NOT_ALLOWED'
      | 'CORAL_ERR_ADMIN_UNSUPPORTED_MEDIA_TYPE'
      | 'CORAL_ERR_ADMIN_UNAVAILABLE',
    message: string,
  ) {
    const status = {
      CORAL_ERR_ADMIN_BAD_REQUEST: 400,
      CORAL_ERR_ADMIN_NOT_FOUND: 404,
      CORAL_ERR_ADMIN_METHOD_NOT_ALLOWED: 405,
      CORAL_ERR_ADMIN_UNSUPPORTED_MEDIA_TYPE: 415,
      CORAL_ERR_ADMIN_UNAVAILABLE: 503,
    }[code];
    super(code, message, status);
  }
}

/** The CLI could not reach a node's admin API, or the node answered with an error. */
export class AdminClientError extends CoralNodeError {
  constructor(
    code: 'CORAL_ERR_CLIENT_UNREACHABLE' | 'CORAL_ERR_CLIENT_HTTP',
    message: string,
    statusCode = 502,
    options?: { cause?: unknown },
  ) {
    super(code, message, statusCode, options);
  }
}

/** A value found in the DSHT under a URL key is not a valid holder record (it is skipped). */
export class HolderDecodeError extends CoralNodeError {
  constructor(message: string) {
    super('CORAL_ERR_HOLDER_INVALID', message, 502);
  }
}

/**
 * The fleet's keys are missing where they are required (a node with a bootstrap list and neither
 * `fleet.keys` nor `fleet.open`), or a run-time key change was refused (the primary key removed,
 * an unknown key id, a malformed key). Messages never contain a secret.
 */
export class FleetKeyError extends CoralNodeError {
  constructor(
    code: 'CORAL_ERR_FLEET_KEY_REQUIRED' | 'CORAL_ERR_FLEET_KEY_REFUSED' | 'CORAL_ERR_FLEET_OPEN',
    message: string,
    options?: { cause?: unknown },
  ) {
    const status = {
      CORAL_ERR_FLEET_KEY_REQUIRED: 400,
      CORAL_ERR_FLEET_KEY_REFUSED: 409,
      CORAL_ERR_FLEET_OPEN: 409,
    }[code];
    super(code, message, status, options);
  }
}

/**
 * A certificate or key cannot be used: a PEM file that cannot be read or parsed, a key that does
 * not match its certificate, a local CA that is incomplete or expired.
 */
export class TlsError extends CoralNodeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CORAL_ERR_TLS', message, 500, options);
  }
}

/**
 * A node-to-node request (`/v1/peer/...`) that does not authenticate with the fleet's keys
 * (`Coral-Peer-Auth`: missing, unknown key, bad MAC, stale, replayed), or a node without fleet
 * keys, which takes no peer requests.
 */
export class PeerAuthError extends CoralNodeError {
  readonly reason: string;
  constructor(reason: string, message: string) {
    super('CORAL_ERR_PEER_UNAUTHORIZED', message, 403);
    this.reason = reason;
  }
}

/**
 * A purge that cannot be taken: neither or more than one of url, prefix and tag, a value that is
 * not an absolute http(s) URL (prefix) or not a tag, or a member's entry that is not one (or whose
 * body is not the one its signed path names).
 */
export class PurgeError extends CoralNodeError {
  constructor(code: 'CORAL_ERR_PURGE_INVALID', message: string) {
    super(code, message, 400);
  }
}

/**
 * A member's report of another (trust/member-reports.ts) that cannot be taken: its body is not
 * the one its signed path names, or not a report.
 */
export class ReportError extends CoralNodeError {
  constructor(message: string) {
    super('CORAL_ERR_REPORT_INVALID', message, 400);
  }
}

/**
 * A fleet-wide change (a purge, an ACME challenge value) that some live member did not apply: it
 * could not be reached (no admin record, refused, timed out), refused it, or this node is cut off
 * from its fleet. Answered 502 by the admin API with the whole propagation beside the error; the
 * change is applied here all the same (and purges reach the others through the purge log).
 */
export class FleetIncompleteError extends CoralNodeError {
  constructor(message: string) {
    super('CORAL_ERR_FLEET_INCOMPLETE', message, 502);
  }
}

/**
 * A request for a Coralized name (or site) whose origin domain is on the blocklist
 * (`proxy.blocklist`, `proxy.blocklistFile`): answered 403 by the proxy's listener, before any
 * cache, peer or origin work.
 */
export class OriginBlockedError extends CoralNodeError {
  readonly domain: string;
  constructor(origin: string, domain: string) {
    super(
      'CORAL_ERR_ORIGIN_BLOCKED',
      `${origin} is blocked on this CDN (${domain} is on the blocklist)`,
      403,
    );
    this.domain = domain;
  }
}

/**
 * The worker threads of a node (workers/): a message between the owner and a worker that does not
 * decode (`CORAL_ERR_WORKER_PROTOCOL`, a bug on the sending side: the message is dropped), a worker
 * that did not start (`CORAL_ERR_WORKER_START`: it exited or timed out before it was listening),
 * or a command or request that no worker answered (`CORAL_ERR_WORKER_UNAVAILABLE`: it exited,
 * timed out, or the node is stopping).
 */
export class WorkerError extends CoralNodeError {
  constructor(
    code: 'CORAL_ERR_WORKER_PROTOCOL' | 'CORAL_ERR_WORKER_START' | 'CORAL_ERR_WORKER_UNAVAILABLE',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, 500, options);
  }
}

/** Every code this package can produce, for the docs test. */
export const ERROR_CODES = [
  'CORAL_ERR_CONFIG_INVALID',
  'CORAL_ERR_START_FAILED',
  'CORAL_ERR_DATA_DIR_LOCKED',
  'CORAL_ERR_ADMIN_UNAUTHORIZED',
  'CORAL_ERR_ADMIN_FORBIDDEN',
  'CORAL_ERR_ADMIN_BAD_REQUEST',
  'CORAL_ERR_ADMIN_NOT_FOUND',
  'CORAL_ERR_ADMIN_METHOD_NOT_ALLOWED',
  'CORAL_ERR_ADMIN_UNSUPPORTED_MEDIA_TYPE',
  'CORAL_ERR_ADMIN_UNAVAILABLE',
  'CORAL_ERR_CLIENT_UNREACHABLE',
  'CORAL_ERR_CLIENT_HTTP',
  'CORAL_ERR_HOLDER_INVALID',
  'CORAL_ERR_FLEET_KEY_REQUIRED',
  'CORAL_ERR_FLEET_KEY_REFUSED',
  'CORAL_ERR_FLEET_OPEN',
  'CORAL_ERR_TLS',
  'CORAL_ERR_PEER_UNAUTHORIZED',
  'CORAL_ERR_PURGE_INVALID',
  'CORAL_ERR_FLEET_INCOMPLETE',
  'CORAL_ERR_ORIGIN_BLOCKED',
  'CORAL_ERR_REPORT_INVALID',
  'CORAL_ERR_WORKER_PROTOCOL',
  'CORAL_ERR_WORKER_START',
  'CORAL_ERR_WORKER_UNAVAILABLE',
] as const;
