/**
 * pino JSON logs. The process has one root logger; each component gets a child
 * (`logger.child({ component: 'dsht' })`) so every line says where it came from.
 */
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger } from 'pino';

export interface LoggerOptions {
  level?: string;
  /** Where lines go (default: stdout). Tests pass a stream to capture them. */
  destination?: DestinationStream;
  /** Fields bound to every line (e.g. the node's id). */
  base?: Record<string, unknown>;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const opts = {
    level: options.level ?? 'info',
    base: { pid: process.pid, ...options.base },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return options.destination ? pino(opts, options.destination) : pino(opts);
}

/** The child logger of one component. */
export function componentLogger(root: Logger, component: string): Logger {
  return root.child({ component });
}
