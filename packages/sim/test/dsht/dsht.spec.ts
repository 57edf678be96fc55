import { describe, expect, it } from 'vitest';
import { ManualClock, SeededRandom } from '@coral/testkit';
import {
  commonPrefixLength,
  compareDistance,
  Dsht,
  type DshtOptions,
  keyFromName,
  nodeIdFor,
  toHex,
} from '@coral/dsht/internal';
import { SimFleet, SimNetwork } from '../../src/index.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const dec = (b: Uint8Array): string => new TextDecoder().decode(b);

/** Runs a promise to its end, advancing the manual clock from timer to timer. */
function runner(clock: ManualClock) {
  return async <T>(p: Promise<T>): Promise<T> => {
    let done = false;
    const q = p.finally(() => {
      done = true;
    });
    q.catch(() => undefined);
    for (let i = 0; i < 1_000_000 && !done; i++) {
      const at = clock.nextAt();
      if (at === undefined) break;
      await clock.advanceTo(at);
    }
    return q;
  };
}

/** A small fleet where each node may get its own options. */
async function smallFleet(n: number, optionsFor: (i: number) => DshtOptions = () => ({})) {
  const clock = new ManualClock(1_000_000);
  const random = new SeededRandom(11);
  const net = new SimNetwork({ clock, random: random.fork() });
  const nodes = Array.from(
    { length: n },
    (_, i) =>
      new Dsht(
        { transport: net.createTransport(`10.0.0.${i + 1}`, 4000), clock, random: random.fork() },
        optionsFor(i),
      ),
  );
  const run = runner(clock);
  await run(nodes[0]!.start());
  for (const node of nodes.slice(1)) await run(node.start({ bootstrap: ['10.0.0.1:4000'] }));
  return { clock, net, nodes, run };
}

