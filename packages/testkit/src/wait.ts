/**
 * Waiting on the outside world in tests: an event in another socket or process that a test cannot
 * subscribe to (a FIN reaching a server, a file committed by another process). Never for a
 * duration — time the code under test measures goes through an injected `Clock`.
 */

export interface WaitForOptions {
  /** What is awaited, for the error (default 'condition'). */
  what?: string;
  /** Real time to give up after (default 10 s). */
  limitMs?: number;
  /** Real time between polls; 0 (default) polls again on the next macrotask. */
  everyMs?: number;
}

/** What a truthy value of type `T` can be (`T` without `false`, `0`, `''`, `null`, `undefined`). */
export type Truthy<T> = Exclude<T, false | 0 | 0n | '' | null | undefined>;

/** Poll `fn` until it returns something truthy, and return that; throws after `limitMs`. */
export async function waitFor<T>(
  fn: () => T | Promise<T>,
  options: WaitForOptions = {},
): Promise<Truthy<T>> {
  const { what = 'condition', limitMs = 10_000, everyMs = 0 } = options;
  const deadline = Date.now() + limitMs;
  for (;;) {
    const v = await fn();
    if (v) return v as Truthy<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => (everyMs > 0 ? setTimeout(r, everyMs) : setImmediate(r)));
  }
}
