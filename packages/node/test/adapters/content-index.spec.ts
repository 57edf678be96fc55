import { describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { DshtContentIndex, type DshtValueStore } from '../../src/adapters/content-index.js';
import { decodeHolder, encodeHolder } from '../../src/adapters/holder-codec.js';

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

  it('claims a cold miss: the earliest claim wins, a later claimer joins it', async () => {
    const store = new PublisherStore('a');
    const clock = new ManualClock(1_000);
    const a = new DshtContentIndex({ dsht: store, clock }, { self: nodeA, claimOnMiss: true });
    const b = new DshtContentIndex({ dsht: store, clock }, { self: nodeB, claimOnMiss: true });
    // A misses first: nobody holds it and nobody else claimed, so A goes to the origin.
    expect(await a.lookup(key)).toEqual([]);
    expect(await a.claim!(key)).toEqual({ won: true });
    expect([a.claims, a.claimsLost]).toEqual([1, 0]);
    // B misses a moment later: its lookup finds A's claim, so it has no reason to claim.
    await clock.advance(3);
    store.publisher = 'b';
    const fromB = await b.lookup(key);
    expect(fromB.map((h) => [h.nodeId, h.state])).toEqual([[nodeA.nodeId, 'fetching']]);
    expect([b.claims, b.claimsLost]).toEqual([0, 0]);
  });

  it('breaks a tie between simultaneous claims by time, then node id, the same way on both sides', async () => {
    const store = new PublisherStore('');
    const clock = new ManualClock(5_000);
    // Each value is filed under the node inside it; both claims are put before either looks.
    const put = store.put.bind(store);
    let puts = 0;
    let bothPut!: () => void;
    const bothPutP = new Promise<void>((r) => (bothPut = r));
    store.put = async (k: Uint8Array, v: Uint8Array) => {
      store.publisher = decodeHolder(v).nodeId;
      const out = await put(k, v);
      if (++puts === 2) bothPut();
      await bothPutP;
      return out;
    };
    const a = new DshtContentIndex({ dsht: store, clock }, { self: nodeA, claimOnMiss: true });
    const b = new DshtContentIndex({ dsht: store, clock }, { self: nodeB, claimOnMiss: true });
    const [ra, rb] = await Promise.all([b.claim!(key), a.claim!(key)]).then(([x, y]) => [y, x]);
    // Same time: the lower node id (A's "aa..") wins; B defers to A, never the other way round.
    expect(ra).toEqual({ won: true });
    expect(rb!.won ? [] : rb!.holders.map((h) => h.nodeId)).toEqual([nodeA.nodeId]);
    expect([a.claimsLost, b.claimsLost]).toEqual([0, 1]);
  });

  it('gives the first-ranked node a head start before lower-ranked ones claim', async () => {
    const store = new PublisherStore('b');
    const clock = new ManualClock(0);
    const b = new DshtContentIndex(
      { dsht: store, clock, rank: () => 2 },
      { self: nodeB, claimOnMiss: true, claimStepMs: 100 },
    );
    const pending = b.claim!(key);
    // While B waits out its two steps, the first-ranked node A claims.
    await clock.advance(50);
    store.publisher = 'a';
    await store.put(key, encodeHolder({ ...nodeA, state: 'fetching', at: 50 }));
    await clock.advance(200);
    const result = await pending;
    expect(result.won ? [] : result.holders.map((h) => h.nodeId)).toEqual([nodeA.nodeId]);
    expect(b.claims).toBe(0);
  });

  it('claims only through claim(), offered only with claims on; a lookup never writes', async () => {
    const store = new PublisherStore('a');
    const clock = new ManualClock(0);
    let puts = 0;
    const put = store.put.bind(store);
    store.put = async (k: Uint8Array, v: Uint8Array) => {
      puts++;
      return put(k, v);
    };
    expect(new DshtContentIndex({ dsht: store, clock }, { self: nodeA }).claim).toBeUndefined();
    const a = new DshtContentIndex({ dsht: store, clock }, { self: nodeA, claimOnMiss: true });
    expect(await a.lookup(key)).toEqual([]);
    expect(puts).toBe(0);
    expect(await a.claim!(key)).toEqual({ won: true });
    expect(puts).toBe(1);
    // Every announcement the proxy makes is put (no memo swallows one).
    await a.announce(key, { ...nodeA, state: 'complete', size: 1 }, 600);
    expect(puts).toBe(2);
  });
});