describe('Dsht', () => {
  it('puts on one node and gets from every other, with stats', async () => {
    const { nodes, run } = await smallFleet(24);
    const key = keyFromName('url:http://example.com/');
    const put = await run(nodes[3]!.put(key, enc('holder-3'), 600));
    expect(put.stored).toHaveLength(1);
    expect(put.stats.messages).toBeGreaterThan(0);
    for (const [i, node] of nodes.entries()) {
      const r = await run(node.get(key));
      expect(r.values.map(dec), `node ${i}`).toEqual(['holder-3']);
      expect(r.stats.level).toBe(0);
      expect(r.stats.answeredBy).toBeDefined();
      expect(r.records[0]?.ttl).toBeGreaterThan(500);
    }
    const miss = await run(nodes[5]!.get(keyFromName('never put')));
    expect(miss.values).toEqual([]);
    expect(miss.stats.messages).toBeGreaterThan(0);
  });

  it('stores at the closest node, and one node further out when the closest refuses', async () => {
    const key = keyFromName('refuse-me');
    // Find which of the 16 addresses is closest / second closest to the key.
    const probe = await smallFleet(16);
    const order = [...probe.nodes].sort((a, b) => compareDistance(a.id, b.id, key));
    const closest = probe.nodes.indexOf(order[0]!);
    const second = probe.nodes.indexOf(order[1]!);
    const publisher = [...Array(16).keys()].find((i) => i !== closest && i !== second)!;

    // 1. Nobody refuses: the value lands on the closest node.
    const ok = await probe.run(probe.nodes[publisher]!.put(key, enc('a'), 300));
    expect(toHex(ok.stored[0]!.contact.id)).toBe(toHex(order[0]!.id));

    // 2. The closest node answers the probe but refuses the STORE (its byte budget is exhausted):
    //    the reverse phase moves one node out.
    const f = await smallFleet(16, (i) => (i === closest ? { store: { maxBytes: 10 } } : {}));
    const placed = await f.run(f.nodes[publisher]!.put(key, enc('b'), 300));
    expect(toHex(placed.stored[0]!.contact.id)).toBe(toHex(f.nodes[second]!.id));
    expect(f.nodes[closest]!.localGet(key)).toEqual([]);
    expect(f.nodes[second]!.localGet(key).map(dec)).toEqual(['b']);
    // And a get from anywhere still finds it.
    const got = await f.run(
      f.nodes[(publisher + 1) % 16 === closest ? publisher : (publisher + 1) % 16]!.get(key),
    );
    expect(got.values.map(dec)).toEqual(['b']);

    // 3. The closest node is full for the key (4 long-lived values): the probe says so, and the
    //    value goes one node further out.
    const g = await smallFleet(16);
    for (let p = 0; p < 4; p++)
      g.nodes[closest]!.store.store(0, key, keyFromName(`other-${p}`), enc('x'), 3600);
    const put3 = await g.run(g.nodes[publisher]!.put(key, enc('c'), 300));
    expect(toHex(put3.stored[0]!.contact.id)).toBe(toHex(g.nodes[second]!.id));
  });

  it('asks the remembered node directly next time (i3 shortcut)', async () => {
    const { nodes, run } = await smallFleet(30);
    const key = keyFromName('shortcut');
    await run(nodes[0]!.put(key, enc('v'), 600));
    const first = await run(nodes[7]!.get(key));
    expect(first.values).toHaveLength(1);
    const second = await run(nodes[7]!.get(key));
    expect(second.values).toHaveLength(1);
    expect(second.stats).toMatchObject({ hops: 1, messages: 1 });
    expect(toHex(second.stats.answeredBy!.id)).toBe(toHex(first.stats.answeredBy!.id));
  });

  it('puts a key again where it placed it, and walks again when a holder is gone or the placement is old', async () => {
    const { clock, nodes, run } = await smallFleet(30);
    const key = keyFromName('re-put');
    const publisher = nodes[4]!;
    const sent = (type: string): number => {
      const s = publisher.snapshot().rpc.byType[type];
      return s ? s.ok + s.error + s.timeout : 0;
    };
    const first = await run(publisher.put(key, enc('v1'), 600));
    const holder = nodes.find((n) => toHex(n.id) === toHex(first.stored[0]!.contact.id))!;
    expect(holder).not.toBe(publisher);
    const probes = sent('STORE_PROBE');
    expect(probes).toBeGreaterThan(0);

    // A minute later: one STORE to the holder, no walk; the new value replaced the old one there.
    await run(new Promise((resolve) => clock.setTimeout(() => resolve(undefined), 60_000)));
    const again = await run(publisher.put(key, enc('v2'), 600));
    expect(sent('STORE_PROBE')).toBe(probes);
    expect(again.stats).toMatchObject({ hops: 1, messages: 1 });
    expect(toHex(again.stored[0]!.contact.id)).toBe(toHex(holder.id));
    expect(holder.localGet(key).map(dec)).toEqual(['v2']);

    // The level's table is rebuilt (a cluster change): its placements are forgotten, the put walks.
    publisher.resetLevel(0);
    const rebuilt = sent('STORE_PROBE');
    await run(publisher.put(key, enc('v2'), 600));
    expect(sent('STORE_PROBE')).toBeGreaterThan(rebuilt);
    const probesBeforeGone = sent('STORE_PROBE');

    // The holder is gone: its STORE times out, and the put walks again and lands elsewhere.
    await run(holder.stop());
    const moved = await run(publisher.put(key, enc('v3'), 600));
    expect(sent('STORE_PROBE')).toBeGreaterThan(probesBeforeGone);
    expect(toHex(moved.stored[0]!.contact.id)).not.toBe(toHex(holder.id));
    const mover = nodes.find((n) => toHex(n.id) === toHex(moved.stored[0]!.contact.id))!;
    expect(mover.localGet(key).map(dec)).toEqual(['v3']);

    // A placement older than PUT_SHORTCUT_MS (5 min) is looked for afresh.
    const walked = sent('STORE_PROBE');
    await run(new Promise((resolve) => clock.setTimeout(() => resolve(undefined), 301_000)));
    await run(publisher.put(key, enc('v4'), 600));
    expect(sent('STORE_PROBE')).toBeGreaterThan(walked);

    // Off: every put walks.
    const off = await smallFleet(12, () => ({ putShortcutMs: 0 }));
    const p = off.nodes[2]!;
    const probesOf = () => p.snapshot().rpc.byType.STORE_PROBE?.ok ?? 0;
    await off.run(p.put(key, enc('a'), 600));
    const once = probesOf();
    await off.run(p.put(key, enc('b'), 600));
    expect(probesOf()).toBeGreaterThan(once);
  });

  it('a value put while alone walks to the nodes nearer its key once they join, and every get finds it', async () => {
    // The first node of a fleet publishes before anyone joins: the walk can only store it at
    // itself. A key it is the farthest of all from is the case every other get misses when the
    // value stays there (a get ends once the three closest nodes it knows have answered).
    const clock = new ManualClock(1_000_000);
    const random = new SeededRandom(23);
    const net = new SimNetwork({ clock, random: random.fork() });
    const nodes = Array.from(
      { length: 12 },
      (_, i) =>
        new Dsht({
          transport: net.createTransport(`10.0.1.${i + 1}`, 4000),
          clock,
          random: random.fork(),
        }),
    );
    const run = runner(clock);
    const [first, ...rest] = nodes;
    await run(first!.start());
    const ids = nodes.map((_, i) => nodeIdFor(`10.0.1.${i + 1}`, 4000));
    let key = keyFromName('alone-0');
    for (let i = 1; ids.slice(1).some((id) => compareDistance(id, ids[0]!, key) > 0); i++)
      key = keyFromName(`alone-${i}`);
    const alone = await run(first!.put(key, enc('early'), 600));
    expect(toHex(alone.stored[0]!.contact.id)).toBe(toHex(first!.id));
    for (const node of rest) await run(node.start({ bootstrap: ['10.0.1.1:4000'] }));

    // The publisher puts again (a refresh within PUT_SHORTCUT_MS): it knows nodes nearer the key
    // now, so it walks and stores at the nearest one instead of again at itself.
    const again = await run(first!.put(key, enc('again'), 600));
    const nearest = [...nodes].sort((a, b) => compareDistance(a.id, b.id, key))[0]!;
    expect(toHex(again.stored[0]!.contact.id)).toBe(toHex(nearest.id));
    expect(nearest.localGet(key).map(dec)).toEqual(['again']);
    for (const [i, node] of rest.entries()) {
      const r = await run(node.get(key));
      expect(r.values.map(dec), `node ${i + 1}`).toEqual(['again']);
    }
    // With no node nearer than the walk found, the next put goes to the same place, one STORE.
    const third = await run(first!.put(key, enc('third'), 600));
    expect(third.stats).toMatchObject({ hops: 1, messages: 1 });
    expect(toHex(third.stored[0]!.contact.id)).toBe(toHex(nearest.id));
  });

  it('a joining node meets every running node nearer to it than its k-th closest (the buckets its join does not refresh)', async () => {
    const fleet = new SimFleet({ nodes: 160, seed: 3 });
    const [first, ...rest] = fleet.nodes;
    await fleet.run(first!.start());
    const boot = [`${first!.transport.address.ip}:${first!.transport.address.port}`];
    const k = first!.table(0)!.k;
    let deepChecked = 0;
    for (const [i, node] of rest.entries()) {
      // One at a time: nodes joining at once cannot find each other, whatever their refreshes do.
      await fleet.run(node.start({ bootstrap: boot }));
      const running = fleet.nodes
        .slice(0, i + 1)
        .sort((a, b) => compareDistance(a.id, b.id, node.id));
      if (running.length <= k) continue;
      const kthCpl = commonPrefixLength(node.id, running[k - 1]!.id);
      const known = new Set(node.routes(0).map((c) => toHex(c.id)));
      for (const o of running) {
        if (commonPrefixLength(node.id, o.id) <= kthCpl) break;
        expect(known.has(toHex(o.id)), `node ${i + 1} knows ${toHex(o.id)}`).toBe(true);
        deepChecked++;
      }
    }
    expect(deepChecked).toBeGreaterThan(100);
  });

  it('caches a copy on the last node of the path that lacked the value', async () => {
    const fleet = new SimFleet({ nodes: 120, seed: 5, dsht: { shortcutTtlMs: 0 } });
    await fleet.start();
    const key = keyFromName('path-cache');
    await fleet.run(fleet.nodes[0]!.put(key, enc('pc'), 600));
    const holdersBefore = fleet.nodes.filter((n) => n.localGet(key).length > 0).length;
    let cached = false;
    for (const node of fleet.nodes.slice(1)) {
      const r = await fleet.run(node.get(key));
      expect(r.values).toHaveLength(1);
      if (r.stats.hops >= 2) {
        await fleet.run(
          new Promise((resolve) => fleet.clock.setTimeout(() => resolve(undefined), 1000)),
        );
        cached = true;
        break;
      }
    }
    expect(cached).toBe(true);
    const holdersAfter = fleet.nodes.filter((n) => n.localGet(key).length > 0).length;
    expect(holdersAfter).toBeGreaterThan(holdersBefore);
  });

  it('spreads a hot key: the closest node stays under its rate limit and gets still succeed', async () => {
    const fleet = new SimFleet({ nodes: 80, seed: 9 });
    await fleet.start();
    const key = keyFromName('hot');
    const root = [...fleet.nodes].sort((a, b) => compareDistance(a.id, b.id, key))[0]!;
    await fleet.run(
      Promise.all(fleet.nodes.map((n, i) => n.put(key, enc(`h${i}`), 600).catch(() => undefined))),
    );
    const accepted = root.store.accepted.get(`0:${toHex(key)}`) ?? 0;
    expect(accepted).toBeLessThanOrEqual(12);
    const holders = fleet.nodes.filter((n) => n.localGet(key).length > 0).length;
    expect(holders).toBeGreaterThan(1);
    const r = await fleet.run(fleet.nodes[40]!.get(key));
    expect(r.values.length).toBeGreaterThan(0);
    expect(r.values.length).toBeLessThanOrEqual(4);
  });

  it('rejects bad input with stable codes, and works only while running', async () => {
    const clock = new ManualClock();
    const net = new SimNetwork({ clock, random: new SeededRandom(1) });
    const node = new Dsht({
      transport: net.createTransport('10.0.0.1', 4000),
      clock,
      random: new SeededRandom(2),
    });
    const key = keyFromName('k');
    await expect(node.get(key)).rejects.toMatchObject({ code: 'DSHT_ERR_NOT_RUNNING' });
    await node.start();
    await expect(node.get(new Uint8Array(3))).rejects.toMatchObject({
      code: 'DSHT_ERR_INVALID_ARGUMENT',
    });
    await expect(node.put(key, new Uint8Array(513), 10)).rejects.toMatchObject({
      code: 'DSHT_ERR_INVALID_ARGUMENT',
    });
    await expect(node.put(key, new Uint8Array(1), 0)).rejects.toMatchObject({
      code: 'DSHT_ERR_INVALID_ARGUMENT',
    });
    await expect(node.put(key, new Uint8Array(1), 1.5)).rejects.toMatchObject({
      code: 'DSHT_ERR_INVALID_ARGUMENT',
    });
    await expect(node.start({ bootstrap: ['nonsense'] })).resolves.toBeUndefined(); // already running: no-op
    // A fixed cluster policy and clusters formed by the node are two answers to one question.
    const fixed = { adverts: () => [], admits: () => true };
    expect(
      () =>
        new Dsht(
          { transport: net.createTransport('10.0.0.2', 4000), clock, cluster: fixed },
          { levels: 3, clustering: {} },
        ),
    ).toThrow(expect.objectContaining({ code: 'DSHT_ERR_INVALID_ARGUMENT' }));
    const ac = new AbortController();
    ac.abort();
    await expect(node.get(key, { signal: ac.signal })).rejects.toMatchObject({
      code: 'DSHT_ERR_ABORTED',
    });
    // Alone, a put stores locally and a get answers from the local store.
    const put = await node.put(key, enc('solo'), 60);
    expect(put.stored[0]?.hop).toBe(0);
    const got = await node.get(key);
    expect(got.values.map(dec)).toEqual(['solo']);
    expect(got.stats.hops).toBe(0);
    const snap = node.snapshot();
    expect(JSON.parse(JSON.stringify(snap))).toEqual(snap);
    expect(snap.store.values).toBe(1);
    expect(snap.levels).toEqual([{ level: 0, contacts: 0, buckets: {} }]);
    await node.stop();
    await expect(node.put(key, enc('x'), 60)).rejects.toMatchObject({
      code: 'DSHT_ERR_NOT_RUNNING',
    });
    const other = new Dsht({ transport: net.createTransport('10.0.0.2', 4000), clock });
    await expect(other.start({ bootstrap: ['10.0.0.1'] })).rejects.toMatchObject({
      code: 'DSHT_ERR_INVALID_ARGUMENT',
    });
  });

  it('needs an advertised address when bound to a wildcard', async () => {
    const clock = new ManualClock();
    const net = new SimNetwork({ clock, random: new SeededRandom(1) });
    const wild = new Dsht({ transport: net.createTransport('0.0.0.0', 4000), clock });
    await expect(wild.start()).rejects.toMatchObject({ code: 'DSHT_ERR_INVALID_ARGUMENT' });
    const ok = new Dsht(
      { transport: net.createTransport('0.0.0.0', 4001), clock },
      { advertise: { ip: '10.0.0.5' } },
    );
    await ok.start();
    expect(ok.contact).toMatchObject({ ip: '10.0.0.5', port: 4001 });
    expect(toHex(ok.id)).toBe(toHex(keyFromName('10.0.0.5:4001')));
    await ok.stop();
  });

  it('refreshes buckets left idle for an hour, and sweeps expired values', async () => {
    const { nodes, clock } = await smallFleet(10);
    const node = nodes[4]!;
    const before = node.snapshot().rpc.byType.FIND_NODE?.ok ?? 0;
    node.store.store(0, keyFromName('brief'), keyFromName('p'), enc('x'), 30);
    await clock.advance(61 * 60_000 + 1);
    expect(node.snapshot().rpc.byType.FIND_NODE?.ok ?? 0).toBeGreaterThan(before);
    expect(node.store.size).toBe(0);
  });

  it('aborts a lookup in flight', async () => {
    const { nodes, clock } = await smallFleet(12);
    const ac = new AbortController();
    const p = nodes[2]!.get(keyFromName('nothing'), { signal: ac.signal }).catch((e: unknown) => e);
    await clock.advance(5);
    ac.abort();
    await clock.advance(5);
    expect(await p).toMatchObject({ code: 'DSHT_ERR_ABORTED' });
  });

  it('emits rtt and contact events for the cluster module', async () => {
    const { nodes, run } = await smallFleet(6);
    const rtts: number[] = [];
    const seen = new Set<string>();
    nodes[0]!.on('rtt', (_p, ms) => rtts.push(ms));
    nodes[0]!.on('contact', (p) => seen.add(p.ip));
    await run(nodes[0]!.get(keyFromName('x')));
    expect(rtts.length).toBeGreaterThan(0);
    expect(rtts.every((r) => r >= 20 && r <= 200)).toBe(true);
    expect(seen.size).toBeGreaterThan(0);
    expect(nodes[0]!.routeEntries(0).every((e) => e.lastSeen > 0)).toBe(true);
  });
});
