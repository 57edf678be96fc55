/**
 * A fleet of Coral nodes on one machine, one process per node, each on its own loopback address
 * (127.0.B.11, 127.0.B.12, ...) with the standard ports, all bootstrapping from the first. Used by
 * `npm run fleet`, the end-to-end tests and the benchmarks. Every node runs the real
 * `coral-node start` (packages/node/dist/cli.js, so build first) configured through `CORAL_*`
 * environment variables, as a container would be. The fleet is keyed: one key generated for it
 * (or `keys`) goes to every node as `CORAL_FLEET_KEYS`; `open: true` runs it in open mode.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, closeSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Keyring } from '@coral/keyring';
import { AdminClient } from '../cli/client.js';
import { NODE_RUNTIME_ENV } from '../runtime-env.js';

/** packages/node/dist/cli.js (the same path from src/fleet under vitest and from dist/fleet). */
export const CLI_PATH = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

/**
 * The environment of a node the launcher starts: PATH, the node's runtime settings
 * (NODE_RUNTIME_ENV), then the fleet's and the node's own `CORAL_*` variables.
 */
export function nodeProcessEnv(env: Record<string, string>): Record<string, string> {
  return { PATH: process.env.PATH ?? '', ...NODE_RUNTIME_ENV, ...env };
}

/** Level-0 contacts each node must have before a large fleet counts as formed. */
export const FORMED_MIN_CONTACTS = 16;

export interface FleetOptions {
  nodes: number;
  /** Directory for data directories and logs (one subdirectory per node). */
  dataRoot: string;
  /** Third octet of the loopback addresses (default: random in 100..249, to avoid other runs). */
  subnet?: number;
  /** First host octet (default 11: node i is 127.0.B.(11+i)). */
  firstHost?: number;
  /** Environment common to every node (e.g. CORAL_HOSTS, CORAL_ALLOW_PRIVATE_ORIGINS). */
  env?: Record<string, string>;
  /** Per-node extra environment. */
  nodeEnv?: (index: number) => Record<string, string>;
  ports?: { proxy?: number; dsht?: number; dns?: number; admin?: number };
  /** Bound on the wait for the fleet to form (default 60 s). */
  readyTimeoutMs?: number;
  logLevel?: string;
  /** The fleet keys every node gets (first signs); default one generated for this fleet. */
  keys?: string[];
  /** Run the fleet in open mode (no keys). Default false. */
  open?: boolean;
}

export interface FleetNode {
  index: number;
  ip: string;
  proxyPort: number;
  dshtPort: number;
  dnsPort: number;
  adminPort: number;
  adminUrl: string;
  dataDir: string;
  logFile: string;
  process: ChildProcess;
  admin: AdminClient;
  env: Record<string, string>;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export class Fleet {
  readonly nodes: FleetNode[] = [];
  readonly subnet: number;
  /** The keys given to every node (empty in open mode). */
  readonly keys: readonly string[];
  readonly #options: FleetOptions;

  constructor(options: FleetOptions) {
    this.#options = options;
    this.subnet = options.subnet ?? 100 + Math.floor(Math.random() * 150);
    this.keys = options.open ? [] : (options.keys ?? [Keyring.generateKey()]);
  }

  /** Start every node and wait until each is ready and knows every other node. */
  async start(): Promise<this> {
    const o = this.#options;
    for (let i = 0; i < o.nodes; i++) this.#launch(i, o.nodeEnv?.(i) ?? {});
    await this.waitFormed(o.readyTimeoutMs ?? 60_000);
    return this;
  }

  /**
   * One more node, the next address, bootstrapping from the first like the others, its
   * environment changed by `env`. Does not wait for it to be ready.
   */
  addNode(env: Record<string, string> = {}): FleetNode {
    return this.#launch(this.nodes.length, env);
  }

  /**
   * Start node `index` again (after it exited or was killed), with the same address, ports, data
   * directory and environment. Does not wait for it to be ready.
   */
  restart(index: number): FleetNode {
    const old = this.nodes[index];
    if (!old) throw new Error(`no node ${index}`);
    if (old.process.exitCode === null && old.process.signalCode === null)
      throw new Error(`node ${index + 1} is still running`);
    const ports = {
      proxy: old.proxyPort,
      dsht: old.dshtPort,
      dns: old.dnsPort,
      admin: old.adminPort,
    };
    const node = this.#spawn(index, old.ip, ports, old.dataDir, old.env);
    this.nodes[index] = node;
    return node;
  }

  #launch(i: number, extra: Record<string, string>): FleetNode {
    const o = this.#options;
    const first = o.firstHost ?? 11;
    const ports = { proxy: 8090, dsht: 8091, dns: 5353, admin: 8092, ...o.ports };
    const firstIp = `127.0.${this.subnet}.${first}`;
    const ip = `127.0.${this.subnet}.${first + i}`;
    const dataDir = join(o.dataRoot, `node${i + 1}`);
    mkdirSync(dataDir, { recursive: true });
    const env: Record<string, string> = {
      CORAL_HOST: ip,
      CORAL_DNS_HOST: ip,
      CORAL_ADMIN_HOST: ip,
      CORAL_PROXY_PORT: String(ports.proxy),
      CORAL_DSHT_PORT: String(ports.dsht),
      CORAL_DNS_PORT: String(ports.dns),
      CORAL_ADMIN_PORT: String(ports.admin),
      CORAL_DATA_DIR: join(dataDir, 'data'),
      CORAL_LOG_LEVEL: o.logLevel ?? 'warn',
      // The sampled audit of member copies draws at random (Math.random in each process), and the
      // launcher's users count origin fetches per object (tests, bench:flash): off unless `env`
      // turns it on (bench:soak runs it at the node's default).
      CORAL_PROXY_AUDIT_FRACTION: '0',
      ...(o.open ? { CORAL_FLEET_OPEN: 'true' } : { CORAL_FLEET_KEYS: this.keys.join(',') }),
      ...(i > 0 ? { CORAL_BOOTSTRAP: `${firstIp}:${ports.dsht}` } : {}),
      ...o.env,
      ...extra,
    };
    const node = this.#spawn(i, ip, ports, dataDir, env);
    this.nodes[i] = node;
    return node;
  }

