/**
 * One named step of a node's start (compose/start/sequence.ts): its failure becomes a
 * {@link StartError} naming the step, unless the error already says what went wrong.
 */
import { CoralNodeError, StartError } from '../../errors.js';

export async function step<T>(service: string, fn: () => Promise<T> | T): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    // Errors that already say what went wrong (a data directory in use, ...) keep their own code.
    throw err instanceof CoralNodeError ? err : new StartError(service, err);
  }
}
