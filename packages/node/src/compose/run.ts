/**
 * `coral-node start`: start a node, print where it listens and an example fetch, and run until
 * SIGTERM or SIGINT, then shut down gracefully (a second signal exits at once).
 */
import type { CliIo } from '../cli/program.js';
import type { CoralConfig } from '../config/schema.js';
import { ConfigError, CoralNodeError } from '../errors.js';
import { createLogger } from '../logging/logger.js';
import { CoralNode } from './node.js';
import type { ServiceFactory } from './ports.js';

export async function runNode(
  config: CoralConfig,
  io: CliIo,
  services: ServiceFactory,
  signals: NodeJS.EventEmitter = process,
): Promise<number> {
  const logger = createLogger({ level: config.log.level });
  let node: CoralNode;
  try {
    node = await CoralNode.start(config, { services, logger });
  } catch (err) {
    const code = err instanceof CoralNodeError ? `${err.code}: ` : '';
    io.stderr.write(`coral-node: ${code}${(err as Error).message}\n`);
    logger.flush();
    return err instanceof ConfigError ? 2 : 1;
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
    // SIGHUP: read the TLS certificate files again (after an ACME renewal); connections stay.
    signals.on('SIGHUP', () => {
      if (stopping) return;
      logger.info({ signal: 'SIGHUP' }, 'reloading the TLS certificate');
      void node.reloadTls();
    });
  });
}
