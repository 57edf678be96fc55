/**
 * The `coral-node` command line (commander). `start` runs a node; every other command is a client
 * of a running node's admin API. `run()` takes its streams and environment as arguments, so tests
 * drive the CLI in-process; `cli.ts` binds it to the real process.
 *
 * Exit codes: 0 success, 1 failure (node unreachable, error answer, usage error), 2 invalid
 * configuration (nothing was started).
 */
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { coralizeUrlDetailed, type Form } from '@coral/names';
import {
  DEFAULT_PROXY_PORT,
  DEFAULT_PROXY_TLS_PORT,
  DEFAULT_ZONE,
  type CoralConfig,
} from '../config/schema.js';
import { loadStartConfig } from '../config/load.js';
import type { NameLookup } from '../config/resolve.js';
import { ConfigError, CoralNodeError } from '../errors.js';
import { VERSION } from '../version.js';
import { Keyring } from '@coral/keyring';
import { addAcmeCommands } from './acme.js';
import { AdminClient, DEFAULT_ADMIN_URL } from './client.js';
import { addLogsCommand } from './logs.js';

export interface CliIo {
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown };
  env: Record<string, string | undefined>;
  /** Standard input (`keys install -`); default the process's. */
  stdin?: AsyncIterable<Buffer | string>;
}

async function readStdin(io: CliIo): Promise<string> {
  let text = '';
  const input: AsyncIterable<Buffer | string> = io.stdin ?? process.stdin;
  for await (const chunk of input) text += chunk.toString();
  return text;
}

export interface CliDeps {
  /**
   * Run a node with `config` until it is told to stop; resolves to the process exit code.
   * `reload` loads the configuration again the same way (SIGHUP).
   */
  startNode(config: CoralConfig, io: CliIo, reload?: () => Promise<CoralConfig>): Promise<number>;
  /** Name lookup after `hosts` when checking `advertise` (default: the system resolver). */
  lookup?: NameLookup;
}

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_CONFIG = 2;

