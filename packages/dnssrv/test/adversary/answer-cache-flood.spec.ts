/**
 * Adversary: floods against the answer cache, over real UDP on loopback.
 *
 * - Distinct names: every name under the zone answers, so a stranger can send a new name with
 *   every datagram. Answers are templates shared by every name of a zone and location, so such a
 *   flood builds nothing and stores nothing; it only passes through the bounded name memo.
 * - Distinct ECS subnets: the ECS option is part of an answer's key, so each new subnet is a new
 *   template (a build and an entry). The cache evicts least recently used entries one at a time,
 *   new ones first (SLRU): the answers clients keep asking for stay cached through the flood.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { encodeQuery, fleet, header, node, udpAsk, waitFor } from '../helpers.js';
import { start, type Started } from '../server/support.js';
import { udpAttacker } from './attacker.js';

let s: Started | undefined;
afterEach(async () => {
  await s?.server.close();
  s = undefined;
});

const victim = '127.77.5.3';
const hot = Array.from({ length: 20 }, (_, i) => `www.popular${i}.com.nyud.net`);
async function askHot(port: number, edns?: { ecs: { sourcePrefix: number; address: number[] } }) {
  for (const [i, name] of hot.entries()) {
    const r = await udpAsk(port, encodeQuery({ name, id: i, ...(edns ? { edns } : {}) }), {
      from: victim,
    });
    expect(header(r)).toMatchObject({ id: i, an: 2 });
  }
}

describe('adversary: answer cache floods', () => {
  it('a flood of distinct names builds and stores nothing; the name memo stays bounded', async () => {
    s = await start(
      { answerCache: { maxEntries: 500, maxNames: 1000 } },
      fleet().add(node(2)).add(node(3)),
    );
    await askHot(s.port); // one build, then hits
    const before = s.server.stats().cache;
    expect(before).toMatchObject({ misses: 1, hits: 19, entries: 1 });

    const a = await udpAttacker('127.66.5.2');
    const N = 10_000;
    for (let sent = 0; sent < N;) {
      for (let k = 0; k < 500; k++, sent++) {
        a.send(
          encodeQuery({ name: `flood${sent}.example.com.nyud.net`, id: sent & 0xffff }),
          s.port,
        );
      }
      await waitFor(() => s!.server.stats().queries.udp === 20 + sent);
    }
    const flooded = s.server.stats().cache;
    // The attacker's /24 is a location bucket of its own: one build for all its names.
    expect(flooded.misses - before.misses).toBe(1);
    expect(flooded.hits - before.hits).toBe(N - 1);
    expect(flooded.entries).toBe(2);
    expect(flooded.names).toBe(1000);

    await askHot(s.port);
    const after = s.server.stats().cache;
    expect(after.hits - flooded.hits).toBe(20);
    expect(after.misses).toBe(flooded.misses);
  });

  it('a flood of distinct ECS subnets evicts only its own entries; answers in use stay cached', async () => {
    s = await start({ answerCache: { maxEntries: 200 } }, fleet().add(node(2)).add(node(3)));
    const edns = { ecs: { sourcePrefix: 24, address: [198, 51, 100] } };
    await askHot(s.port, edns); // a miss, then hits: in use
    await askHot(s.port, edns);
    const before = s.server.stats().cache;
    expect(before).toMatchObject({ misses: 1, hits: 39 });

    const a = await udpAttacker('127.66.5.2');
    const N = 2_000;
    for (let sent = 0; sent < N;) {
      for (let k = 0; k < 200; k++, sent++) {
        const address = [10 + (sent >> 16), (sent >> 8) & 0xff, sent & 0xff];
        a.send(
          encodeQuery({
            name: `flood${sent}.example.com.nyud.net`,
            id: sent & 0xffff,
            edns: { ecs: { sourcePrefix: 24, address } },
          }),
          s.port,
        );
      }
      await waitFor(() => s!.server.stats().responses === 40 + sent);
    }
    const flooded = s.server.stats().cache;
    expect(flooded.misses - before.misses).toBe(N);
    expect(flooded.entries).toBeLessThanOrEqual(200);
    expect(flooded.evictions).toBeGreaterThanOrEqual(N + 1 - 200);

    await askHot(s.port, edns);
    const after = s.server.stats().cache;
    expect(after.hits - flooded.hits).toBe(20); // every hot answer served from the cache
    expect(after.misses).toBe(flooded.misses);
    expect(
      s.server
        .recentDecisions()
        .slice(-20)
        .every((d) => d.cached),
    ).toBe(true);
  });
});