  #spawn(
    index: number,
    ip: string,
    ports: { proxy: number; dsht: number; dns: number; admin: number },
    dataDir: string,
    env: Record<string, string>,
  ): FleetNode {
    const logFile = join(dataDir, 'node.log');
    const fd = openSync(logFile, 'a');
    const child = spawn(process.execPath, [CLI_PATH, 'start'], {
      env: nodeProcessEnv(env),
      stdio: ['ignore', fd, fd],
    });
    closeSync(fd);
    const adminUrl = `http://${ip}:${ports.admin}`;
    return {
      index,
      ip,
      proxyPort: ports.proxy,
      dshtPort: ports.dsht,
      dnsPort: ports.dns,
      adminPort: ports.admin,
      adminUrl,
      dataDir,
      logFile,
      process: child,
      admin: new AdminClient({ url: adminUrl, timeoutMs: 5_000 }),
      env,
    };
  }

  /**
   * Wait until every node answers /readyz and knows the others: all of them in a small fleet, at
   * least {@link FORMED_MIN_CONTACTS} in a large one (a routing table need not hold everyone).
   */
  async waitFormed(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const want = Math.min(this.nodes.length - 1, FORMED_MIN_CONTACTS);
    for (const node of this.nodes) {
      for (;;) {
        if (node.process.exitCode !== null) {
          throw new Error(
            `node ${node.index + 1} exited (${node.process.exitCode}):\n${this.log(node.index)}`,
          );
        }
        const ok = await node.admin
          .json<{ ready: boolean }>('GET', '/readyz')
          .then(async (r) => {
            if (!r.ready) return false;
            const routes = await node.admin.json<{ contacts: unknown[] }>(
              'GET',
              '/v1/dsht/routes?level=0',
            );
            return routes.contacts.length >= want;
          })
          .catch(() => false);
        if (ok) break;
        if (Date.now() > deadline) {
          throw new Error(
            `fleet did not form within ${timeoutMs} ms (node ${node.index + 1}):\n${this.log(node.index)}`,
          );
        }
        await sleep(100);
      }
    }
  }

  /** The last lines of a node's log (for failure messages). */
  log(index: number, lines = 40): string {
    const node = this.nodes[index];
    if (!node) return '';
    try {
      return readFileSync(node.logFile, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  }

  /** SIGTERM every node and wait for them to exit (SIGKILL after `graceMs`). */
  async stop(graceMs = 10_000): Promise<void> {
    await Promise.all(this.nodes.map((n) => stopProcess(n.process, graceMs)));
  }
}

/** SIGTERM, then SIGKILL if it has not exited within `graceMs`; resolves to the exit code. */
export async function stopProcess(child: ChildProcess, graceMs: number): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  const code = await exited;
  clearTimeout(timer);
  return code;
}
