/**
 * The last line of defence: an exception no code caught, or a promise rejection no code handled,
 * in any service of the node. Resource exhaustion (EMFILE, ENFILE, ENOMEM) is handled where it
 * happens — accept errors, timers, disk writes, sockets — so what arrives here is a bug, and the
 * process is in a state nobody planned for. It is logged at `fatal` with its cause, and the process
 * exits with status 1 so that its supervisor (compose `restart:`, Kubernetes' restartPolicy)
 * starts it again, rather than going on half broken or dying without a word in the log.
 */
import type { Logger } from 'pino';

/** What is needed of `process`. */
export interface FatalTarget {
  on(event: 'uncaughtException', listener: (err: Error, origin: string) => void): unknown;
  on(event: 'unhandledRejection', listener: (reason: unknown) => void): unknown;
  exit(code: number): never | void;
}

/** Exit status of a node that died of an uncaught error. */
export const FATAL_EXIT_CODE = 1;

export function installFatalHandlers(
  target: FatalTarget,
  logger: Pick<Logger, 'fatal' | 'flush'>,
): void {
  const die = (err: unknown, origin: string): void => {
    try {
      logger.fatal(
        { err, origin, code: (err as { code?: unknown } | undefined)?.code },
        `fatal: ${origin === 'unhandledRejection' ? 'unhandled rejection' : 'uncaught exception'}: ${
          (err as Error | undefined)?.message ?? String(err)
        }; exiting (status ${FATAL_EXIT_CODE}) for the supervisor to restart the node`,
      );
      logger.flush();
    } finally {
      target.exit(FATAL_EXIT_CODE);
    }
  };
  target.on('uncaughtException', (err, origin) => die(err, origin));
  target.on('unhandledRejection', (reason) => die(reason, 'unhandledRejection'));
}
