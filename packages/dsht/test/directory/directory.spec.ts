import { describe, expect, it } from 'vitest';
import { decodeNodeRecord, encodeNodeRecord, networkHintKeys } from '../../src/directory/hints.js';
import { DshtDirectory } from '../../src/directory/node-directory.js';
import { keyFromName, nodeIdFor, toHex } from '../../src/id/id.js';
import { SimFleet } from '@coral/sim';

const ipOf = (i: number): string =>
  i < 10 ? `10.1.1.${i + 1}` : i < 20 ? `10.1.2.${i - 9}` : `10.2.1.${i - 19}`;

describe('locality hints', () => {
  it('names /24 and /16 keys and round-trips checked records', () => {
    expect(networkHintKeys('203.0.113.9').map((h) => h.name)).toEqual([
      'net:203.0.113.0/24',
      'net:203.0.0.0/16',
    ]);
    expect(networkHintKeys('203.0.113.9')[0]!.key).toEqual(keyFromName('net:203.0.113.0/24'));
    expect(networkHintKeys('::1')).toEqual([]);
    const c = {
      id: nodeIdFor('10.0.0.1', 4000),
      ip: '10.0.0.1',
      port: 4000,
      httpPort: 8090,
      region: 'eu',
    };
    expect(decodeNodeRecord(encodeNodeRecord(c))).toEqual(c);
    // A record whose id is not SHA-1 of its address is rejected, as is garbage.
    expect(decodeNodeRecord(encodeNodeRecord({ ...c, port: 4001 }))).toBeUndefined();
    expect(decodeNodeRecord(new Uint8Array([0xc1]))).toBeUndefined();
    expect(decodeNodeRecord(new Uint8Array([1, 2, 3]))).toBeUndefined();
  });
});

describe('DshtDirectory', () => {
  it('finds proxies near an address through hints, never returns dead nodes', async () => {
    const fleet = new SimFleet({
      nodes: 30,
      seed: 4,
      ipOf,
      dsht: { hints: true, service: { httpPort: 8090, region: 'r1' } },
    });
    await fleet.start();
    const asker = fleet.nodes[25]!;
    const dir = new DshtDirectory({ dsht: asker });
    expect(dir.self()).toMatchObject({ ipv4: '10.2.1.6', httpPort: 8090, region: 'r1' });

    const by24 = await fleet.run(dir.hinted({ ip: '10.1.1.77' }, 20));
    expect(by24.prefix).toBe(24);
    expect(by24.nodes.length).toBeGreaterThan(3);
    expect(by24.nodes.every((n) => n.ipv4?.startsWith('10.1.1.'))).toBe(true);

    const by16 = await fleet.run(dir.hinted({ ip: '10.1.9.9' }, 20));
    expect(by16.prefix).toBe(16);
    expect(by16.nodes.every((n) => n.ipv4?.startsWith('10.1.'))).toBe(true);
    expect((await fleet.run(dir.hinted({ ip: '10.7.7.7' }, 5))).prefix).toBeNull();

    // Three nodes of 10.1.1.0/24 die (two of them held most /24 hints). Six minutes later the live
    // nodes have re-published their hints (every 5 min) and no dead node is returned.
    const dead = [fleet.nodes[1]!, fleet.nodes[2]!, fleet.nodes[3]!];
    await fleet.run(Promise.all(dead.map((n) => n.stop())));
    await fleet.run(new Promise((r) => fleet.clock.setTimeout(() => r(undefined), 360_000)));
    const deadIps = new Set(dead.map((n) => n.contact.ip));
    const near = await fleet.run(dir.near({ ip: '10.1.1.77' }, 5));
    expect(near).toHaveLength(5);
    expect(near.every((n) => n.ipv4?.startsWith('10.1.1.'))).toBe(true);
    expect(near.some((n) => deadIps.has(n.ipv4!))).toBe(false);
    // Lookups make the asker hear from live nodes again (and fail on dead ones).
    for (const name of ['a', 'b', 'c', 'd']) await fleet.run(asker.findNode(keyFromName(name)));
    const anywhere = await fleet.run(dir.near({ ip: '192.0.2.1' }, 8));
    expect(anywhere.length).toBeGreaterThan(3);
    expect(anywhere.some((n) => deadIps.has(n.ipv4!))).toBe(false);
    expect(dir.random(50).some((n) => deadIps.has(n.ipv4!))).toBe(false);
    expect(dir.inRegion('r1', 50).some((n) => deadIps.has(n.ipv4!))).toBe(false);
    // isLive agrees with what the directory hands out, without scanning the tables.
    for (const n of dir.random(50)) expect(dir.isLive(n.id)).toBe(true);
    for (const n of dead) expect(dir.isLive(toHex(n.contact.id))).toBe(false); // silent 6 min
    expect(dir.isLive(dir.self().id)).toBe(true);
    expect(dir.isLive('00'.repeat(20))).toBe(false); // never heard of
    expect(dir.isLive('not an id')).toBe(false);
  });
});

describe('DshtDirectory and junk hint records', () => {
  it('pings few unknown hinted nodes per lookup, and a silent one only once', async () => {
    const fleet = new SimFleet({ nodes: 6, seed: 5, ipOf, dsht: { service: { httpPort: 8090 } } });
    await fleet.start();
    const node = fleet.nodes[0]!;
    const dir = new DshtDirectory({ dsht: node });
    // Fifty records naming addresses nobody answers at (ids match: they pass decodeNodeRecord).
    const key = networkHintKeys('10.5.5.1')[0]!.key;
    for (let i = 0; i < 50; i++) {
      const ip = `10.5.${i}.9`;
      const record = encodeNodeRecord({ id: nodeIdFor(ip, 4000), ip, port: 4000, httpPort: 80 });
      const now = fleet.clock.now();
      node.store.restore({
        level: 0,
        key,
        publisher: nodeIdFor(ip, 4000),
        value: record,
        expiresAt: now + 600_000,
        storedAt: now,
        source: '10.9.9.9',
      });
    }
    const pings = () => node.snapshot().rpc.byType.PING?.timeout ?? 0;
    const before = pings();
    expect((await fleet.run(dir.hinted({ ip: '10.5.5.1' }, 20))).nodes).toEqual([]);
    expect(pings() - before).toBe(8);
    await fleet.run(dir.hinted({ ip: '10.5.5.1' }, 20));
    expect(pings() - before).toBe(16); // eight others; the silent ones are suspect now
    for (let i = 0; i < 10; i++) await fleet.run(dir.hinted({ ip: '10.5.5.1' }, 50));
    expect(pings() - before).toBe(50); // each named address was pinged once, in all
  });
});
