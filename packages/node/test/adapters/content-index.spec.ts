import { describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { DshtContentIndex, type DshtValueStore } from '../../src/adapters/content-index.js';
import { encodeHolder } from '../../src/adapters/holder-codec.js';

/** A value store keyed like the DSHT: one value per (key, publisher), as its replace rule says. */
class PublisherStore implements DshtValueStore {
  readonly values = new Map<string, Map<string, Uint8Array>>();
  constructor(public publisher: string) {}
  async get(key: Uint8Array) {
    return { values: [...(this.values.get(hex(key))?.values() ?? [])], stats: { level: 1 } };
  }
  async put(key: Uint8Array, value: Uint8Array) {
    const k = hex(key);
    if (!this.values.has(k)) this.values.set(k, new Map());
    this.values.get(k)!.set(this.publisher, value);
    return { stored: true };
  }
}
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const key = new Uint8Array(20).fill(9);
const nodeA = { nodeId: 'aa'.repeat(20), ip: '127.0.0.11', httpPort: 8090 };
const nodeB = { nodeId: 'bb'.repeat(20), ip: '127.0.0.12', httpPort: 8090 };

describe('DshtContentIndex', () => {
  it('announces holders that other nodes look up, complete copies first, with the level', async () => {
    const store = new PublisherStore('a');
    const clock = new ManualClock(1_000);
    const a = new DshtContentIndex({ dsht: store, clock }, { self: nodeA });
    const b = new DshtContentIndex({ dsht: store, clock }, { self: nodeB });
    await a.announce(key, { ...nodeA, state: 'fetching' }, 20);
    store.publisher = 'b';
    await b.announce(key, { ...nodeB, state: 'complete', size: 3, sha256: '00'.repeat(32) }, 3600);
    const c = new DshtContentIndex(
      { dsht: store, clock },
      { self: { ...nodeA, nodeId: 'cc'.repeat(20) } },
    );
    expect(await c.lookup(key)).toEqual([
      { ...nodeB, state: 'complete', size: 3, sha256: '00'.repeat(32), level: 1 },
      { ...nodeA, state: 'fetching', level: 1 },
    ]);
    // A node never finds itself.
    expect((await a.lookup(key)).map((h) => h.nodeId)).toEqual([nodeB.nodeId]);
  });

  it('withdraw hides the node even where an older record of it survives', async () => {
    const store = new PublisherStore('a');
    const clock = new ManualClock(1_000);
    const a = new DshtContentIndex({ dsht: store, clock }, { self: nodeA });
    const reader = new DshtContentIndex({ dsht: store, clock }, { self: nodeB });
    await a.announce(key, { ...nodeA, state: 'complete' }, 3600);
    // The old record lives on under another publisher slot (another storing node's copy).
    store.publisher = 'copy';
    await a.announce(key, { ...nodeA, state: 'complete' }, 3600);
    store.publisher = 'a';
    await clock.advance(5);
    await a.withdraw(key);
    expect(await reader.lookup(key)).toEqual([]);
    await clock.advance(5);
    await a.announce(key, { ...nodeA, state: 'fetching' }, 20);
    expect((await reader.lookup(key)).map((h) => h.state)).toEqual(['fetching']);
  });

  it('skips and counts values that are not valid holder records', async () => {
    const store = new PublisherStore('x');
    await store.put(key, new TextEncoder().encode('hello'));
    store.publisher = 'y';
    await store.put(key, encodeHolder({ ...nodeB, state: 'complete', at: 1 }));
    const index = new DshtContentIndex({ dsht: store }, { self: nodeA });
    expect((await index.lookup(key)).map((h) => h.nodeId)).toEqual([nodeB.nodeId]);
    expect(index.invalidValues).toBe(1);
  });
});
