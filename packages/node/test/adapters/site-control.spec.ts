import { describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { Packr } from 'msgpackr';
import {
  DshtContentIndex,
  decodeSiteControl,
  encodeSiteControl,
  type DshtValueStore,
} from '../../src/adapters/content-index.js';
import { encodeHolder } from '../../src/adapters/holder-codec.js';

class Store implements DshtValueStore {
  readonly values = new Map<string, Uint8Array[]>();
  readonly ttls: number[] = [];
  async get(key: Uint8Array) {
    return { values: this.values.get(Buffer.from(key).toString('hex')) ?? [], stats: {} };
  }
  async put(key: Uint8Array, value: Uint8Array, ttl: number) {
    const k = Buffer.from(key).toString('hex');
    this.values.set(k, [...(this.values.get(k) ?? []), value]);
    this.ttls.push(ttl);
    return {};
  }
}

const self = { nodeId: 'aa'.repeat(20), ip: '127.0.0.11', httpPort: 8090 };
const record = {
  origin: 'http://www.example.com:8080',
  at: 1_000,
  until: 601_000,
  nodeId: 'bb'.repeat(20),
};

describe('site opt-out records in the DSHT', () => {
  it('round-trips through the codec and the index', async () => {
    expect(decodeSiteControl(encodeSiteControl(record))).toEqual(record);
    const store = new Store();
    const index = new DshtContentIndex({ dsht: store, clock: new ManualClock(0) }, { self });
    const key = new Uint8Array(20).fill(3);
    await index.publishSiteControl(key, record, 600);
    expect(store.ttls).toEqual([600]);
    expect(await index.siteControl(key)).toEqual([record]);
  });

  it('skips and counts values that are not site records', async () => {
    const store = new Store();
    const index = new DshtContentIndex({ dsht: store, clock: new ManualClock(0) }, { self });
    const key = new Uint8Array(20).fill(4);
    const k = Buffer.from(key).toString('hex');
    const packr = new Packr({ useRecords: false });
    store.values.set(k, [
      encodeHolder({ ...self, state: 'complete', at: 1 }),
      new Uint8Array([0xc1]),
      packr.pack([1, 'site', 'javascript:alert(1)', 1, 2, Buffer.alloc(20)]),
      packr.pack([1, 'site', 'http://a.example', -1, 2, Buffer.alloc(20)]),
      packr.pack([2, 'site', 'http://a.example', 1, 2, Buffer.alloc(20)]),
      packr.pack([1, 'site', 'http://a.example', 1, 2, Buffer.alloc(19)]),
      encodeSiteControl(record),
    ]);
    expect(await index.siteControl(key)).toEqual([record]);
    expect(index.invalidValues).toBe(6);
  });
});
