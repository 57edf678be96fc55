/**
 * Giving the C heap's free pages back to the system once the node is quiet.
 *
 * glibc's malloc returns freed memory to the system only from the top of its heaps. Space freed
 * in the middle stays resident: the socket reads, LevelDB buffers and Buffers of a busy period
 * leave holes of tens to hundreds of KiB between the allocations that live on. A node that filled
 * its cache with 100,000 objects held about 23 MB of such free space at rest (bench:memory,
 * issue 12), which nothing in Node.js hands back. `malloc_trim(0)` does: it releases the whole
 * pages inside free chunks of every arena (madvise), as jemalloc and tcmalloc do on their own
 * after a decay time.
 *
 * A trim walks every free chunk while it holds the arena locks: a few ms on a quiet node, tens
 * to hundreds of ms on a loaded one, with the event loop stopped all that time. So it runs only
 * once the node has been quiet for a whole `intervalMs` up to now (each tenth of it with the
 * event loop busy less than `idleUtilization`: load that resumes in the last second puts it
 * off), and only after a busy spell or once the RSS grew: the moment V8's memory reducer also
 * chooses. Under steady load nothing is trimmed, and the load itself reuses the free space.
 *
 * glibc only: the function is called through koffi (prebuilt binaries for Linux, no compiler at
 * install). On another C library (musl, macOS) the node logs that trimming is unavailable.
 */
import type { Logger } from 'pino';
import type { Clock, TimerHandle } from '@coral/runtime';
import { systemClock } from '@coral/runtime';
import { performance } from 'node:perf_hooks';

/** Release free heap pages to the system; true when some were released. */
export type MallocTrim = () => boolean;

/** An interval in which the event loop was busy less than this fraction is quiet. */
export const HEAP_TRIM_IDLE_UTILIZATION = 0.1;
/** RSS growth since the last trim that calls for another one, even with no busy interval. */
export const HEAP_TRIM_RSS_GROWTH_BYTES = 4 * 2 ** 20;

/**
 * glibc's `malloc_trim(0)` from `library` (default the C library, `libc.so.6`), or why it cannot
 * be had here. Loading koffi costs about 4 MB of RSS, so call this only when trimming is on.
 */
export async function loadMallocTrim(
  library = 'libc.so.6',
): Promise<{ trim: MallocTrim } | { unavailable: string }> {
  if (process.platform !== 'linux') return { unavailable: `no glibc on ${process.platform}` };
  try {
    const koffi = (await import('koffi')).default;
    const fn = koffi.load(library).func('int malloc_trim(size_t pad)') as (pad: number) => number;
    return { trim: () => fn(0) === 1 };
  } catch (err) {
    return { unavailable: `malloc_trim not found in ${library}: ${(err as Error).message}` };
  }
}

/** At most one log line per this many ms about failing checks (each one is counted). */
export const HEAP_TRIM_ERROR_LOG_INTERVAL_MS = 60_000;

/** Checks per `intervalMs`: each looks at the event loop since the previous one. */
const CHECKS_PER_INTERVAL = 10;

export interface HeapTrimmerOptions {
  /** Quiet time before a trim, ms (checked every tenth of it). */
  intervalMs: number;
  trim: MallocTrim;
  clock?: Clock;
  /** Fraction of the time since the previous call that the event loop was busy (0-1). */
  utilization?: () => number;
  /** Resident set size, bytes. */
  rss?: () => number;
  idleUtilization?: number;
  /** After each trim: RSS released (bytes, 0 if none) and the time the trim took (ms). */
  onTrim?: (releasedBytes: number, tookMs: number) => void;
  /**
   * A check failed — `process.memoryUsage.rss()` reads /proc and throws EMFILE when the process
   * is out of descriptors, or ENOMEM — and the timer goes on: the error, never an exception.
   */
  onError?: (err: unknown) => void;
}

/** The event loop's utilization since the previous call (Node's ELU), starting now. */
function eventLoopUtilization(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const u = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    return u;
  };
}

