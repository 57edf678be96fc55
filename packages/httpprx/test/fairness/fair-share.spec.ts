/**
 * The fair share as a pure component on a ManualClock: flows are async loops that take a chunk at
 * a time; time moves only when the test advances it, so every share below is exact arithmetic of
 * the scheduler, not a measurement.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock, flushMicrotasks } from '@coral/testkit';
import { FairShare, OTHER_DOMAIN } from '../../src/fairness/fair-share.js';
import { domainOf } from '../../src/fairness/domain.js';

const KiB = 1024;
const CAP = 1024 * KiB; // bytes per second

/** A flow: takes `chunk` bytes at a time, as long as `more()` says so; `got` counts grants. */
function flow(
  share: FairShare,
  domain: string,
  chunk: number,
  more: () => boolean = () => true,
): { got: number; stop: () => void } {
  const f = { got: 0, stopped: false, stop: () => (f.stopped = true) };
  void (async () => {
    while (!f.stopped && more()) {
      const w = share.take(domain, chunk);
      if (w) await w;
      f.got += chunk;
    }
  })();
  return f;
}

async function run(clock: ManualClock, ms: number, step = 10): Promise<void> {
  for (let t = 0; t < ms; t += step) await clock.advance(step);
  await flushMicrotasks();
}

describe('FairShare', () => {
  it('unlimited: never waits, counts per domain', () => {
    const share = new FairShare({ clock: new ManualClock(0) }, { bytesPerSec: 0 });
    expect(share.take('a.example', 10)).toBeUndefined();
    expect(share.take('a.example', 5)).toBeUndefined();
    expect(share.domain('a.example')).toEqual({ domain: 'a.example', bytes: 15, throttledMs: 0 });
  });

  it('a greedy domain with eight flows and a domain with one split the cap evenly', async () => {
    const clock = new ManualClock(0);
    const share = new FairShare({ clock }, { bytesPerSec: CAP });
    const greedy = Array.from({ length: 8 }, () => flow(share, 'greedy.example', 16 * KiB));
    const lone = flow(share, 'lone.example', 16 * KiB);
    await run(clock, 1_000); // past the initial burst
    const g0 = greedy.reduce((n, f) => n + f.got, 0);
    const l0 = lone.got;
    await run(clock, 10_000);
    const g = greedy.reduce((n, f) => n + f.got, 0) - g0;
    const l = lone.got - l0;
    // 10 s at the cap, half each (to within one quantum per domain).
    expect(g + l).toBeGreaterThanOrEqual(10 * CAP - 64 * KiB);
    expect(g + l).toBeLessThanOrEqual(10 * CAP + 128 * KiB);
    expect(Math.abs(l - g)).toBeLessThanOrEqual(128 * KiB);
    expect(share.domain('lone.example').throttledMs).toBeGreaterThan(0);
    expect(share.queued).toBe(9); // every flow waits: nothing moves without the clock
    for (const f of greedy) f.stop();
    lone.stop();
  });

  it('alone, a domain gets the whole cap', async () => {
    const clock = new ManualClock(0);
    const share = new FairShare({ clock }, { bytesPerSec: CAP });
    const lone = flow(share, 'lone.example', 16 * KiB);
    await run(clock, 1_000);
    const l0 = lone.got;
    await run(clock, 5_000);
    expect(lone.got - l0).toBeGreaterThanOrEqual(5 * CAP - 32 * KiB);
    expect(lone.got - l0).toBeLessThanOrEqual(5 * CAP + 32 * KiB);
    lone.stop();
  });

  it('max-min: a domain wanting less than its share gets what it wants, the other the rest', async () => {
    const clock = new ManualClock(0);
    const share = new FairShare({ clock }, { bytesPerSec: CAP });
    const greedy = flow(share, 'greedy.example', 16 * KiB);
    // 16 KiB every 125 ms = 128 KiB/s: an eighth of the cap (its fair share would be a half).
    const small = { got: 0, stopped: false };
    void (async () => {
      while (!small.stopped) {
        const w = share.take('small.example', 16 * KiB);
        if (w) await w;
        small.got += 16 * KiB;
        await new Promise<void>((r) => clock.setTimeout(r, 125));
      }
    })();
    await run(clock, 1_000);
    const g0 = greedy.got;
    const s0 = small.got;
    await run(clock, 8_000);
    const smallGot = small.got - s0;
    const greedyGot = greedy.got - g0;
    expect(smallGot).toBeGreaterThanOrEqual(8 * 128 * KiB - 16 * KiB);
    expect(smallGot).toBeLessThanOrEqual(8 * 128 * KiB + 16 * KiB);
    // The greedy domain takes the rest of the cap.
    expect(greedyGot + smallGot).toBeGreaterThanOrEqual(8 * CAP - 64 * KiB);
    expect(greedyGot + smallGot).toBeLessThanOrEqual(8 * CAP + 64 * KiB);
    greedy.stop();
    small.stopped = true;
  });

  it('chunks larger than the bucket still go, one bucket at a time', async () => {
    const clock = new ManualClock(0);
    const share = new FairShare({ clock }, { bytesPerSec: CAP, burstBytes: 64 * KiB });
    const big = flow(share, 'big.example', 1024 * KiB);
    await run(clock, 3_000);
    expect(big.got).toBeGreaterThanOrEqual(2 * 1024 * KiB);
    big.stop();
  });

  it('statistics: top N by bytes, the rest and forgotten domains in (other)', () => {
    const share = new FairShare({ clock: new ManualClock(0) }, { bytesPerSec: 0, maxDomains: 3 });
    void share.take('a.example', 100); // bytesPerSec 0: counted, never waits
    void share.take('b.example', 50);
    void share.take('c.example', 10);
    void share.take('d.example', 20); // c (smallest) is folded into (other)
    expect(share.stats(2)).toEqual([
      { domain: 'a.example', bytes: 100, throttledMs: 0 },
      { domain: 'b.example', bytes: 50, throttledMs: 0 },
      { domain: OTHER_DOMAIN, bytes: 30, throttledMs: 0 },
    ]);
  });

  it('domains of URLs', () => {
    expect(domainOf('http://www.example.com:8080/a')).toBe('www.example.com');
    expect(domainOf('https://example.com/')).toBe('example.com');
    expect(domainOf('http://[::1]:81/x')).toBe('[::1]');
    expect(domainOf('http://example.com')).toBe('example.com');
  });
});
