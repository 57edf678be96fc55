/**
 * `coral-node start`: start a node, print where it listens and an example fetch, and run until
 * SIGTERM or SIGINT, then shut down gracefully (a second signal exits at once). SIGHUP reloads the
 * TLS certificate, re-reads the configuration (`reload`) and makes the blocklist
 * (`proxy.blocklist` / `proxy.blocklistFile`) and the fleet keyring (`fleet.keys` /
 * `fleet.keysFile`) what it says; a configuration that no longer validates changes nothing and is
 * logged. SIGUSR1 reopens the access log file (logrotate).
 */
import type { CliIo } from '../cli/program.js';
import type { CoralConfig } from '../config/schema.js';
import { ConfigError, CoralNodeError, FleetKeyError } from '../errors.js';
import { createLogger } from '../logging/logger.js';
import { installFatalHandlers, type FatalTarget } from '../runtime/fatal.js';
import { CoralNode } from './node.js';
import type { ServiceFactory } from './ports.js';

export async function runNode(
  config: CoralConfig,
  io: CliIo,
  services: ServiceFactory,
  signals: NodeJS.EventEmitter = process,
  reload?: () => Promise<CoralConfig>,
  /** The process whose uncaught errors end the node with status 1 (the CLI passes `process`). */
  fatal?: FatalTarget,
): Promise<number> {
  const logger = createLogger({ level: config.log.level });
  if (fatal) installFatalHandlers(fatal, logger);
  let node: CoralNode;
  try {
    node = await CoralNode.start(config, { services, logger });
  } catch (err) {
    const code = err instanceof CoralNodeError ? `${err.code}: ` : '';
    io.stderr.write(`coral-node: ${code}${(err as Error).message}\n`);
    logger.flush();
    const configProblem =
      err instanceof ConfigError ||
      (err instanceof FleetKeyError && err.code === 'CORAL_ERR_FLEET_KEY_REQUIRED');
    return configProblem ? 2 : 1;
  }
  io.stdout.write(node.banner());
  return new Promise<number>((resolve) => {
    let stopping = false;
    const onSignal = (signal: string) => {
      if (stopping) {
        logger.warn({ signal }, 'second signal: exiting now');
        resolve(1);
        return;
      }
      stopping = true;
      logger.info({ signal }, 'shutting down');
      void node.stop().then(() => {
        logger.flush();
        resolve(0);
      });
    };
    signals.on('SIGTERM', onSignal);
    signals.on('SIGINT', onSignal);
    // SIGUSR1 (logrotate's postrotate): the access log file is opened again by its path. A
    // listener replaces Node's own use of the signal (starting the inspector).
    signals.on('SIGUSR1', () => {
      if (stopping) return;
      logger.info({ signal: 'SIGUSR1' }, 'reopening the access log');
      node.reopenAccessLog();
    });
    // SIGHUP: read the TLS certificate files again (after an ACME renewal; connections stay), and
    // make the blocklist and the fleet keyring what the re-read configuration says.
    signals.on('SIGHUP', () => {
      if (stopping) return;
      logger.info({ signal: 'SIGHUP' }, 'reloading the TLS certificate');
      void node.reloadTls();
      void node.reloadWorkers();
      if (!reload) return;
      void (async () => {
        let next: CoralConfig;
        try {
          next = await reload();
        } catch (err) {
          const e = err as { code?: string; message?: string };
          logger.error(
            { signal: 'SIGHUP', code: e.code },
            `SIGHUP: configuration not reloaded (blocklist and fleet keys stay as they were): ${e.message ?? String(err)}`,
          );
          return;
        }
        try {
          const b = await node.reloadBlocklist(next);
          logger.info(
            {
              signal: 'SIGHUP',
              domains: b.domains.length,
              added: b.added,
              removed: b.removed,
              dropped: b.dropped,
            },
            'blocklist reloaded',
          );
        } catch (err) {
          logger.error({ signal: 'SIGHUP', err }, 'SIGHUP: blocklist not reloaded');
        }
        if (node.trust.mode !== 'keyed') return;
        try {
          const keys = await node.reloadKeys(next);
          logger.info(
            { signal: 'SIGHUP', keyIds: keys.map((k) => k.id) },
            'fleet keys reloaded from the configuration',
          );
        } catch (err) {
          const e = err as { code?: string; message?: string };
          logger.error(
            { signal: 'SIGHUP', code: e.code },
            `SIGHUP: fleet keys not reloaded: ${e.message ?? String(err)}`,
          );
        }
      })();
    });
  });
}
