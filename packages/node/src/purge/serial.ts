/**
 * Changes to the purge log run one at a time — a purge taken here, one a member sent, a pulled
 * page — so an entry's id is checked and recorded atomically, and a store scan and its log record
 * are not interleaved with another's.
 */
export class Serial {
  #tail: Promise<unknown> = Promise.resolve();

  /** Run `fn` after every change queued before it (whether they failed or not). */
  run<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#tail.then(fn, fn);
    this.#tail = run.catch(() => undefined);
    return run;
  }

  /** Resolves once the changes queued so far are done. */
  idle(): Promise<unknown> {
    return this.#tail;
  }
}
