import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SeededRandom } from '@coral/runtime';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ACCESSLOG_ERR_OPTIONS, AccessLog, LiveHub, openSink } from '../src/index.js';
import type { AccessRecord } from '../src/index.js';
import { record } from './records.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'coral-accesslog-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const read = (path: string) => readFileSync(path, 'utf8').split('\n').filter(Boolean);

/** Request i of a mix: every 10th a 503, every 7th aborted, the rest 200 hits. */
function mix(i: number): AccessRecord {
  return record({
    requestId: `r-${i}`,
    status: i % 10 === 0 ? 503 : 200,
    aborted: i % 7 === 0,
  });
}

describe('AccessLog', () => {
  it('writes every record in the chosen format, and nothing when off', async () => {
    for (const format of ['json', 'combined'] as const) {
      const path = join(dir, `${format}.log`);
      const log = new AccessLog(
        { sink: await openSink({ file: path }), random: new SeededRandom(1) },
        { format },
      );
      for (let i = 0; i < 50; i++) log.log(mix(i));
      await log.close();
      const lines = read(path);
      expect(lines).toHaveLength(50);
      if (format === 'json') expect(JSON.parse(lines[3]!)).toMatchObject({ requestId: 'r-3' });
      else
        expect(lines[0]).toMatch(/^203\.0\.113\.7 - - \[.*\] "GET \/a\.jpg\?x=1 HTTP\/1\.1" 503 /);
    }
    const off = new AccessLog({ sink: await openSink('off'), random: new SeededRandom(1) });
    off.log(mix(1));
    expect(off.stats).toMatchObject({ records: 1, sampledOut: 0, sink: { lines: 0 } });
  });

  it('samples with the injected Random, and always keeps 5xx and aborted requests', async () => {
    const path = join(dir, 'sampled.log');
    const seed = 29;
    const log = new AccessLog(
      { sink: await openSink({ file: path }), random: new SeededRandom(seed) },
      { sample: 0.25 },
    );
    const n = 2000;
    for (let i = 0; i < n; i++) log.log(mix(i));
    await log.close();
    // The same draws, replayed: one per request that is neither a 5xx nor aborted.
    const replay = new SeededRandom(seed);
    const expected: string[] = [];
    for (let i = 0; i < n; i++) {
      const r = mix(i);
      if (r.status >= 500 || r.aborted || replay.next() < 0.25) expected.push(r.requestId);
    }
    const got = read(path).map((l) => (JSON.parse(l) as { requestId: string }).requestId);
    expect(got).toEqual(expected);
    const always = [...Array(n).keys()].filter((i) => i % 10 === 0 || i % 7 === 0);
    for (const i of always) expect(got).toContain(`r-${i}`);
    expect(got.length).toBeLessThan(n);
    expect(log.stats).toMatchObject({ records: n, sampledOut: n - got.length });
  });

  it('sample 0 keeps only 5xx and aborted requests; sample 1 draws nothing', async () => {
    const path = join(dir, 'zero.log');
    const log = new AccessLog(
      { sink: await openSink({ file: path }), random: new SeededRandom(3) },
      { sample: 0 },
    );
    for (let i = 0; i < 100; i++) log.log(mix(i));
    await log.close();
    const got = read(path).map((l) => JSON.parse(l) as { status: number; aborted: boolean });
    expect(got.length).toBe(
      [...Array(100).keys()].filter((i) => i % 10 === 0 || i % 7 === 0).length,
    );
    for (const r of got) expect(r.status >= 500 || r.aborted).toBe(true);

    const never = {
      next: () => {
        throw new Error('drawn');
      },
      int: () => 0,
      bytes: (b: Uint8Array) => b,
    };
    const all = new AccessLog({ sink: await openSink('off'), random: never }, { sample: 1 });
    for (let i = 0; i < 10; i++) all.log(mix(i));
    expect(all.stats.sampledOut).toBe(0);
  });

  it('hands every record to the live stream, sampled out or not', async () => {
    const hub = new LiveHub();
    const sub = hub.subscribe({});
    const log = new AccessLog(
      { sink: await openSink('off'), random: new SeededRandom(5), hub },
      { sample: 0, format: 'combined' },
    );
    log.log(mix(1));
    log.log(mix(10));
    const lines = await sub.next();
    expect(lines?.map((l) => (JSON.parse(l) as { requestId: string }).requestId)).toEqual([
      'r-1',
      'r-10',
    ]);
    await log.close();
    expect(sub.ended).toBe('hub-closed');
  });

  it('refuses a bad format or sample rate with ACCESSLOG_ERR_OPTIONS', async () => {
    const sink = await openSink('off');
    const random = new SeededRandom(1);
    for (const opts of [{ sample: -0.1 }, { sample: 1.5 }, { sample: NaN }, { format: 'clf' }]) {
      expect(() => new AccessLog({ sink, random }, opts as never), JSON.stringify(opts)).toThrow(
        expect.objectContaining({ code: ACCESSLOG_ERR_OPTIONS }),
      );
    }
  });
});
