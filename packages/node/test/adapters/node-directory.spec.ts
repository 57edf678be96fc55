/**
 * The DSHT as the DNS server's NodeDirectory, over simulated fleets: proxies near an address from
 * hints, the own metro's cluster for a nearby resolver, never a dead or silent node, few pings for
 * junk hint records, each member's DNS port as it advertised it, and a crashed member out of
 * every node's directory once failure detection has judged it.
 */
import { describe, expect, it } from 'vitest';
import { keyFromName, networkHintKeys, nodeIdFor, toHex, type MemberChange } from '@coral/dsht';
import { encodeNodeRecord } from '@coral/dsht/internal';
import { SimFleet, fixedClusters } from '@coral/sim';
import { DshtDirectory, toNodeInfo } from '../../src/adapters/node-directory.js';

const ipOf = (i: number): string =>
  i < 10 ? `10.1.1.${i + 1}` : i < 20 ? `10.1.2.${i - 9}` : `10.2.1.${i - 19}`;

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
    expect(dir.self()).not.toHaveProperty('dnsPort');

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

  it("carries each member's DNS port as the member advertised it, and none when it runs no DNS server", async () => {
    const fleet = new SimFleet({
      nodes: 8,
      seed: 6,
      dsht: { service: { httpPort: 8090, dnsPort: 53 } },
    });
    await fleet.start();
    for (const name of ['a', 'b']) await fleet.run(fleet.nodes[7]!.findNode(keyFromName(name)));
    const dir = new DshtDirectory({ dsht: fleet.nodes[7]! });
    expect(dir.self()).toMatchObject({ ipv4: fleet.nodes[7]!.contact.ip, dnsPort: 53 });
    const all = dir.random(50);
    expect(all).toHaveLength(7);
    for (const n of all) expect(n).toMatchObject({ httpPort: 8090, dnsPort: 53 });
    await fleet.stop();
    // The first test's fleet advertises no DNS port: its entries carry none (checked there too).
    expect(toNodeInfo({ id: '00'.repeat(20), ip: '10.0.0.1', httpPort: 80 })).not.toHaveProperty(
      'dnsPort',
    );
  });
});

describe('DshtDirectory over fixed clusters (metro = level 2, region = level 1)', () => {
  const layout = fixedClusters({ regions: 3, metros: 2, perMetro: 8 });

  it('NodeDirectory.near answers with live proxies of the own metro for a nearby address', async () => {
    const fleet = new SimFleet({
      nodes: layout.nodes,
      seed: 6,
      ipOf: layout.ipOf,
      latencyMs: layout.latencyMs,
      dsht: { levels: 3, service: { httpPort: 8090 } },
      clusterFor: (i) => layout.policyFor(layout.ipOf(i)),
    });
    await fleet.start();
    const me = fleet.nodes.find((n) => n.contact.ip === '10.2.1.3')!;
    // RTT to resolvers as the DNS server would measure them: 6 ms in 10.2.1.x, 40 ms in 10.2.x, else 150.
    const rttTo = (ip: string): number => 2 * layout.latencyMs('10.2.1.3', ip);
    const dir = new DshtDirectory({ dsht: me, rttTo });
    // Make the metro's members recently heard (as index traffic would).
    await fleet.run(Promise.all(me.routes(2).map((c) => me.ping(c))));
    const dead = me.routes(2)[0]!;
    await fleet.run(fleet.nodes.find((n) => n.contact.ip === dead.ip)!.stop());
    await fleet.run(me.ping(dead).catch(() => undefined)); // its failure is noticed
    const near = await fleet.run(dir.near({ ip: '10.2.1.200' }, 4));
    expect(near).toHaveLength(4);
    expect(near[0]!.ipv4).toBe('10.2.1.3'); // this node serves too, first
    expect(near.every((n) => n.ipv4!.startsWith('10.2.1.'))).toBe(true);
    expect(near.some((n) => n.ipv4 === dead.ip)).toBe(false);
    const regional = await fleet.run(dir.near({ ip: '10.2.2.200' }, 4));
    expect(regional.every((n) => n.ipv4!.startsWith('10.2.'))).toBe(true);
    expect(dir.cluster(2, 50).some((n) => n.ipv4 === dead.ip)).toBe(false);
  });
});

describe('DshtDirectory and failure detection', () => {
  it.each([
    [1, false],
    [2, false],
    [3, true],
    [4, true],
  ])(
    'a crashed member is not live in any node’s directory once it is dead (seed %i, keyed %s)',
    async (seed, keyed) => {
      const fleet = new SimFleet({
        nodes: 6,
        seed,
        latencyMs: () => 2,
        dsht: { swim: {}, service: { httpPort: 8090 } },
        ...(keyed ? { keys: ['ab'.repeat(32)] } : {}),
      });
      await fleet.start();
      /** Whether `cond` came to hold within `limitMs` of clock time (checked every 50 ms). */
      const until = async (cond: () => boolean, limitMs: number): Promise<boolean> => {
        const end = fleet.clock.now() + limitMs;
        while (!cond() && fleet.clock.now() < end)
          await fleet.run(new Promise<void>((r) => fleet.clock.setTimeout(r, 50)));
        return cond();
      };
      // Everyone verifies everyone (a few probe rounds and the introductions).
      expect(await until(() => fleet.nodes.every((n) => n.members().length >= 5), 30_000)).toBe(
        true,
      );
      const victim = fleet.nodes[3]!;
      const hex = toHex(victim.id);
      const others = fleet.nodes.filter((n) => n !== victim);
      const dirs = others.map((n) => new DshtDirectory({ dsht: n }));
      for (const d of dirs) expect(d.isLive(hex)).toBe(true);
      const dead: MemberChange[] = [];
      for (const n of others) n.on('member-dead', (c) => dead.push(c));
      // A crash (or SIGSTOP): nothing gets in or out of it any more.
      fleet.network.partition(
        [victim.contact.ip],
        others.map((n) => n.contact.ip),
      );
      expect(await until(() => dead.length === others.length, 5_000)).toBe(true);
      for (const d of dirs) {
        expect(d.isLive(hex)).toBe(false);
        expect(d.random(50).some((n) => n.id === hex)).toBe(false);
      }
      fleet.network.heal();
      await fleet.stop();
    },
  );
});