export class HeapTrimmer {
  readonly #o: Required<Omit<HeapTrimmerOptions, 'onTrim' | 'onError'>> &
    Pick<HeapTrimmerOptions, 'onTrim' | 'onError'>;
  #timer: TimerHandle | undefined;
  /** Was the node busy (or did it just start) since the last trim? */
  #dirty = true;
  /** Consecutive quiet checks up to now. */
  #quiet = 0;
  #rssAfterTrim = 0;

  constructor(options: HeapTrimmerOptions) {
    if (!(options.intervalMs > 0)) throw new RangeError('HeapTrimmer intervalMs must be > 0');
    this.#o = {
      clock: systemClock,
      utilization: eventLoopUtilization(),
      rss: () => process.memoryUsage.rss(),
      idleUtilization: HEAP_TRIM_IDLE_UTILIZATION,
      ...options,
    };
  }

  start(): void {
    this.#timer ??= this.#schedule();
  }

  stop(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  #schedule(): TimerHandle {
    const period = this.#o.intervalMs / CHECKS_PER_INTERVAL;
    return this.#o.clock.setTimeout(() => this.#check(), period);
  }

  #check(): void {
    const o = this.#o;
    try {
      if (!(o.utilization() < o.idleUtilization)) {
        this.#dirty = true;
        this.#quiet = 0;
      } else if (
        ++this.#quiet >= CHECKS_PER_INTERVAL &&
        (this.#dirty || o.rss() > this.#rssAfterTrim + HEAP_TRIM_RSS_GROWTH_BYTES)
      ) {
        this.#trimNow();
      }
    } catch (err) {
      // Out of descriptors or memory: this check is lost, the next one comes as planned.
      this.#quiet = 0;
      o.onError?.(err);
    }
    if (this.#timer) this.#timer = this.#schedule();
  }

  #trimNow(): void {
    const o = this.#o;
    const before = o.rss();
    const t0 = o.clock.now();
    o.trim();
    const took = o.clock.now() - t0;
    this.#rssAfterTrim = o.rss();
    const released = Math.max(0, before - this.#rssAfterTrim);
    this.#dirty = false;
    o.onTrim?.(released, took);
  }
}

/**
 * A node's heap trim (CoralNode): started every `intervalMs` (0: none), its trims logged at
 * `debug` and passed to `onTrim`; where malloc_trim is unavailable, that is logged at `info`.
 */
export async function startHeapTrim(o: {
  intervalMs: number;
  clock?: Clock;
  logger: Pick<Logger, 'info' | 'debug' | 'warn'>;
  onTrim: (releasedBytes: number, tookMs: number) => void;
  /** A check failed and was skipped (its error's code: EMFILE, ENOMEM...). */
  onError?: (code: string) => void;
}): Promise<HeapTrimmer | undefined> {
  if (o.intervalMs === 0) return undefined;
  const loaded = await loadMallocTrim();
  if ('unavailable' in loaded) {
    o.logger.info({ reason: loaded.unavailable }, 'heap trim unavailable');
    return undefined;
  }
  const clock = o.clock ?? systemClock;
  let lastWarn = -Infinity;
  const trimmer = new HeapTrimmer({
    intervalMs: o.intervalMs,
    ...(o.clock ? { clock: o.clock } : {}),
    trim: loaded.trim,
    onTrim: (released, tookMs) => {
      o.onTrim(released, tookMs);
      o.logger.debug({ releasedBytes: released, tookMs }, 'heap trimmed');
    },
    onError: (err) => {
      const code = (err as { code?: string }).code ?? 'UNKNOWN';
      o.onError?.(code);
      // A check a second while descriptors are exhausted: one line a minute says it.
      const now = clock.now();
      if (now - lastWarn < HEAP_TRIM_ERROR_LOG_INTERVAL_MS) return;
      lastWarn = now;
      o.logger.warn({ err, code }, 'heap trim check failed; the trimmer goes on');
    },
  });
  trimmer.start();
  o.logger.debug({ intervalMs: o.intervalMs }, 'heap trim on');
  return trimmer;
}
