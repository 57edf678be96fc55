import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { IndexedHistogram } from '../../src/metrics/indexed-histogram.js';

const BUCKETS = [0.001, 0.01, 0.1, 1];
const SERIES = [
  { result: 'hit', protocol: 'http' },
  { result: 'hit', protocol: 'https' },
  { result: 'miss', protocol: 'http' },
] as const;

/** The same observations through prom-client's Histogram and through IndexedHistogram. */
function both() {
  const reference = new Registry();
  const indexed = new Registry();
  const config = { name: 't_seconds', help: 'test', labelNames: ['result', 'protocol'] as const };
  const ref = new Histogram({
    ...config,
    labelNames: [...config.labelNames],
    buckets: BUCKETS,
    registers: [reference],
  });
  const idx = new IndexedHistogram({
    ...config,
    buckets: BUCKETS,
    series: SERIES,
    registers: [indexed],
  });
  const observe = (s: number, v: number) => {
    ref.observe(SERIES[s]!, v);
    idx.observeAt(s, v);
  };
  return { reference, indexed, ref, idx, observe };
}

describe('IndexedHistogram', () => {
  it('exports what prom-client’s Histogram exports for the same observations', async () => {
    const { reference, indexed, observe } = both();
    // Bounds themselves (le is inclusive), between them, above the last one, zero; series 1 never.
    for (const v of [0, 0.001, 0.0011, 0.01, 0.5, 1, 1.5, 30]) observe(0, v);
    for (const v of [0.002, 0.003]) observe(2, v);
    const text = await indexed.metrics();
    expect(text).toBe(await reference.metrics());
    expect(text).toContain('t_seconds_bucket{le="0.001",result="hit",protocol="http"} 2');
    expect(text).toContain('t_seconds_bucket{le="+Inf",result="hit",protocol="http"} 8');
    expect(text).not.toContain('protocol="https"');
    expect(await indexed.getMetricsAsJSON()).toEqual(await reference.getMetricsAsJSON());
  });

  it('resets with its registry', async () => {
    const { reference, indexed, observe } = both();
    observe(1, 0.2);
    reference.resetMetrics();
    indexed.resetMetrics();
    expect(await indexed.metrics()).toBe(await reference.metrics());
    expect(await indexed.metrics()).not.toContain('t_seconds_count');
    observe(1, 0.02);
    expect(await indexed.metrics()).toBe(await reference.metrics());
  });
});
