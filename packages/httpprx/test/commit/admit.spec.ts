/**
 * C1: a purge that arrives while a matching object is being fetched is not undone by that fetch
 * committing afterwards. The proxy asks `admit` before (and right after) each commit; here a fake
 * purge log answers it the way the node's does: refused when a matching purge was applied at or
 * after the time the fetch's upstream request was sent.
 */
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { CommitCandidate } from '../../src/proxy/types.js';
import { get, startOrigin, startProxy, until } from '../helpers/harness.js';
import type { ProxyHarness } from '../helpers/harness.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A purge log in memory: purges with the clock time they were applied. */
class FakePurgeLog {
  readonly applied: Array<{ at: number; match: (c: CommitCandidate) => boolean }> = [];
  readonly asked: CommitCandidate[] = [];
  admit = (c: CommitCandidate): boolean => {
    this.asked.push(c);
    return !this.applied.some((p) => p.at >= c.fetchStartedAt && p.match(c));
  };
}

/** An origin whose /slow body stops half-way until `release()`. */
async function slowOrigin() {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const parked: ServerResponse[] = [];
  const origin = await startOrigin((req, res) => {
    res.writeHead(200, {
      'cache-control': 'max-age=600',
      'content-length': '10',
      'surrogate-key': 'news',
    });
    if (req.url === '/slow') {
      res.write('01234');
      parked.push(res);
      void released.then(() => res.end('56789'));
    } else res.end('0123456789');
  });
  cleanups.push(() => origin.close());
  return { origin, release, parked };
}

async function proxy(log: FakePurgeLog): Promise<ProxyHarness> {
  const px = await startProxy({}, { admit: log.admit });
  cleanups.push(() => px.close());
  return px;
}

describe('purge check at store time', () => {
  it('a purge applied during the fetch keeps its result out of the store', async () => {
    const log = new FakePurgeLog();
    const px = await proxy(log);
    const { origin, release, parked } = await slowOrigin();
    const pending = get(px.port, origin.coralHost, '/slow');
    await until(() => parked.length === 1, 'the fetch is under way');
    await px.clock.advance(1_000);
    // The purge (by tag) reaches this node now: nothing is stored yet, so it removes nothing.
    log.applied.push({ at: px.clock.now(), match: (c) => c.headers['surrogate-key'] === 'news' });
    expect(await px.proxy.purgeWhere((m) => m.headers['surrogate-key'] === 'news')).toBe(0);
    release();
    const r = await pending;
    // The client that asked still gets the whole response ...
    expect(r.status).toBe(200);
    expect(r.body.toString()).toBe('0123456789');
    // ... but it is not kept: the next request goes to the origin again.
    expect(log.asked.map((c) => c.url)).toEqual([`http://origin.test:${origin.port}/slow`]);
    expect(await px.proxy.cacheList()).toEqual([]);
    const again = await get(px.port, origin.coralHost, '/slow');
    expect(again.headers['cache-status']).toMatch(/fwd=uri-miss/);
    expect(origin.hits.length).toBe(2);
  });

  it('a fetch sent after the purge is stored', async () => {
    const log = new FakePurgeLog();
    const px = await proxy(log);
    const { origin } = await slowOrigin();
    log.applied.push({ at: px.clock.now(), match: () => true });
    await px.clock.advance(1);
    await get(px.port, origin.coralHost, '/fast');
    await until(async () => (await px.proxy.cacheList()).length === 1, 'stored');
    expect((await get(px.port, origin.coralHost, '/fast')).headers['cache-status']).toMatch(
      /^Coral; hit/,
    );
  });

  it('a purge applied while the commit is under way takes the entry back', async () => {
    const px = await startProxy(
      {},
      {
        // Admitted before the commit, refused right after it (the purge came in between).
        admit: (() => {
          let n = 0;
          return () => ++n === 1;
        })(),
      },
    );
    cleanups.push(() => px.close());
    const { origin } = await slowOrigin();
    expect((await get(px.port, origin.coralHost, '/fast')).status).toBe(200);
    expect(await px.proxy.cacheList()).toEqual([]);
    await get(px.port, origin.coralHost, '/fast');
    expect(origin.hits.length).toBe(2);
  });

  it('an admit that throws stores nothing', async () => {
    const px = await startProxy(
      {},
      {
        admit: () => {
          throw new Error('purge log unavailable');
        },
      },
    );
    cleanups.push(() => px.close());
    const { origin } = await slowOrigin();
    expect((await get(px.port, origin.coralHost, '/fast')).status).toBe(200);
    expect(await px.proxy.cacheList()).toEqual([]);
  });
});
