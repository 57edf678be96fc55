/** The purge log over a real LevelDB: idempotent ids, sequence pages, bounds, floor, cursors, persistence. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PurgeLog, type PurgeEntry } from '../../src/purge/purge-log.js';
import { tmpDir } from '../helpers.js';

const entry = (n: number, at: number): PurgeEntry => ({
  id: n.toString(16).padStart(32, '0'),
  at,
  kind: 'tag',
  value: `t${n}`,
  origin: 'ab'.repeat(20),
});

describe('PurgeLog', () => {
  it('records each id once under the next sequence, pages by sequence, and persists', async () => {
    const dir = join(tmpDir('purge-log'), 'purge');
    const log = new PurgeLog({ dir });
    await log.open(1_000);
    expect(log.created).toBe(1_000);
    expect(log.hasCursors).toBe(false);
    // Sequence is the order of recording, not the entries' times (other nodes' clocks).
    for (const [n, at] of [
      [1, 50],
      [2, 10],
      [3, 40],
      [4, 30],
      [5, 20],
    ] as const) {
      expect(await log.append(entry(n, at), 2_000)).toBe(true);
    }
    expect(await log.append(entry(3, 9_999), 2_000)).toBe(false); // same id: nothing changes
    expect(log.size).toBe(5);
    expect([log.firstSeq, log.lastSeq]).toEqual([1, 5]);
    const first = await log.after(1, 2);
    expect(first.entries.map((e) => [e.seq, e.value])).toEqual([
      [2, 't2'],
      [3, 't3'],
    ]);
    expect(first.more).toBe(true);
    const second = await log.after(3, 2);
    expect(second.entries.map((e) => e.value)).toEqual(['t4', 't5']);
    expect(second.more).toBe(false);
    expect((await log.recent(2)).map((e) => e.value)).toEqual(['t5', 't4']);
    await log.setCursor('cd'.repeat(20), { log: 'feed', seq: 7 });
    const id = log.id;
    await log.close();

    const again = new PurgeLog({ dir });
    await again.open(50_000);
    expect([again.created, again.id, again.size, again.lastSeq]).toEqual([1_000, id, 5, 5]);
    expect(again.cursor('cd'.repeat(20))).toEqual({ log: 'feed', seq: 7 });
    expect(again.hasCursors).toBe(true);
    expect(await again.has(entry(4, 0).id)).toBe(true);
    expect(await again.append(entry(6, 0), 50_000)).toBe(true);
    expect(again.lastSeq).toBe(6);
    await again.close();
  });

  it('drops the oldest by count and by age, and its floor is after what it dropped', async () => {
    const log = new PurgeLog({
      dir: join(tmpDir('purge-log'), 'p'),
      maxEntries: 3,
      retentionMs: 10_000,
    });
    await log.open(0);
    expect(log.floor).toBe(0);
    for (let i = 1; i <= 4; i++) await log.append(entry(i, i * 100), 5_000 + i);
    expect(log.size).toBe(3);
    expect(await log.has(entry(1, 0).id)).toBe(false);
    expect(log.firstSeq).toBe(2);
    expect(log.floor).toBe(5_002); // after when it recorded the dropped entry
    // Age: at 15,003 everything recorded before 5,003 is beyond the retention.
    expect(await log.prune(15_003)).toBe(1);
    expect((await log.after(0, 10)).entries.map((e) => e.value)).toEqual(['t3', 't4']);
    expect(log.firstSeq).toBe(3);
    expect(log.floor).toBe(5_003);
    await log.close();
  });
});
