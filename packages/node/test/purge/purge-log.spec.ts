/** The purge log over a real LevelDB: idempotent ids, pages, bounds, completeness, persistence. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PurgeLog, cursorOf, type PurgeEntry } from '../../src/purge/purge-log.js';
import { tmpDir } from '../helpers.js';

const entry = (n: number, at: number): PurgeEntry => ({
  id: n.toString(16).padStart(32, '0'),
  at,
  kind: 'tag',
  value: `t${n}`,
  origin: 'ab'.repeat(20),
});

describe('PurgeLog', () => {
  it('records each id once, pages by time with a cursor, and persists', async () => {
    const dir = join(tmpDir('purge-log'), 'purge');
    const log = new PurgeLog({ dir });
    await log.open(1_000);
    expect(log.created).toBe(1_000);
    expect(log.watermark).toBeUndefined();
    for (let i = 1; i <= 5; i++)
      expect(await log.append(entry(i, 1_000 + i * 10), 2_000)).toBe(true);
    expect(await log.append(entry(3, 9_999), 2_000)).toBe(false); // same id: nothing changes
    expect(log.size).toBe(5);
    const first = await log.since(1_020, 2);
    expect(first.entries.map((e) => e.value)).toEqual(['t2', 't3']);
    expect(first.next).toBe(cursorOf(entry(3, 1_030)));
    const second = await log.since(1_020, 2, first.next);
    expect(second.entries.map((e) => e.value)).toEqual(['t4', 't5']);
    expect(second.next).toBeUndefined();
    expect((await log.recent(2)).map((e) => e.value)).toEqual(['t5', 't4']);
    await log.setWatermark(1_777);
    await log.close();

    const again = new PurgeLog({ dir });
    await again.open(50_000);
    expect(again.created).toBe(1_000);
    expect(again.size).toBe(5);
    expect(again.watermark).toBe(1_777);
    expect(await again.has(entry(4, 0).id)).toBe(true);
    await again.close();
  });

  it('drops by count and by age, and is complete only after what it dropped', async () => {
    const log = new PurgeLog({
      dir: join(tmpDir('purge-log'), 'p'),
      maxEntries: 3,
      retentionMs: 10_000,
    });
    await log.open(0);
    expect(log.completeSince(5_000)).toBe(0);
    for (let i = 1; i <= 4; i++) await log.append(entry(i, i * 100), 5_000);
    expect(log.size).toBe(3);
    expect(await log.has(entry(1, 0).id)).toBe(false);
    expect(log.completeSince(5_000)).toBe(101); // after the entry dropped by count
    // Age: at 10,250 everything before 250 is beyond the retention.
    expect(await log.prune(10_250)).toBe(1);
    expect((await log.since(0, 10)).entries.map((e) => e.value)).toEqual(['t3', 't4']);
    expect(log.completeSince(10_250)).toBe(250);
    await log.raiseFloor(9_000);
    expect(log.completeSince(10_250)).toBe(9_000);
    await log.close();
  });
});
