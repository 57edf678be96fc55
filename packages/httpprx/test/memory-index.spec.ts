import { describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { InMemoryContentIndex } from '../src/memory-index.js';
import { urlKey } from '../src/mapping/coral-name.js';

describe('InMemoryContentIndex', () => {
  const key = urlKey('http://www.example.com/');
  const holder = (nodeId: string, state: 'fetching' | 'complete') => ({
    nodeId,
    ip: '127.0.0.1',
    httpPort: 1,
    state,
  });

  it('returns live holders, complete first, and forgets them when their TTL passes', async () => {
    const clock = new ManualClock(0);
    const index = new InMemoryContentIndex({ clock });
    expect(await index.lookup(key)).toEqual([]);
    await index.announce(key, holder('a', 'fetching'), 20);
    await index.announce(key, holder('b', 'complete'), 60);
    expect((await index.lookup(key)).map((h) => h.nodeId)).toEqual(['b', 'a']);
    await clock.advance(20_000);
    expect((await index.lookup(key)).map((h) => h.nodeId)).toEqual(['b']);
    await index.announce(key, holder('b', 'complete'), 60); // refresh
    await clock.advance(59_000);
    expect((await index.lookup(key)).map((h) => h.nodeId)).toEqual(['b']);
    await clock.advance(1_000);
    expect(await index.lookup(key)).toEqual([]);
  });

  it("a node's view withdraws only that node's announcement", async () => {
    const index = new InMemoryContentIndex();
    await index.forNode('a').announce(key, holder('a', 'complete'), 60);
    await index.forNode('b').announce(key, holder('b', 'complete'), 60);
    await index.forNode('a').withdraw!(key);
    expect((await index.lookup(key)).map((h) => h.nodeId)).toEqual(['b']);
  });

  it('rejects a lookup whose signal is already aborted', async () => {
    const index = new InMemoryContentIndex();
    await expect(index.lookup(key, { signal: AbortSignal.abort() })).rejects.toThrow();
  });
});
