/**
 * A server-side ring of metric samples: every `intervalMs` the counters are read and kept, the
 * oldest sample giving way once `capacity` are held. A dashboard opened late still draws the last
 * minutes, and a page that polls asks only for the samples it has not seen (`since`).
 *
 * Samples hold cumulative counter values (as Prometheus does); rates are the differences between
 * neighbouring samples divided by their time apart, which the page computes. The clock is
 * injected, so tests take samples by advancing a ManualClock.
 */
import type { Clock, TimerHandle } from '@coral/runtime';

/** Counter values by series name (`requests.hit`, `bytes.origin`, ...). */
export type Readings = Record<string, number>;

/** Samples in columns (the shape uPlot draws): `t[i]` is when `series[name][i]` was read. */
export interface HistoryColumns {
  /** Sample times (clock ms). */
  t: number[];
  /** One column per series; `null` where a series did not exist yet at that sample. */
  series: Record<string, (number | null)[]>;
}

export interface MetricsHistoryComponents {
  clock: Clock;
  /** Reads every counter once (CoralMetrics.read). */
  read: () => Promise<Readings> | Readings;
  /** Told when a read fails (the sample is skipped; sampling goes on). */
  onError?: (err: unknown) => void;
}

export interface MetricsHistoryOptions {
  /** Time between samples (default {@link HISTORY_INTERVAL_MS}). */
  intervalMs?: number;
  /** Samples kept (default {@link HISTORY_CAPACITY}: 15 minutes at the default interval). */
  capacity?: number;
}

export const HISTORY_INTERVAL_MS = 2_000;
export const HISTORY_CAPACITY = 450;

interface Sample {
  t: number;
  values: Readings;
}

export class MetricsHistory {
  readonly intervalMs: number;
  readonly capacity: number;
  readonly #clock: Clock;
  readonly #read: MetricsHistoryComponents['read'];
  readonly #onError: MetricsHistoryComponents['onError'];
  /** Ring storage: `#ring[(#start + i) % capacity]` is the i-th oldest sample. */
  readonly #ring: Sample[] = [];
  #start = 0;
  #timer: TimerHandle | undefined;
  #running = false;
  #reading: Promise<void> | undefined;

  constructor(components: MetricsHistoryComponents, options: MetricsHistoryOptions = {}) {
    this.#clock = components.clock;
    this.#read = components.read;
    this.#onError = components.onError;
    this.intervalMs = options.intervalMs ?? HISTORY_INTERVAL_MS;
    this.capacity = options.capacity ?? HISTORY_CAPACITY;
    if (!(this.intervalMs > 0)) throw new RangeError('intervalMs must be positive');
    if (!Number.isInteger(this.capacity) || this.capacity < 2) {
      throw new RangeError('capacity must be an integer of at least 2');
    }
  }

  /** Take a sample now, then one every `intervalMs` until {@link stop}. */
  start(): Promise<void> {
    if (this.#running) return this.settled();
    this.#running = true;
    return this.#tick();
  }

  stop(): void {
    this.#running = false;
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  /** Read the counters now and keep the sample (also what the timer does). */
  sample(): Promise<void> {
    // One read at a time: a slow read is not stacked on by the next tick.
    if (this.#reading) return this.#reading;
    const reading = this.#readOnce().finally(() => {
      if (this.#reading === reading) this.#reading = undefined;
    });
    this.#reading = reading;
    return reading;
  }

  async #readOnce(): Promise<void> {
    try {
      const t = this.#clock.now();
      const values = await this.#read();
      this.#push({ t, values: { ...values } });
    } catch (err) {
      this.#onError?.(err);
    }
  }

  /** Number of samples held. */
  get size(): number {
    return this.#ring.length;
  }

  /** Samples taken after `since` (clock ms), oldest first, in columns; all of them without `since`. */
  columns(since = -Infinity): HistoryColumns {
    const samples = this.#ordered().filter((s) => s.t > since);
    const names = new Set<string>();
    for (const s of samples) for (const k of Object.keys(s.values)) names.add(k);
    const series: HistoryColumns['series'] = {};
    for (const name of [...names].sort()) {
      series[name] = samples.map((s) => s.values[name] ?? null);
    }
    return { t: samples.map((s) => s.t), series };
  }

  /** Resolves once no sample is being read (tests, after advancing their clock). */
  settled(): Promise<void> {
    return this.#reading ?? Promise.resolve();
  }

  #tick(): Promise<void> {
    // The next tick is due one interval after this one, however long this read takes.
    this.#timer = this.#clock.setTimeout(() => void this.#tick(), this.intervalMs);
    return this.sample();
  }

  #push(sample: Sample): void {
    if (this.#ring.length < this.capacity) {
      this.#ring.push(sample);
      return;
    }
    this.#ring[this.#start] = sample;
    this.#start = (this.#start + 1) % this.capacity;
  }

  #ordered(): Sample[] {
    return [...this.#ring.slice(this.#start), ...this.#ring.slice(0, this.#start)];
  }
}
