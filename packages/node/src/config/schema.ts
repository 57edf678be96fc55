/**
 * The node's configuration schema (zod) and its defaults. Every field is documented in
 * docs/configuration.md; the defaults are the first-run defaults of DESIGN.md: DNS on
 * 127.0.0.1:5353, proxy on :8090, DSHT on UDP :8091, admin on 127.0.0.1:8092, data in ./data,
 * zone nyud.net.
 */
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import {
  AUDIT_FRACTION,
  AUDITS_PER_MINUTE,
  HEURISTIC_CAP_SECONDS,
  NEGATIVE_TTL_SECONDS,
  PEER_MAX_TTL_SECONDS,
  PEER_VERIFY_WHOLE_BYTES,
  QUARANTINE_MAX_SECONDS,
  QUARANTINE_SECONDS,
  REPORTS_PER_MINUTE,
  STALE_ON_ERROR_SECONDS,
  SUSPECT_SECONDS,
} from '@coral/httpprx';
import { decodeKey } from '@coral/keyring';
import { z } from 'zod';
import {
  DEFAULT_BODY_TIMEOUT_MS,
  DEFAULT_HEADER_TIMEOUT_MS,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_KEEPALIVE_TIMEOUT_MS,
  DEFAULT_PER_ADDRESS,
  DEFAULT_PER_PREFIX,
} from '@coral/connguard';
import { DEFAULT_CLAIM_RANK_CAP, DEFAULT_CLAIM_STEP_MS } from '../adapters/content-index.js';
import { parseDomain } from '../blocklist/blocklist.js';
import {
  DEFAULT_PURGE_LOG_MAX_ENTRIES,
  DEFAULT_PURGE_LOG_RETENTION_SECONDS,
} from '../purge/purge-log.js';
import { DEFAULT_PURGE_SYNC_INTERVAL_MS } from '../purge/fleet-purge.js';
import {
  TICKET_KEY_ROTATION_MAX_SECONDS,
  TICKET_KEY_ROTATION_MIN_SECONDS,
  TICKET_KEY_ROTATION_SECONDS,
} from '../trust/ticket-keys.js';

export const DEFAULT_DATA_DIR = './data';
export const DEFAULT_ZONE = 'nyud.net';
export const DEFAULT_HOST = '0.0.0.0';
export const DEFAULT_PROXY_PORT = 8090;
/** The proxy's TLS port for `https://<one-label name>.<zone>` (issue 11). */
export const DEFAULT_PROXY_TLS_PORT = 8443;
export const DEFAULT_DSHT_PORT = 8091;
export const DEFAULT_DNS_HOST = '127.0.0.1';
export const DEFAULT_DNS_PORT = 5353;
export const DEFAULT_ADMIN_HOST = '127.0.0.1';
export const DEFAULT_ADMIN_PORT = 8092;
export const DEFAULT_DNS_ANSWER_COUNT = 2;
export const DEFAULT_DNS_TTL_SECONDS = 30;
export const DEFAULT_DNS_RATE_LIMIT_PER_SECOND = 20;
export const DEFAULT_DISK_BUDGET_BYTES = 1024 * 1024 * 1024;
export const DEFAULT_MEMORY_BUDGET_BYTES = 64 * 1024 * 1024;
export const DEFAULT_MAX_OBJECT_BYTES = 50 * 1024 * 1024;
export const DEFAULT_LEVEL_THRESHOLDS_MS = [60, 20] as const;
export const DEFAULT_SHUTDOWN_GRACE_MS = 5_000;
/** The heap trim's quiet time: jemalloc's default dirty-page decay time. */
export const DEFAULT_HEAP_TRIM_INTERVAL_MS = 10_000;
export const DEFAULT_LOG_LEVEL = 'info';
export const DEFAULT_EXAMPLE_ORIGIN = 'http://www.example.com/';
/**
 * Worker threads of one node (issue 26): 1 is today's single thread. Not `auto` by default yet:
 * only DNS runs on the workers so far, the proxy's listeners do not.
 */
export const DEFAULT_WORKERS = 1;
/** The most workers a node runs (`auto` is capped here too). */
export const MAX_WORKERS = 256;
/** Identities kept per IP by the DSHT (routing tables, members, DNS candidates). */
export const DEFAULT_MAX_IDS_PER_IP = 1;
/** Keyed mode: how long without authenticated DSHT traffic (amid unknown-key traffic) means isolated. */
export const DEFAULT_ISOLATION_AFTER_MS = 30_000;

