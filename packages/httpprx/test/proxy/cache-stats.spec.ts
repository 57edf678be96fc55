/**
 * `CoralProxy.cacheStats()`: what each cache tier holds against its budget and how many entries
 * it evicted to stay within it, over a real origin and real requests on loopback. Evictions are
 * only the budget's: a purge is not one.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { get, startOrigin, startProxy, until } from '../helpers/harness.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const BODY = 1000;

async function origin() {
  const o = await startOrigin((req, res) => {
    res.writeHead(200, { 'cache-control': 'max-age=600', 'content-length': String(BODY) });
    res.end(Buffer.alloc(BODY, req.url?.length ?? 0));
  });
  cleanups.push(() => o.close());
  return o;
}

describe('cache statistics', () => {
  it('disk and memory tiers: bytes, objects and budgets; evictions by the budget, not by purges', async () => {
    const o = await origin();
    // What one hot entry counts against the memory budget (body, header block, prepared
    // strings, per-entry overhead), measured on a proxy with room to spare.
    const probe = await startProxy({ dataDir: mkdtempSync(join(tmpdir(), 'coral-stats-')) });
    await get(probe.port, o.coralHost, '/a');
    await until(() => probe.proxy.cacheStats().memory.objects === 1, 'the probe entry is hot');
    const entry = probe.proxy.cacheStats().memory.bytes;
    await probe.close();
    expect(entry).toBeGreaterThan(BODY);
    // Room for two hot entries, not three.
    const memoryBudgetBytes = Math.floor(2.5 * entry);
    const px = await startProxy({
      dataDir: mkdtempSync(join(tmpdir(), 'coral-stats-')),
      diskBudgetBytes: 3 * BODY,
      memoryBudgetBytes,
    });
    cleanups.push(() => px.close());
    const empty = px.proxy.cacheStats();
    expect(empty).toEqual({
      memory: { bytes: 0, objects: 0, budgetBytes: memoryBudgetBytes, evictions: 0 },
      disk: { bytes: 0, objects: 0, budgetBytes: 3 * BODY, evictions: 0 },
    });

    // Each response is committed (then made hot) after the client has it: wait for each step's
    // state before the next request, so the order of evictions is the order of the requests.
    const stats = () => px.proxy.cacheStats();
    const step = async (path: string, memory: [number, number], disk: [number, number]) => {
      expect((await get(px.port, o.coralHost, path)).status).toBe(200);
      await until(
        () => {
          const s = stats();
          return (
            s.memory.objects === memory[0] &&
            s.memory.evictions === memory[1] &&
            s.disk!.objects === disk[0] &&
            s.disk!.evictions === disk[1]
          );
        },
        `${path} committed: ${JSON.stringify({ memory, disk })} (objects, evictions)`,
      );
    };
    await step('/a', [1, 0], [1, 0]);
    await step('/b', [2, 0], [2, 0]);
    await step('/c', [2, 1], [3, 0]); // /a out of memory
    await step('/d', [2, 2], [3, 1]); // /a off the disk, /b out of memory
    expect(stats()).toEqual({
      memory: { bytes: 2 * entry, objects: 2, budgetBytes: memoryBudgetBytes, evictions: 2 },
      disk: { bytes: 3 * BODY, objects: 3, budgetBytes: 3 * BODY, evictions: 1 },
    });

    // A purge removes entries without counting an eviction in either tier.
    expect(await px.proxy.purge(`http://origin.test:${o.port}/d`)).toBe(true);
    const after = px.proxy.cacheStats();
    expect(after.disk).toEqual({
      bytes: 2 * BODY,
      objects: 2,
      budgetBytes: 3 * BODY,
      evictions: 1,
    });
    expect(after.memory).toEqual({
      bytes: entry,
      objects: 1,
      budgetBytes: memoryBudgetBytes,
      evictions: 2,
    });
  });

  it('without a data directory the memory tier is the whole cache', async () => {
    const o = await origin();
    const px = await startProxy({ memoryBudgetBytes: 2 * BODY });
    cleanups.push(() => px.close());
    const memory = () => px.proxy.cacheStats().memory;
    for (const [path, objects, evictions] of [
      ['/a', 1, 0],
      ['/b', 2, 0],
      ['/c', 2, 1],
    ] as const) {
      await get(px.port, o.coralHost, path);
      await until(
        () => memory().objects === objects && memory().evictions === evictions,
        `${path} committed`,
      );
    }
    expect(px.proxy.cacheStats()).toEqual({
      memory: { bytes: 2 * BODY, objects: 2, budgetBytes: 2 * BODY, evictions: 1 },
    });
  });
});
