/**
 * A keyed fleet on the simulated network: every datagram authenticated with the fleet keyring.
 * The keys rotate live — install B everywhere, use B everywhere, remove A everywhere — with gets
 * succeeding at every step; a node left on key A alone notices it is isolated and says why.
 */
import { Keyring } from '@coral/keyring';
import { describe, expect, it } from 'vitest';
import { type DshtAuthState, keyFromName, toHex } from '@coral/dsht';
import { SimFleet } from '../../src/index.js';

const A = 'a'.repeat(64);
const B = Buffer.alloc(32, 0xbb).toString('base64');
const enc = (s: string) => new TextEncoder().encode(s);

describe('a keyed fleet', () => {
  it('rotates keys with gets succeeding throughout; a node left behind reports isolation', async () => {
    const fleet = new SimFleet({ nodes: 40, seed: 11, keys: [A] });
    await fleet.start();
    const n = fleet.nodes.length;
    const laggard = fleet.nodes[n - 1]!;
    const keys = Array.from({ length: 24 }, (_, i) => keyFromName(`rot-${i}`));
    for (const [i, k] of keys.entries())
      await fleet.run(fleet.nodes[(i * 7) % (n - 1)]!.put(k, enc(`v${i}`), 3600));
    // Keys whose only copy sits on the laggard leave the fleet with it; check the others.
    const reachable = keys.filter((k) =>
      fleet.nodes.some((x) => x !== laggard && x.localGet(k).length > 0),
    );
    expect(reachable.length).toBeGreaterThan(20);
    let asked = 0;
    const getsSucceed = async (): Promise<void> => {
      for (const [i, k] of reachable.entries()) {
        const by = fleet.nodes[(i * 5 + asked++) % (n - 1)]!;
        const r = await fleet.run(by.get(k));
        expect(r.values.length, `get ${toHex(k)} by ${by.contact.ip}`).toBeGreaterThan(0);
      }
    };
    await getsSucceed();
    const idA = Keyring.keyId(A);
    const idB = Keyring.keyId(B);
    const rest = fleet.keyrings.slice(0, n - 1);
    // 1. install B (the laggard never gets it), 2. use B, 3. remove A — gets after every ten nodes.
    for (const step of [
      (k: Keyring) => void k.install(B),
      (k: Keyring) => k.use(idB),
      (k: Keyring) => k.remove(idA),
    ]) {
      for (let i = 0; i < rest.length; i++) {
        step(rest[i]!);
        if (i % 10 === 9 || i === rest.length - 1) await getsSucceed();
      }
    }
    for (const node of fleet.nodes.slice(0, n - 1)) {
      expect(node.authState()).toMatchObject({ mode: 'keyed', keyIds: [idB], isolated: false });
    }
    // The fleet still reaches out to the laggard (under B); it hears nothing it can verify.
    const events: DshtAuthState[] = [];
    laggard.on('isolated', (s) => events.push(s));
    for (let round = 0; round < 8; round++) {
      await fleet.run(
        Promise.all(
          fleet.nodes
            .slice(0, 4)
            .map((x) => x.ping(laggard.contact, { retries: 0 }).catch(() => 0)),
        ),
      );
      await fleet.run(new Promise<void>((r) => fleet.clock.setTimeout(r, 5_000)));
    }
    const state = laggard.authState();
    expect(state.isolated).toBe(true);
    expect(state.unknownKeyIds).toContain(idB);
    expect(state.reason).toMatch(new RegExp(`key id\\(s\\) .*${idB}`));
    expect(state.counters.unknownKey).toBeGreaterThan(0);
    expect(events.map((e) => e.isolated)).toEqual([true]);
    // Its datagrams under A are refused by the fleet and counted there.
    await fleet.run(laggard.findNode(keyFromName('anything')).catch(() => []));
    const refusedA = fleet.nodes
      .slice(0, n - 1)
      .reduce(
        (s, x) => s + (x.authState().unknownKeys.find((u) => u.id === idA)?.datagrams ?? 0),
        0,
      );
    expect(refusedA).toBeGreaterThan(0);
    await getsSucceed();
    // Members are authenticated, and the laggard is not among them any more.
    const m = fleet.nodes[0]!.members();
    expect(m.length).toBeGreaterThan(5);
    expect(m.every((x) => x.authenticated)).toBe(true);
    await fleet.run(new Promise<void>((r) => fleet.clock.setTimeout(r, 130_000)));
    expect(fleet.nodes[0]!.member(toHex(laggard.id))).toBeUndefined();
    // The operator gives it the fleet's keys: the next authenticated datagram ends the isolation.
    fleet.keyrings[n - 1]!.replace([B]);
    await fleet.run(laggard.ping(fleet.nodes[0]!.contact));
    expect(laggard.authState().isolated).toBe(false);
    expect(events.map((e) => e.isolated)).toEqual([true, false]);
    await fleet.stop();
  });

  it('refuses contradictory mode options', () => {
    expect(() => new SimFleet({ nodes: 1, keys: [A], dsht: { open: true } })).toThrow(
      expect.objectContaining({ code: 'DSHT_ERR_INVALID_ARGUMENT' }),
    );
    expect(() => new SimFleet({ nodes: 1, dsht: { open: false } })).toThrow(/keyring/);
    expect(new SimFleet({ nodes: 1, dsht: { open: true } }).nodes[0]!.authState().mode).toBe(
      'open',
    );
  });
});
