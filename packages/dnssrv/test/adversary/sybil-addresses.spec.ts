/**
 * Adversary: sybils in the directory. One IP posing as 100 node ids (one per port, before the
 * DSHT limited ids per IP) used to be given every DNS answer, with the same address repeated.
 * Whatever the directory returns — 100 ids on one IPv4 address and one IPv6 address (written
 * several ways), ids listed twice, dead nodes — an answer over real UDP never names an address
 * twice and never a node that is not live: by views, ECS and resolver hints, RTT clusters, random,
 * and from the answer cache.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SeededRandom } from '@coral/testkit';
import { InMemoryNodeDirectory, type NodeDirectory, TYPE } from '../../src/index.js';
import { encodeQuery, hex, node, parse, udpAsk } from '../helpers.js';
import { lastDecision, start, type Started } from '../server/support.js';

let s: Started | undefined;
afterEach(async () => {
  await s?.server.close();
  s = undefined;
});

const SYBIL_V4 = '10.6.6.6';
const SYBIL_V6 = ['2001:db8::66', '2001:DB8:0:0:0:0:0:66', '2001:db8::0066'];
const sybilIds = Array.from({ length: 100 }, (_, i) => hex(0x5000 + i));

/** Self, three honest proxies, and 100 ids on one IP, in every cluster, hint, region and view. */
function sybilFleet(): InMemoryNodeDirectory {
  const dir = new InMemoryNodeDirectory(
    { random: new SeededRandom(3) },
    { self: node(1, { ipv6: '2001:db8::1', region: 'north' }) },
  );
  for (const i of [2, 3, 4]) {
    dir.add(node(i, { ipv6: `2001:db8::${i}`, region: 'north' }), {
      clusters: [1, 2],
      hints: ['127.88.0.0/24', '198.51.100.0/24'],
    });
  }
  sybilIds.forEach((id, i) =>
    dir.add(
      { id, ipv4: SYBIL_V4, ipv6: SYBIL_V6[i % 3]!, httpPort: 8090 + i, region: 'north' },
      { clusters: [1, 2], hints: ['127.88.0.0/24', '127.88.1.0/24', '198.51.100.0/24'] },
    ),
  );
  return dir;
}

/** The directory above, made worse: every list doubled, and a dead sybil in every answer. */
function hostile(inner: InMemoryNodeDirectory): NodeDirectory {
  const dead = { id: hex(0x9999), ipv4: '10.9.9.9', httpPort: 8090 };
  const twice = <T>(xs: T[]): T[] => [...xs, ...xs];
  return {
    self: () => inner.self(),
    levelThresholdsMs: inner.levelThresholdsMs,
    near: async (t, c) => twice(await inner.near(t, c)),
    cluster: (l, c) => [dead, ...twice(inner.cluster(l, c))],
    hinted: async (t, c) => {
      const r = await inner.hinted(t, c);
      return { nodes: [dead, ...twice(r.nodes)], prefix: r.prefix };
    },
    random: (c) => [dead, ...twice(inner.random(c))],
    inRegion: (r, c) => [dead, ...twice(inner.inRegion(r, c))],
    isLive: (id) => id !== dead.id && inner.isLive(id),
    get: (id) => (id === dead.id ? dead : inner.get(id)),
  };
}

function check(answers: { type: number; address?: string }[]): void {
  const addresses = answers.map((a) =>
    a.address!.toLowerCase().replace(/(^|:)0+(?=[0-9a-f])/g, '$1'),
  );
  expect(new Set(addresses).size).toBe(addresses.length);
  expect(addresses).not.toContain('10.9.9.9');
}

describe('adversary: 100 identities on one IP', () => {
  for (const which of ['in-memory', 'hostile'] as const) {
    it(`never an answer with a repeated address (${which} directory)`, async () => {
      const inner = sybilFleet();
      s = await start(
        {
          answerCount: 8,
          views: [
            { cidr: '127.99.0.0/24', region: 'north' },
            { cidr: '127.99.1.0/24', nodes: [...sybilIds.slice(0, 50), node(2).id] },
          ],
        },
        (which === 'hostile' ? hostile(inner) : inner) as InMemoryNodeDirectory,
      );
      const methods = new Set<string>();
      let answered = 0;
      const ask = async (from: string, type: number, i: number, ecs?: number[]) => {
        const r = parse(
          await udpAsk(
            s!.port,
            encodeQuery({
              name: `www${i % 5}.example.com.nyud.net`,
              type,
              id: i,
              edns: { udpSize: 4096, ...(ecs ? { ecs: { sourcePrefix: 24, address: ecs } } : {}) },
            }),
            { from },
          ),
        );
        check(r.answers);
        methods.add(lastDecision(s!.server).method);
        answered += r.answers.length;
      };
      let i = 0;
      for (const type of [TYPE.A, TYPE.AAAA, TYPE.ANY]) {
        // Views (region; node ids), ECS hints, resolver hints (/24), then random (no hint).
        for (const from of ['127.99.0.5', '127.99.1.5', '127.88.0.5', '127.88.1.5', '127.55.0.5']) {
          for (let k = 0; k < 6; k++) await ask(from, type, i++); // misses, then cache hits
        }
        for (let k = 0; k < 6; k++) await ask('127.55.0.5', type, i++, [198, 51, 100]);
      }
      // RTT: the resolver is measured near → this node's level-2 cluster.
      s.prober.settle(3);
      await s.clock.advance(0);
      for (let k = 0; k < 6; k++) await ask('127.55.0.5', TYPE.A, i++);
      expect([...methods].sort()).toEqual(['ecs', 'hint', 'random', 'rtt', 'view']);
      expect(answered).toBeGreaterThan(0);
      const cached = s.server.stats().cache.hits;
      expect(cached).toBeGreaterThan(0);
      // At most one answer record per address: the sybil IP once, next to the honest nodes.
      for (const d of s.server.recentDecisions()) {
        expect(d.nodes.filter((id) => sybilIds.includes(id)).length).toBeLessThanOrEqual(1);
      }
    });
  }
});
