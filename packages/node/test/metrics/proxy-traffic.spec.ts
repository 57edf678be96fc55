import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { FairShare } from '@coral/httpprx';
import { registerProxyTraffic } from '../../src/metrics/proxy-traffic.js';

describe('per-domain proxy traffic metrics', () => {
  it('reports the top domains and (other), the caps and the events', async () => {
    const origin = new FairShare({ clock: new ManualClock(0) }, { bytesPerSec: 0 });
    const served = new FairShare({ clock: new ManualClock(0) }, { bytesPerSec: 1000 });
    for (let i = 0; i < 30; i++) void origin.take(`d${i}.example`, 100 + i); // no rate: no wait
    await served.take('a.example', 7);
    const traffic = (top = 20) => ({
      origin: { capBytesPerSec: 0, waiting: 0, domains: origin.stats(top) },
      served: { capBytesPerSec: 1000, waiting: 0, domains: served.stats(top) },
    });
    const registry = new Registry();
    const events = registerProxyTraffic(registry, () => ({ traffic }), 'coral_');
    events.optOut?.('redirected');
    events.commitRefused?.();
    const text = await registry.metrics();
    const originLines = text
      .split('\n')
      .filter((l) => l.startsWith('coral_origin_domain_bytes_total{'));
    // 20 named domains (the largest) and (other) with the 10 smallest: 100..109.
    expect(originLines).toHaveLength(21);
    expect(text).toContain('coral_origin_domain_bytes_total{domain="d29.example"} 129');
    expect(text).toContain(
      `coral_origin_domain_bytes_total{domain="(other)"} ${Array.from({ length: 10 }, (_, i) => 100 + i).reduce((a, b) => a + b)}`,
    );
    expect(text).toContain('coral_served_domain_bytes_total{domain="a.example"} 7');
    expect(text).toContain('coral_bandwidth_cap_bytes_per_second{direction="served"} 1000');
    expect(text).toContain('coral_origin_opt_out_total{event="redirected"} 1');
    expect(text).toContain('coral_commits_refused_total 1');
  });

  it('a proxy built again on the same registry rebinds the metrics', async () => {
    const registry = new Registry();
    const view = (bytes: number) => ({
      traffic: () => ({
        origin: {
          capBytesPerSec: 0,
          waiting: 0,
          domains: [{ domain: 'x.example', bytes, throttledMs: 0 }],
        },
        served: { capBytesPerSec: 0, waiting: 0, domains: [] },
      }),
    });
    registerProxyTraffic(registry, () => view(1));
    const events = registerProxyTraffic(registry, () => view(2));
    events.commitRefused?.();
    const text = await registry.metrics();
    expect(text).toContain('coral_origin_domain_bytes_total{domain="x.example"} 2');
    expect(text).toContain('coral_commits_refused_total 1');
  });
});
