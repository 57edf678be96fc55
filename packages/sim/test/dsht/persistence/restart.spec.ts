/**
 * A node restarted on its data directory: its values are back (expired ones gone) and it rejoins
 * from its stored contacts without a bootstrap (simulated network and clock, real LevelDB).
 * Records, migration and damaged data: @coral/dsht's test/persistence/persistence.spec.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock, SeededRandom } from '@coral/testkit';
import { Dsht, compareDistance, keyFromName, toHex } from '@coral/dsht';
import { openLevelDb } from '@coral/dsht/internal';
import { SimNetwork } from '../../../src/index.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('persistence', () => {
  it('a restarted node reloads its values and rejoins from stored contacts without a bootstrap', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsht-persist-'));
    dirs.push(dir);
    const clock = new ManualClock(5_000_000);
    const net = new SimNetwork({ clock, random: new SeededRandom(3) });
    const run = async <T>(p: Promise<T>): Promise<T> => {
      let done = false;
      const q = p.finally(() => (done = true));
      q.catch(() => undefined);
      // Database I/O is real, so yield to the event loop between simulated events, and never move
      // the clock while only I/O is pending (the nodes run without periodic timers, so every
      // scheduled timer belongs to the operation in progress).
      while (!done) {
        await new Promise((r) => setImmediate(r));
        const at = clock.nextAt();
        if (at !== undefined) await clock.advanceTo(at);
      }
      return q;
    };
    const peers = Array.from(
      { length: 8 },
      (_, i) =>
        new Dsht(
          {
            transport: net.createTransport(`10.0.1.${i + 1}`, 4000),
            clock,
            random: new SeededRandom(i),
          },
          { timers: false },
        ),
    );
    await run(peers[0]!.start());
    for (const p of peers.slice(1)) await run(p.start({ bootstrap: ['10.0.1.1:4000'] }));

    let db = await openLevelDb(dir);
    let node = new Dsht(
      {
        transport: net.createTransport('10.0.9.9', 4000),
        clock,
        random: new SeededRandom(99),
        db,
      },
      { timers: false },
    );
    await run(node.start({ bootstrap: ['10.0.1.1:4000'] }));
    // A key this node is the closest to, as a put would have chosen.
    const all = [node, ...peers];
    let key = keyFromName('kept-0');
    for (let i = 1; all.some((p) => compareDistance(p.id, node.id, key) < 0); i++)
      key = keyFromName(`kept-${i}`);
    node.store.store(0, key, keyFromName('pub'), new Uint8Array([1, 2, 3]), 600);
    node.store.store(0, keyFromName('short'), keyFromName('pub'), new Uint8Array([4]), 5);
    const known = node.routes(0).length;
    expect(known).toBeGreaterThan(3);
    await run(new Promise((r) => clock.setTimeout(() => r(undefined), 2_000)));
    await run(node.stop());
    await db.close();

    // The clock moved only by simulated work, never while waiting on disk.
    // Ten seconds later: the 5 s value has expired, the 600 s one has not.
    await clock.advance(10_000);
    db = await openLevelDb(dir);
    node = new Dsht(
      {
        transport: net.createTransport('10.0.9.9', 4000),
        clock,
        random: new SeededRandom(100),
        db,
      },
      { timers: false },
    );
    await run(node.start()); // no bootstrap
    expect(node.localGet(key)).toEqual([new Uint8Array([1, 2, 3])]);
    expect(node.localGet(keyFromName('short'))).toEqual([]);
    expect(node.routes(0).length).toBeGreaterThanOrEqual(known);
    // Its peers answer it, and it answers them.
    const r = await run(peers[4]!.get(key));
    expect(r.values).toEqual([new Uint8Array([1, 2, 3])]);
    expect(toHex(r.stats.answeredBy!.id)).toBe(toHex(node.id));
    await run(node.stop());
    await db.close();
  });
});
