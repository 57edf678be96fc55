/**
 * Answers as templates (issue 15, "a DNS tail with many names"): one build serves every name of a
 * family and location bucket, so a name never asked before costs what a repeated one does;
 * templates are rebuilt in the background before they expire, served stale while a rebuild runs,
 * and spread their rebuilds out in time.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SeededRandom } from '@coral/testkit';
import { encodeQuery, fleet, header, node, parse, questionName } from '../helpers.js';
import { start, type Started } from './support.js';

let s: Started | undefined;
afterEach(async () => {
  await s?.server.close();
  s = undefined;
});

const ask = (name: string, from = '198.51.100.7', id = 1) =>
  s!.server.handlePacket(encodeQuery({ name, id }), { address: from, port: 5300 });
const names = (n: number) =>
  Array.from({ length: n }, (_, i) => `www.site${i}.example.com.nyud.net`);
/** Let background rebuilds (promise chains) finish. */
const settle = () => new Promise((r) => setImmediate(r));

describe('answer templates', () => {
  it('one build answers every origin name of a zone: new names are hits', async () => {
    s = await start({}, fleet().add(node(2)));
    const all = [...names(50), 'www-example-com.nyud.net', 'a-b---h8080.nyud.net'];
    for (const [i, name] of all.entries()) {
      const r = (await ask(name, '198.51.100.7', i))!;
      expect(header(r)).toMatchObject({ id: i, an: 2, rcode: 0 });
      expect(questionName(r)).toBe(name);
      expect(parse(r).answers.every((a) => a.name === name)).toBe(true);
    }
    expect(s.server.stats().cache).toMatchObject({ misses: 1, hits: all.length - 1, entries: 1 });
    // Invalid names share one NXDOMAIN template; each decision still says why.
    await ask('www-example-com---443.nyud.net');
    await ask('foo.nyud.net');
    expect(s.server.stats().cache).toMatchObject({ misses: 2, entries: 2 });
    const [a, b] = s.server.recentDecisions().slice(-2);
    expect(a!.detail).toContain('NAMES_ERR_NOT_CANONICAL');
    expect(b!.detail).toContain('NAMES_ERR_BAD_HOST');
  });

  it('rebuilt in the background after 3/4 of its life; stale while rebuilding; built again after twice its life', async () => {
    const dir = fleet().add(node(2));
    s = await start({}, dir, { random: new SeededRandom(3) });
    await ask('www.a.com.nyud.net'); // t = 0: built, TTL 30 s, life 22.5–30 s
    await s.clock.advance(16_000); // < 0.75 × 22.5 s: fresh
    await ask('www.b.com.nyud.net');
    expect(s.server.stats().cache).toMatchObject({ misses: 1, hits: 1, refreshes: 0 });
    await s.clock.advance(7_000); // 23 s: past 3/4 of any life
    dir.add(node(3)); // a rebuild may now pick node 3
    const r = await ask('www.c.com.nyud.net');
    expect(header(r!).an).toBe(2); // served at once, from the template
    expect(s.server.stats().cache).toMatchObject({ misses: 1, hits: 2, refreshes: 1 });
    await settle();
    // Expired and unused for a while: still served (stale), and rebuilt behind it.
    await s.clock.advance(40_000);
    await ask('www.d.com.nyud.net');
    expect(s.server.stats().cache).toMatchObject({ misses: 1, hits: 3, stale: 1, refreshes: 2 });
    await settle();
    // Past twice its life with no query: a plain miss.
    await s.clock.advance(61_000);
    await ask('www.e.com.nyud.net');
    expect(s.server.stats().cache).toMatchObject({ misses: 2, hits: 3 });
  });

  it('templates cached together are refreshed at spread-out times', async () => {
    s = await start({}, fleet().add(node(2)), { random: new SeededRandom(5) });
    // 20 resolvers in 20 /24s: 20 location buckets, 20 templates built at t = 0.
    const resolvers = Array.from({ length: 20 }, (_, i) => `203.0.${i}.53`);
    const round = async () => {
      const before = s!.server.stats().cache.refreshes;
      for (const r of resolvers) await ask('www.x.com.nyud.net', r);
      await settle();
      return s!.server.stats().cache.refreshes - before;
    };
    expect(await round()).toBe(0);
    expect(s.server.stats().cache).toMatchObject({ misses: 20, entries: 20 });
    await s.clock.advance(16_000); // refresh points lie in 16.9–22.5 s
    expect(await round()).toBe(0);
    await s.clock.advance(3_500); // 19.5 s: some, not all
    const some = await round();
    expect(some).toBeGreaterThan(0);
    expect(some).toBeLessThan(20);
    await s.clock.advance(3_100); // 22.6 s: the rest
    expect(await round()).toBe(20 - some);
    expect(s.server.stats().cache.misses).toBe(20); // never on the hot path
  });

  it('a dead proxy is never served from a template, fresh or stale', async () => {
    const dir = fleet().add(node(2));
    s = await start({}, dir);
    await ask('www.a.com.nyud.net');
    dir.setLive(node(2).id, false);
    const r = parse((await ask('www.b.com.nyud.net'))!);
    expect(r.answers.map((a) => a.address)).toEqual(['10.0.0.1']);
    expect(s.server.stats().cache).toMatchObject({ misses: 2, hits: 0 });
  });

  it('the name memo is bounded', async () => {
    s = await start({ answerCache: { maxNames: 100 } }, fleet().add(node(2)));
    for (const name of names(1000)) await ask(name);
    expect(s.server.stats().cache).toMatchObject({ names: 100, misses: 1, hits: 999 });
  });
});
