/**
 * Adversary: a flood of distinct names against the encoded-answer cache. Every name under the zone
 * answers, so each new name is a miss that stores an entry; the cache used to be emptied whole
 * when full, taking every name in use with it. Now it evicts least recently used entries, one
 * at a time, new names first: the names clients keep asking for stay cached through the flood.
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

describe('adversary: answer cache under a flood of distinct names', () => {
  it('hot names stay cached; the cache stays within its bounds', async () => {
    s = await start({ answerCache: { maxEntries: 500 } }, fleet().add(node(2)).add(node(3)));
    const hot = Array.from({ length: 20 }, (_, i) => `www.popular${i}.com.nyud.net`);
    const victim = '127.77.5.3';
    const askHot = async () => {
      for (const [i, name] of hot.entries()) {
        const r = await udpAsk(s!.port, encodeQuery({ name, id: i }), { from: victim });
        expect(header(r)).toMatchObject({ id: i, an: 2 });
      }
    };
    await askHot(); // misses: cached
    await askHot(); // hits: in use
    const before = s.server.stats().cache;
    expect(before).toMatchObject({ hits: 20, misses: 20 });

    const a = await udpAttacker('127.66.5.2');
    const N = 10_000;
    for (let sent = 0; sent < N;) {
      for (let k = 0; k < 500; k++, sent++) {
        a.send(
          encodeQuery({ name: `flood${sent}.example.com.nyud.net`, id: sent & 0xffff }),
          s.port,
        );
      }
      await waitFor(() => s!.server.stats().queries.udp === 40 + sent);
    }
    const flooded = s.server.stats().cache;
    expect(flooded.misses - before.misses).toBe(N);
    expect(flooded.entries).toBeLessThanOrEqual(500);
    expect(flooded.evictions).toBeGreaterThanOrEqual(N + 20 - 500);

    await askHot();
    const after = s.server.stats().cache;
    expect(after.hits - flooded.hits).toBe(20); // every hot name served from the cache
    expect(after.misses).toBe(flooded.misses);
    expect(
      s.server
        .recentDecisions()
        .slice(-20)
        .every((d) => d.cached),
    ).toBe(true);
  });
});