function intArg(name: string, min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < min || n > max) {
      throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}`);
    }
    return n;
  };
}

export async function run(argv: string[], io: CliIo, deps: CliDeps): Promise<number> {
  let exitCode = EXIT_OK;
  const print = (value: unknown): void => {
    io.stdout.write(
      typeof value === 'string' ? `${value}\n` : `${JSON.stringify(value, null, 2)}\n`,
    );
  };

  const program = new Command('coral-node')
    .description('Run a Coral node, or talk to a running one through its admin API')
    .version(`coral-node ${VERSION}`, '-V, --version', 'print the version and exit')
    .option(
      '--admin <url>',
      'admin API of the node to talk to',
      io.env.CORAL_ADMIN_URL ?? DEFAULT_ADMIN_URL,
    )
    .option('--token <token>', 'admin bearer token (default: $CORAL_ADMIN_TOKEN)')
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
    });

  const client = (): AdminClient => {
    const opts = program.opts<{ admin: string; token?: string }>();
    return new AdminClient({ url: opts.admin, token: opts.token ?? io.env.CORAL_ADMIN_TOKEN });
  };

  program
    .command('start')
    .description('start a node (DSHT, DNS server, caching proxy, admin API) until SIGTERM/SIGINT')
    .option('-c, --config <file>', 'JSON or YAML configuration file (default: $CORAL_CONFIG)')
    .action(async (opts: { config?: string }) => {
      let config: CoralConfig;
      try {
        config = await loadStartConfig({ file: opts.config, env: io.env, lookup: deps.lookup });
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        io.stderr.write(`coral-node: ${err.message}\n`);
        exitCode = EXIT_CONFIG;
        return;
      }
      exitCode = await deps.startNode(config, io, () =>
        loadStartConfig({ file: opts.config, env: io.env, lookup: deps.lookup }),
      );
    });

  program
    .command('keygen')
    .description('print a new random fleet key (32 bytes as 64 hex digits) for fleet.keys')
    .action(() => print(Keyring.generateKey()));

  const keys = program
    .command('keys')
    .description('the fleet keys of a running node (by id; secrets are never shown)');
  keys
    .command('list')
    .description('key ids, primary (signing) key first')
    .action(async () => print(await client().json('GET', '/v1/fleet/keys')));
  keys
    .command('install <key>')
    .description(
      'add KEY (64 hex or base64; "-" reads it from stdin): it verifies at once, signs after "use"',
    )
    .action(async (key: string) => {
      const secret = key === '-' ? (await readStdin(io)).trim() : key;
      print(await client().json('POST', '/v1/fleet/keys', { key: secret }));
    });
  keys
    .command('use <id>')
    .description('make the key with this id the primary (the one that signs)')
    .action(async (id: string) =>
      print(await client().json('POST', `/v1/fleet/keys/${encodeURIComponent(id)}/use`)),
    );
  keys
    .command('remove <id>')
    .description('drop the key with this id (the primary is refused: "use" another first)')
    .action(async (id: string) =>
      print(await client().json('DELETE', `/v1/fleet/keys/${encodeURIComponent(id)}`)),
    );
  keys
    .command('status')
    .description('trust mode, drops by reason, isolation and verified members')
    .action(async () => print(await client().json('GET', '/v1/fleet/auth')));

  program
    .command('status')
    .description("show the node's identity, services and readiness")
    .action(async () => {
      const c = client();
      const info = await c.json<Record<string, unknown>>('GET', '/v1/node');
      const ready = await c.json<{ ready: boolean; checks: Record<string, boolean> }>(
        'GET',
        '/readyz',
      );
      print({ ...info, ready: ready.ready, checks: ready.checks });
      if (!ready.ready) exitCode = EXIT_FAILURE;
    });

  const dsht = program.command('dsht').description('query the distributed sloppy hash table');
  dsht
    .command('get <key>')
    .description('network get of KEY (40 hex chars, or a name hashed with SHA-1)')
    .option('--local', "only this node's own store, no network lookup")
    .action(async (key: string, opts: { local?: boolean }) => {
      const kind = opts.local ? 'local' : 'values';
      print(await client().json('GET', `/v1/dsht/${kind}/${encodeURIComponent(key)}`));
    });
  dsht
    .command('put <key> <value>')
    .description('sloppy put of VALUE (UTF-8 text) under KEY')
    .requiredOption('--ttl <seconds>', 'time to live', intArg('--ttl', 1, 86_400))
    .action(async (key: string, value: string, opts: { ttl: number }) => {
      print(
        await client().json('PUT', `/v1/dsht/values/${encodeURIComponent(key)}`, {
          value,
          ttl: opts.ttl,
        }),
      );
    });
  dsht
    .command('ping <address>')
    .description('one DSHT PING to ADDRESS (ip:port): its round-trip time')
    .option('--retries <n>', 'resends after a timeout (default 2)', intArg('--retries', 0, 5))
    .action(async (address: string, opts: { retries?: number }) => {
      const r = await client().json<{ answered: boolean }>('POST', '/v1/dsht/ping', {
        address,
        ...(opts.retries !== undefined ? { retries: opts.retries } : {}),
      });
      print(r);
      if (!r.answered) exitCode = EXIT_FAILURE;
    });
  dsht
    .command('routes')
    .description('routing table contacts (of one level, or all)')
    .option('--level <n>', 'cluster level (0 global, 1, 2)', intArg('--level', 0, 15))
    .action(async (opts: { level?: number }) => {
      const q = opts.level === undefined ? '' : `?level=${opts.level}`;
      print(await client().json('GET', `/v1/dsht/routes${q}`));
    });

  program
    .command('clusters')
    .description('clusters per level: id, size, age, routing table size')
    .action(async () => print(await client().json('GET', '/v1/clusters')));

  const cache = program.command('cache').description("the proxy's cache");
  cache
    .command('ls')
    .description('list cached objects')
    .action(async () => print(await client().json('GET', '/v1/cache')));
  cache
    .command('purge <url>')
    .description(
      'drop URL (origin form, http://host/path) from this node only and withdraw its ' +
        'announcement (the fleet: coral-node purge --url)',
    )
    .action(async (url: string) => print(await client().json('POST', '/v1/cache/purge', { url })));

  program
    .command('purge')
    .description(
      'purge the fleet: every stored response of a URL, a URL prefix or a tag (Surrogate-Key / ' +
        "Cache-Tag), here and on every live member; prints each member's count",
    )
    .option('--url <url>', 'one URL (http://host/path, origin form)')
    .option('--prefix <prefix>', 'every URL starting with this absolute http(s) URL prefix')
    .option('--tag <tag>', 'every response the origin tagged with TAG')
    .option('--json', 'print the whole answer as JSON')
    .action(async (opts: { url?: string; prefix?: string; tag?: string; json?: boolean }) => {
      const given = (['url', 'prefix', 'tag'] as const).filter((k) => opts[k] !== undefined);
      if (given.length !== 1) {
        io.stderr.write('coral-node: purge takes exactly one of --url, --prefix and --tag\n');
        exitCode = EXIT_FAILURE;
        return;
      }
      const kind = given[0]!;
      const r = await client().json<PurgeAnswer>('POST', '/v1/purge', { [kind]: opts[kind] }, [
        FLEET_INCOMPLETE_STATUS,
      ]);
      if (opts.json) print(r);
      else print(purgeTable(r));
      if (!r.propagation.complete) {
        io.stderr.write(
          `coral-node: ${r.error?.code ?? 'CORAL_ERR_FLEET_INCOMPLETE'}: the purge was not applied by every live member (they catch up from the purge log)\n`,
        );
        exitCode = EXIT_FAILURE;
      }
    });

  addAcmeCommands(program, client, print, FLEET_INCOMPLETE_STATUS, (message) => {
    io.stderr.write(`coral-node: ${message}\n`);
    exitCode = EXIT_FAILURE;
  });

  addLogsCommand(program, client, io.stdout, (message) => {
    io.stderr.write(`coral-node: ${message}\n`);
    exitCode = EXIT_FAILURE;
  });

  program
    .command('coralize <url>')
    .description(
      'print the Coralized URL of URL: https origins get the one-label name on the TLS port, ' +
        'http origins the legacy name on the http port (docs/names.md)',
    )
    .option('--zone <zone>', 'Coral zone', io.env.CORAL_ZONE ?? DEFAULT_ZONE)
    .option(
      '--port <port>',
      "the proxy's http port to put in the URL (80 leaves it out)",
      intArg('--port', 1, 65535),
      io.env.CORAL_PROXY_PORT ? Number(io.env.CORAL_PROXY_PORT) : DEFAULT_PROXY_PORT,
    )
    .option(
      '--tls-port <port>',
      "the proxy's TLS port to put in the URL (443 leaves it out)",
      intArg('--tls-port', 1, 65535),
      io.env.CORAL_PROXY_TLS_PORT ? Number(io.env.CORAL_PROXY_TLS_PORT) : DEFAULT_PROXY_TLS_PORT,
    )
    .option(
      '--form <form>',
      'one-label (served over TLS) or legacy (http origins only)',
      (v: string): Form => {
        if (v !== 'one-label' && v !== 'legacy') {
          throw new InvalidArgumentError('--form must be one-label or legacy');
        }
        return v;
      },
    )
    .option('-v, --verbose', 'print which form was used and why, as JSON')
    .action(
      (
        url: string,
        opts: { zone: string; port: number; tlsPort: number; form?: Form; verbose?: boolean },
      ) => {
        const r = coralizeUrlDetailed(url, opts.zone, {
          httpPort: opts.port,
          tlsPort: opts.tlsPort,
          ...(opts.form ? { form: opts.form } : {}),
          fallback: 'legacy',
        });
        print(opts.verbose ? r : r.url);
      },
    );

  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here with exit code 0; usage errors were already printed.
      return err.exitCode === 0 ? EXIT_OK : EXIT_FAILURE;
    }
    const code = (err as { code?: string }).code;
    io.stderr.write(
      `coral-node: ${err instanceof CoralNodeError || code ? `${code}: ` : ''}${(err as Error).message}\n`,
    );
    return EXIT_FAILURE;
  }
  return exitCode;
}

/** The status of a fleet-wide change some live member did not apply (admin/fleet-answer.ts). */
export const FLEET_INCOMPLETE_STATUS = 502;

/** What `POST /v1/purge` answers (admin/purge-routes.ts). */
interface PurgeAnswer {
  error?: { code: string; message: string };
  id: string;
  kind: string;
  value: string;
  local: { nodeId: string; count: number };
  propagation: {
    mode: 'off' | 'sent';
    complete: boolean;
    reason?: string;
    members: { nodeId: string; address: string; ok: boolean; count?: number; error?: string }[];
  };
}

/** One line per member: node id, address, count or error. */
function purgeTable(r: PurgeAnswer): string {
  const lines = [`purge ${r.id}  ${r.kind} ${r.value}`];
  lines.push(`  ${r.local.nodeId.slice(0, 12)}  (this node)  ${r.local.count}`);
  for (const m of r.propagation.members) {
    const what = m.ok ? String(m.count ?? 0) : `error ${m.error ?? 'unknown'}`;
    lines.push(`  ${m.nodeId.slice(0, 12)}  ${m.address}  ${what}`);
  }
  if (r.propagation.mode === 'off') lines.push(`  not sent: ${r.propagation.reason ?? ''}`);
  else if (r.propagation.members.length === 0) lines.push(`  ${r.propagation.reason ?? ''}`);
  return lines.join('\n');
}
