/**
 * A prom-client Histogram over a fixed list of label sets, observed by the index of the label set:
 * the counts live in typed arrays, so an observation is a bucket search and two additions — no
 * label object, no label hash string, no closure. It exports exactly what a prom-client Histogram
 * with the same observations exports (`_bucket` cumulative per `le` and `+Inf`, `_sum`, `_count`,
 * only for label sets observed at least once; test/metrics/indexed-histogram.spec.ts compares the
 * two), through the same registry.
 *
 * For the proxy's response times, observed twice on every response, the fast path's hits
 * included: a prom-client `observe` builds its label hash and a few objects per call, which cost
 * about a microsecond each in a micro-benchmark allocating responses as a hit load does (a hit
 * takes some 30 µs of CPU: bench:http); this costs a few nanoseconds.
 */
import { Histogram } from 'prom-client';
import type { Registry } from 'prom-client';

export interface IndexedHistogramConfiguration<T extends string> {
  name: string;
  help: string;
  /** Upper bounds, ascending (`+Inf` is implied). */
  buckets: readonly number[];
  labelNames: readonly T[];
  /** The label sets, observed by index (`observeAt(i, v)` for `series[i]`). */
  series: ReadonlyArray<Readonly<Record<T, string>>>;
  registers: Registry[];
}

/** One sample, as prom-client's registry formats it (`labels` and `sharedLabels` merged). */
interface Sample {
  labels: Record<string, string | number>;
  sharedLabels: Record<string, string>;
  value: number;
  metricName: string;
  /** prom-client's buckets carry `exemplar: null` when exemplars are off. */
  exemplar?: null;
}

/** What prom-client's registry reads of a histogram (`getForPromString`, then `get` from it). */
interface Exported {
  name: string;
  help: string;
  type: 'histogram';
  aggregator: 'sum';
  values: Sample[];
}

export class IndexedHistogram<T extends string> extends Histogram<T> {
  readonly #name: string;
  readonly #help: string;
  readonly #bounds: Float64Array;
  readonly #series: ReadonlyArray<Readonly<Record<T, string>>>;
  /** Per series, the count of each bucket (not cumulative), then the count above every bound. */
  readonly #counts: Float64Array;
  readonly #sums: Float64Array;

  constructor(config: IndexedHistogramConfiguration<T>) {
    super({
      name: config.name,
      help: config.help,
      labelNames: config.labelNames,
      buckets: [...config.buckets],
      registers: config.registers,
    });
    this.#name = config.name;
    this.#help = config.help;
    this.#bounds = Float64Array.from(config.buckets);
    this.#series = config.series;
    this.#counts = new Float64Array(config.series.length * (config.buckets.length + 1));
    this.#sums = new Float64Array(config.series.length);
  }

  /** Observe `value` for the label set `series[index]`. */
  observeAt(index: number, value: number): void {
    const b = this.#bounds;
    let i = 0;
    while (i < b.length && value > b[i]!) i++;
    this.#counts[index * (b.length + 1) + i]!++;
    this.#sums[index]! += value;
  }

  override reset(): void {
    super.reset();
    // prom-client's constructor calls reset() before this class's fields exist.
    if (!(#counts in this)) return;
    this.#counts.fill(0);
    this.#sums.fill(0);
  }

  /**
   * What the registry formats (prom-client's Registry prefers it to `get`, and Histogram's `get`
   * is built on it).
   */
  getForPromString(): Promise<Exported> {
    const values: Sample[] = [];
    const n = this.#bounds.length;
    const bucket = `${this.#name}_bucket`;
    const sample = (labels: Sample['labels'], value: number, metricName: string): Sample => ({
      labels,
      sharedLabels: {},
      value,
      metricName,
      ...(metricName === bucket ? { exemplar: null } : {}),
    });
    this.#series.forEach((labels, s) => {
      const row = s * (n + 1);
      let count = 0;
      for (let i = 0; i <= n; i++) count += this.#counts[row + i]!;
      if (count === 0) return;
      let acc = 0;
      for (let i = 0; i < n; i++) {
        acc += this.#counts[row + i]!;
        values.push(sample({ le: this.#bounds[i]!, ...labels }, acc, bucket));
      }
      values.push(
        sample({ le: '+Inf', ...labels }, count, bucket),
        sample({ ...labels }, this.#sums[s]!, `${this.#name}_sum`),
        sample({ ...labels }, count, `${this.#name}_count`),
      );
    });
    return Promise.resolve({
      name: this.#name,
      help: this.#help,
      type: 'histogram',
      aggregator: 'sum',
      values,
    });
  }
}
