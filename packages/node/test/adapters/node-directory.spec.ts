import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { ManualClock, SeededRandom, flushMicrotasks } from '@coral/testkit';
import {
  DshtNodeDirectory,
  hintNames,
  type DirectoryContact,
  type DirectorySource,
} from '../../src/adapters/node-directory.js';
import { parseKey } from '../../src/admin/keys.js';

const id = (b: number) => new Uint8Array(20).fill(b);
const hex = (b: number) => Buffer.from(id(b)).toString('hex');
const contact = (b: number, extra: Partial<DirectoryContact> = {}): DirectoryContact => ({
  id: id(b),
  ip: `10.0.${b}.1`,
  port: 8091,
  httpPort: 8090,
  ...extra,
});

/** A DSHT stand-in: a value map, routing tables, and pings answered by the peers marked alive. */
class FakeDsht extends EventEmitter implements DirectorySource {
  readonly levels = 3;
  readonly values = new Map<string, Uint8Array[]>();
  readonly tables: DirectoryContact[][] = [[], [], []];
  readonly alive = new Set<string>();
  pings: string[] = [];
  async get(key: Uint8Array) {
    return { values: this.values.get(Buffer.from(key).toString('hex')) ?? [], stats: { level: 0 } };
  }
  async put(key: Uint8Array, value: Uint8Array) {
    const k = Buffer.from(key).toString('hex');
    this.values.set(k, [...(this.values.get(k) ?? []), value]);
    return {};
  }
  routes(level = 0) {
    return this.tables[level] ?? [];
  }
  async ping(to: { ip: string; port: number }) {
    this.pings.push(to.ip);
    const c = this.tables.flat().find((x) => x.ip === to.ip);
    if (!c || !this.alive.has(to.ip)) throw new Error('timeout');
    this.emit('contact', c);
    return 1;
  }
}

const self = { id: hex(1), ipv4: '10.0.1.1', httpPort: 8090, region: 'eu' };

function setup() {
  const clock = new ManualClock(0);
  const dsht = new FakeDsht();
  const dir = new DshtNodeDirectory(
    { dsht, clock, random: new SeededRandom(1) },
    { self, liveWindowMs: 60_000, healthIntervalMs: 10_000 },
  );
  return { clock, dsht, dir };
}

describe('DshtNodeDirectory', () => {
  it('learns proxies from verified DSHT traffic only, and forgets them after the live window', async () => {
    const { clock, dsht, dir } = setup();
    dsht.tables[0]!.push(contact(2));
    dir.start();
    // Known from the routing table, but not heard from yet: not live.
    expect(dir.isLive(hex(2))).toBe(false);
    dsht.emit('contact', contact(2, { region: 'eu' }));
    dsht.emit('contact', contact(3, { httpPort: undefined }));
    expect(dir.get(hex(2))).toEqual({ id: hex(2), ipv4: '10.0.2.1', httpPort: 8090, region: 'eu' });
    expect(dir.get(hex(3))).toBeUndefined();
    expect(dir.live().map((n) => n.id)).toEqual([self.id, hex(2)]);
    expect(
      dir
        .inRegion('eu', 5)
        .map((n) => n.id)
        .sort(),
    ).toEqual([self.id, hex(2)].sort());
    await clock.advance(61_000);
    expect(dir.isLive(hex(2))).toBe(false);
    expect(dir.random(5)).toEqual([self]);
    dir.stop();
  });

  it('health rounds ping quiet proxies: answering ones stay live, dead ones drop out', async () => {
    const { clock, dsht, dir } = setup();
    dsht.tables[0]!.push(contact(2), contact(3));
    dir.start();
    dsht.emit('contact', contact(2));
    dsht.emit('contact', contact(3));
    dsht.alive.add('10.0.2.1');
    for (let t = 0; t < 7; t++) await clock.advance(10_000);
    expect(dsht.pings).toContain('10.0.3.1');
    expect(dir.isLive(hex(2))).toBe(true);
    expect(dir.isLive(hex(3))).toBe(false);
    dir.stop();
  });

  it('answers cluster(level) with itself first, then live members of that level only', () => {
    const { dsht, dir } = setup();
    dsht.tables[2]!.push(contact(4), contact(5));
    dir.start();
    dsht.emit('contact', contact(4));
    expect(dir.cluster(2, 5).map((n) => n.id)).toEqual([self.id, hex(4)]);
    expect(dir.cluster(1, 5).map((n) => n.id)).toEqual([self.id]);
    expect(dir.cluster(2, 1)).toEqual([self]);
    dir.stop();
  });

  it('publishes its own hints and finds live proxies hinted under a /24, then a /16', async () => {
    const { dsht, dir } = setup();
    dir.start(); // publishes the hints
    await flushMicrotasks();
    for (const name of ['net:10.0.1.0/24', 'net:10.0.0.0/16', 'region:eu']) {
      expect(dsht.values.get(Buffer.from(parseKey(name)).toString('hex'))?.length).toBe(1);
    }
    expect(await dir.hinted({ ip: '10.0.1.77' }, 2)).toEqual({ nodes: [self], prefix: 24 });
    expect(await dir.hinted({ ip: '10.0.9.9' }, 2)).toEqual({ nodes: [self], prefix: 16 });
    expect(await dir.hinted({ ip: '192.0.2.1' }, 2)).toEqual({ nodes: [], prefix: null });
    // near(): hints first, then random live proxies.
    dsht.emit('contact', contact(6));
    const near = await dir.near({ ip: '10.0.1.5' }, 2);
    expect(near[0]).toEqual(self);
    expect(near).toHaveLength(2);
    dir.stop();
  });

  it('names /24 and /16 hint keys for IPv4 only', () => {
    expect(hintNames('203.0.113.9').map((h) => h.name)).toEqual([
      'net:203.0.113.0/24',
      'net:203.0.0.0/16',
    ]);
    expect(hintNames('2001:db8::1')).toEqual([]);
  });
});