const port = z.number().int().min(1).max(65535);
const ip = z.string().refine((s) => isIP(s) !== 0, { message: 'must be an IPv4 or IPv6 address' });
/** A DNS name (labels of letters, digits and hyphens), case-insensitive, stored lowercase. */
const DNS_NAME =
  /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i;
const dnsName = z
  .string()
  .regex(DNS_NAME, { message: 'must be a DNS name such as nyud.net' })
  .transform((s) => s.toLowerCase());
/** `host:port` or `[v6]:port`; the host may be a name (resolved with `hosts` first). */
const hostPort = z.string().superRefine((s, ctx) => {
  const problem = hostPortProblem(s);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/** One message per bad `host:port` entry (a missing port is the usual mistake). */
function hostPortProblem(s: string): string | undefined {
  const m = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+):(\d{1,5})$/i.exec(s);
  if (m) {
    const p = Number(m[2]);
    return p >= 1 && p <= 65535 ? undefined : `port must be 1-65535, got "${s}"`;
  }
  if (/^[a-z0-9.-]+$/i.test(s) || isIP(s) === 6) {
    const host = isIP(s) === 6 ? `[${s}]` : s;
    return `"${s}" has no port: write host:port, e.g. ${host}:${DEFAULT_DSHT_PORT}`;
  }
  return `must be host:port (IPv6 as [addr]:port), got "${s}"`;
}

/** 0.0.0.0 and :: (in any spelling) mean "every address": never an address to give to others. */
export function isWildcardAddress(host: string): boolean {
  if (isIP(host) === 4) return host === '0.0.0.0';
  if (isIP(host) === 6) return /^[0:]+$/.test(host);
  return false;
}

/** What this node tells the fleet to reach it at: an IP or a name, never a wildcard. */
const advertiseAddress = z.string().superRefine((s, ctx) => {
  if (isWildcardAddress(s)) {
    ctx.addIssue({
      code: 'custom',
      message: `must be an address peers can reach, not the wildcard ${s} (bind addresses go in host)`,
    });
  } else if (isIP(s) === 0 && !DNS_NAME.test(s)) {
    ctx.addIssue({ code: 'custom', message: `must be an IP address or a host name, got "${s}"` });
  }
});
const cidr = z.union([z.cidrv4(), z.cidrv6()], { message: 'must be a CIDR such as 10.0.0.0/8' });

/** A blocklist entry, in canonical form (blocklist/blocklist.ts). */
const blockedDomain = z.string().transform((s, ctx) => {
  try {
    return parseDomain(s);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
    return z.NEVER;
  }
});

const proxySchema = z.strictObject({
  /** Bind address of the HTTP proxy (default: the top-level `host`). */
  host: ip.optional(),
  port: port.default(DEFAULT_PROXY_PORT),
  diskBudgetBytes: z.number().int().positive().default(DEFAULT_DISK_BUDGET_BYTES),
  memoryBudgetBytes: z.number().int().nonnegative().default(DEFAULT_MEMORY_BUDGET_BYTES),
  maxObjectBytes: z.number().int().positive().default(DEFAULT_MAX_OBJECT_BYTES),
  /**
   * Compress compressible responses the origin sent uncompressed, once at commit (gzip), and
   * serve each client the coding it accepts (docs/httpprx.md "Compression"). Default on.
   */
  compress: z.boolean().default(true),
  /** Freshness for responses with neither explicit expiry nor Last-Modified (Coral: 12 h); off by default. */
  defaultTtlSeconds: z.number().int().positive().optional(),
  /**
   * Serve a stale copy for up to this long past expiry when the origin (and every member) cannot
   * answer — refused, timeout, 5xx — unless the response forbids it; an origin's own
   * `stale-if-error` takes precedence. 0 turns it off. Default 6 h (the proxy's).
   */
  staleOnErrorSeconds: z.number().int().nonnegative().default(STALE_ON_ERROR_SECONDS),
  /** Cap on heuristic freshness (10 % of the time since Last-Modified); default 24 h. */
  heuristicMaxSeconds: z.number().int().nonnegative().default(HEURISTIC_CAP_SECONDS),
  /**
   * Freshness of a 404, 405, 410, 414 or 501 that names none (s); 0 = not kept. Explicit
   * freshness on one is obeyed as sent. Default 60 s.
   */
  negativeTtlSeconds: z.number().int().nonnegative().default(NEGATIVE_TTL_SECONDS),
  /** Bound on waiting for a peer's answer and each body chunk; 0 = the proxy's default (1 s). */
  peerTimeoutMs: z.number().int().nonnegative().default(0),
  /** Bound on one index lookup (claims included); 0 = the proxy's default (2 s). */
  indexTimeoutMs: z.number().int().nonnegative().default(0),
  /** Bound on waiting for a peer that announced `fetching` (it waits on its origin); 0 = proxy default (3 s). */
  peerFetchingTimeoutMs: z.number().int().nonnegative().default(0),
  /** The most freshness a member's copy is believed to have left (s); default 1 h. */
  peerMaxTtlSeconds: z.number().int().nonnegative().default(PEER_MAX_TTL_SECONDS),
  /** Member copies up to this size are checked whole before a byte is sent; 0 = always stream. */
  peerVerifyWholeBytes: z.number().int().nonnegative().default(PEER_VERIFY_WHOLE_BYTES),
  /** Fraction of member copies audited against the origin (docs/security.md); 0 = off. */
  auditFraction: z.number().min(0).max(1).default(AUDIT_FRACTION),
  /** Sampled audits started per minute at most. */
  auditsPerMinute: z.number().int().nonnegative().default(AUDITS_PER_MINUTE),
  /** Members' reports checked per minute at most. */
  reportsPerMinute: z.number().int().nonnegative().default(REPORTS_PER_MINUTE),
  /** Quarantine of a member found lying (s), doubling for each new one up to quarantineMaxSeconds. */
  quarantineSeconds: z.number().int().positive().default(QUARANTINE_SECONDS),
  quarantineMaxSeconds: z.number().int().positive().default(QUARANTINE_MAX_SECONDS),
  /** A member reported by another has every copy audited this long (s). */
  suspectSeconds: z.number().int().nonnegative().default(SUSPECT_SECONDS),
  /** Per-client request rate limit (requests per second); 0 = the proxy's default. */
  clientRateLimitPerSecond: z.number().int().nonnegative().default(0),
  /**
   * Node-wide cap on body bytes fetched from origins (bytes per second), shared max-min fairly
   * between origin domains; 0 = unlimited.
   */
  originBytesPerSec: z.number().int().nonnegative().default(0),
  /**
   * Node-wide cap on body bytes served to clients and peers (bytes per second), shared max-min
   * fairly between origin domains; 0 = unlimited.
   */
  servedBytesPerSec: z.number().int().nonnegative().default(0),
  /** Site (accelerator) mode: host name → origin URL, e.g. www.school.example → http://origin:8080. */
  sites: z.record(dnsName, z.url({ protocol: /^https?$/ })).default({}),
  /** TLS listener for `*.<zone>` and the apex; on whenever a certificate is available (`tls`). */
  tlsPort: port.default(DEFAULT_PROXY_TLS_PORT),
  /**
   * With TLS off, follow an origin's redirect from `http://` to `https://` of the same URL inside
   * the proxy, so a Coralized http URL of an https-only site still serves the site.
   */
  followHttpsUpgrade: z.boolean().default(true),
  /**
   * Origin domains this node refuses (403 CORAL_ERR_ORIGIN_BLOCKED): a domain blocks itself and
   * every name under it. At load, the entries of `blocklistFile` are added to it. Re-read on SIGHUP.
   */
  blocklist: z.array(blockedDomain).default([]),
  /** A file of blocked domains (one per line, `#` comments), read at start and on SIGHUP. */
  blocklistFile: z.string().min(1).optional(),
});

const pemPath = z.string().min(1, { message: 'must be the path of a PEM file' });

const tlsSchema = z
  .strictObject({
    /** PEM certificate chain for `*.<zone>` and `<zone>` (leaf first). With `key`. */
    cert: pemPath.optional(),
    /** PEM private key of `cert`. */
    key: pemPath.optional(),
    /** Extra CA certificates (PEM files) trusted for https origins, beside the system's. */
    originCa: z.array(pemPath).default([]),
    /**
     * With no `cert`/`key`: create a local development CA and a wildcard certificate in
     * `<dataDir>/tls` (as Caddy's local HTTPS does). Off: no certificate, no TLS listener.
     */
    localCa: z.boolean().default(true),
    /**
     * Length of a session-ticket key epoch (s): every member derives the same ticket keys from the
     * fleet key for each epoch (trust/ticket-keys.ts), so a client resumes at any member.
     */
    ticketKeyRotationSeconds: z
      .number()
      .int()
      .min(TICKET_KEY_ROTATION_MIN_SECONDS)
      .max(TICKET_KEY_ROTATION_MAX_SECONDS)
      .default(TICKET_KEY_ROTATION_SECONDS),
  })
  .refine((t) => (t.cert === undefined) === (t.key === undefined), {
    message: 'tls.cert and tls.key go together (set both or neither)',
  });

const dshtSchema = z.strictObject({
  /** Bind address of the DSHT's UDP socket (default: the top-level `host`). */
  host: ip.optional(),
  port: port.default(DEFAULT_DSHT_PORT),
  /** RTT thresholds of cluster levels 1 and 2 in ms. */
  levelThresholdsMs: z
    .tuple([z.number().positive(), z.number().positive()])
    .default([...DEFAULT_LEVEL_THRESHOLDS_MS]),
  /**
   * Accept peers whose advertised address is not the source of their datagrams (members behind
   * NAT, or advertising another address than they bind). Off: such datagrams are dropped as
   * spoofed. Turn it on only where members are trusted (a keyed fleet, a private network).
   */
  allowNat: z.boolean().default(false),
  /** Node identities kept per IP (IPv6: per /64) in routing tables, members and DNS answers. */
  maxIdsPerIp: z.number().int().min(1).max(64).default(DEFAULT_MAX_IDS_PER_IP),
});

/** One fleet key: 32 bytes as 64 hex digits or base64; the message never repeats the secret. */
const fleetKey = z.string().superRefine((s, ctx) => {
  try {
    decodeKey(s, 'fleet key');
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
  }
});

const fleetSchema = z.strictObject({
  /**
   * The fleet's shared secrets: the first signs, all verify (rotation: docs/security.md). Keyed
   * mode is the default: a node with a bootstrap list needs a key (or `open`); a node with neither
   * a key nor a bootstrap list generates one into `<dataDir>/fleet.key`.
   */
  keys: z.array(fleetKey).default([]),
  /** A file holding the keys (one per line or comma-separated, `#` comments), re-read on SIGHUP. */
  keysFile: z.string().min(1).optional(),
  /** Open mode: no authentication at all (public experiments only; see docs/security.md). */
  open: z.boolean().default(false),
  /** Keyed mode: no authenticated DSHT traffic this long, while keys it lacks arrive = isolated. */
  isolationAfterMs: z.number().int().min(100).default(DEFAULT_ISOLATION_AFTER_MS),
});

const indexSchema = z.strictObject({
  /**
   * One fetcher per object: a miss asks the live member designated for its URL by rendezvous
   * hashing (nearest cluster first), which fetches from the origin once for every asker.
   */
  designated: z.boolean().default(true),
  /** Claim cold misses in the DSHT so one node fetches each object for the fleet (docs/node.md). */
  claims: z.boolean().default(true),
  /** Head start per rank before a lower-ranked node claims, in ms. */
  claimStepMs: z.number().int().nonnegative().default(DEFAULT_CLAIM_STEP_MS),
  /** Ranks beyond this one wait no longer (0 disables the head start). */
  claimRankCap: z.number().int().nonnegative().max(64).default(DEFAULT_CLAIM_RANK_CAP),
});

const purgeSchema = z.strictObject({
  /** Entries kept in the purge log (the oldest are dropped first). */
  logMaxEntries: z.number().int().min(1).max(1_000_000).default(DEFAULT_PURGE_LOG_MAX_ENTRIES),
  /** How long purge log entries are kept; a member away longer drops its older cache. */
  logRetentionSeconds: z
    .number()
    .int()
    .min(60)
    .max(365 * 86_400)
    .default(DEFAULT_PURGE_LOG_RETENTION_SECONDS),
  /** Period of the pull of the members' purge logs (catch-up). */
  syncIntervalMs: z.number().int().min(100).default(DEFAULT_PURGE_SYNC_INTERVAL_MS),
});

const viewSchema = z
  .strictObject({
    cidr,
    /** Node IDs (hex) or advertised addresses of the nodes that answer this view. */
    nodes: z.array(z.string().min(1)).min(1).optional(),
    region: z.string().min(1).optional(),
  })
  .refine((v) => (v.nodes === undefined) !== (v.region === undefined), {
    message: 'a view names either nodes or a region (exactly one)',
  });

const dnsSchema = z.strictObject({
  enabled: z.boolean().default(true),
  host: ip.default(DEFAULT_DNS_HOST),
  port: port.default(DEFAULT_DNS_PORT),
  answerCount: z.number().int().min(1).max(16).default(DEFAULT_DNS_ANSWER_COUNT),
  ttl: z.number().int().min(1).max(86_400).default(DEFAULT_DNS_TTL_SECONDS),
  /** The fleet's nameservers for NS records and glue (names under the zone, e.g. ns1.nyud.net). */
  nameservers: z.array(z.strictObject({ name: dnsName, ip })).default([]),
  /** Split-horizon views: resolvers in `cidr` are answered with `nodes` or nodes of `region`. */
  views: z.array(viewSchema).default([]),
  /** Response rate limiting: identical answers per second per client /24; 0 disables. */
  rateLimitPerSecond: z.number().int().nonnegative().default(DEFAULT_DNS_RATE_LIMIT_PER_SECOND),
  /** Nearby-nameserver delegation (sub-zones per cluster level, NS records of nearby members). */
  delegation: z.boolean().default(false),
  /** The port resolvers ask members on (53; a member is a nameserver only if its DNS is there). */
  delegationPort: port.default(53),
});

const ms = (d: number) => z.number().int().nonnegative().default(d);
const connectionsSchema = z.strictObject({
  /**
   * Client connections the node holds at most, every client listener together (proxy http and
   * https, DNS over TCP); 0 = from the descriptor limit in effect, less `reserve`.
   */
  max: z.number().int().nonnegative().default(0),
  /** Descriptors kept back from client connections; 0 = max(128, 25 % of the limit). */
  reserve: z.number().int().nonnegative().default(0),
  /** Proxy connections per client (IPv4 address, IPv6 /64); 0 = no cap. */
  perAddress: z.number().int().nonnegative().default(DEFAULT_PER_ADDRESS),
  /** Proxy connections per network (IPv4 /24, IPv6 /56); 0 = no cap. */
  perPrefix: z.number().int().nonnegative().default(DEFAULT_PER_PREFIX),
  /** A proxy connection that sends nothing this long after it was accepted is closed (0: off). */
  idleTimeoutMs: ms(DEFAULT_IDLE_TIMEOUT_MS),
  /** ... and after a response, before the next request begins (0: off). */
  keepAliveTimeoutMs: ms(DEFAULT_KEEPALIVE_TIMEOUT_MS),
  /** A request head must be complete this long after the wait for it began (0: off). */
  headerTimeoutMs: ms(DEFAULT_HEADER_TIMEOUT_MS),
  /** Longest gap between two reads of a request body (0: off). */
  bodyTimeoutMs: ms(DEFAULT_BODY_TIMEOUT_MS),
});

const adminSchema = z.strictObject({
  host: ip.default(DEFAULT_ADMIN_HOST),
  port: port.default(DEFAULT_ADMIN_PORT),
  /** Bearer token; when set, requests from non-loopback addresses must present it. */
  token: z.string().min(16, { message: 'must be at least 16 characters' }).optional(),
  /** Serve /metrics to any client without the token (Prometheus scraping by annotation). */
  publicMetrics: z.boolean().default(false),
});

/** `auto` (the machine's available parallelism) or an integer 1..MAX_WORKERS. */
const WORKERS_MESSAGE = { message: `must be auto or an integer from 1 to ${MAX_WORKERS}` };
const workers = z
  .union(
    [
      z.literal('auto'),
      z.number().int(WORKERS_MESSAGE).min(1, WORKERS_MESSAGE).max(MAX_WORKERS, WORKERS_MESSAGE),
    ],
    WORKERS_MESSAGE,
  )
  .transform((w) => (w === 'auto' ? Math.min(availableParallelism(), MAX_WORKERS) : w));

/** `log.access`: format, destination and sampling of the access log. */
const accessLogSchema = z.strictObject({
  /** `json` (one JSON object per line, `"log":"access"`) or `combined` (Apache/nginx). */
  format: z.enum(['json', 'combined']).default('json'),
  /**
   * `stdout` (beside the node's own lines), `off`, or the path of a file (appended to, reopened
   * on SIGUSR1 for logrotate).
   */
  destination: z.string().min(1).default('stdout'),
  /** Fraction of requests logged, 0..1; 5xx and aborted requests always are. */
  sample: z.number().min(0).max(1).default(1),
});

export const configSchema = z.strictObject({
  dataDir: z.string().min(1).default(DEFAULT_DATA_DIR),
  zone: dnsName.default(DEFAULT_ZONE),
  /** Bind address of the proxy and the DSHT unless overridden per service. */
  host: ip.default(DEFAULT_HOST),
  /**
   * Name or IP this node advertises to the fleet (DSHT contact, DNS answers, peer fetches). A name
   * is resolved once at start through `hosts`, then the system resolver. Default: `host` unless it
   * is a wildcard, else 127.0.0.1.
   */
  advertise: advertiseAddress.optional(),
  region: z.string().min(1).max(64).optional(),
  /** DSHT addresses (`host:port`) of fleet members to join through. */
  bootstrap: z.array(hostPort).default([]),
  /** Static name → IP map used before DNS for origins, bootstrap and `advertise` (like /etc/hosts). */
  hosts: z.record(dnsName, ip).default({}),
  /** Allow origins that resolve to loopback, private or link-local addresses (off: SSRF guard). */
  allowPrivateOrigins: z.boolean().default(false),
  proxy: proxySchema.default(proxySchema.parse({})),
  dsht: dshtSchema.default(dshtSchema.parse({})),
  dns: dnsSchema.default(dnsSchema.parse({})),
  tls: tlsSchema.default(tlsSchema.parse({})),
  index: indexSchema.default(indexSchema.parse({})),
  purge: purgeSchema.default(purgeSchema.parse({})),
  admin: adminSchema.default(adminSchema.parse({})),
  connections: connectionsSchema.default(connectionsSchema.parse({})),
  fleet: fleetSchema.default(fleetSchema.parse({})),
  log: z
    .strictObject({
      level: z
        .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
        .default(DEFAULT_LOG_LEVEL),
      /** The access log (@coral/accesslog, docs/accesslog.md): one line per proxy request. */
      access: accessLogSchema.default(accessLogSchema.parse({})),
    })
    .default({ level: DEFAULT_LOG_LEVEL, access: accessLogSchema.parse({}) }),
  /** Origin used in the example Coralized fetch printed at start (no other effect). */
  exampleOrigin: z.url({ protocol: /^http$/ }).default(DEFAULT_EXAMPLE_ORIGIN),
  /**
   * Worker threads that serve clients (`auto` = `os.availableParallelism()`); 1 = one thread, as
   * before workers. Resolved to a number at load. With N ≥ 2, N worker threads answer DNS on the
   * DNS port (SO_REUSEPORT) from a copy of the main thread's directory (workers/); the proxy stays
   * on the main thread for now (docs/architecture.md, "The worker model as built").
   */
  workers: workers.default(DEFAULT_WORKERS),
  /** How long shutdown waits for in-flight responses before closing connections. */
  shutdownGraceMs: z.number().int().nonnegative().default(DEFAULT_SHUTDOWN_GRACE_MS),
  /**
   * Quiet time (event loop mostly idle up to now) after which the C heap's free pages go back to
   * the system after a busy spell (glibc malloc_trim, runtime/heap-trim.ts); 0 = never.
   */
  heapTrimIntervalMs: z.number().int().nonnegative().default(DEFAULT_HEAP_TRIM_INTERVAL_MS),
});

/** Deeply read-only, as the validated configuration is frozen. */
export type DeepReadonly<T> = T extends (infer U)[]
  ? readonly DeepReadonly<U>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

/** The validated, defaulted and frozen configuration of one node. */
export type CoralConfig = DeepReadonly<z.output<typeof configSchema>>;
/** What a configuration file may contain (everything optional). */
export type CoralConfigInput = z.input<typeof configSchema>;
