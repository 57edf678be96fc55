/**
 * Failure detection wired into the DSHT (SWIM over PING / PING_REQ / LEAVE), on a simulated
 * network and clock: a crashed or hung member leaves members(), member() and the routing tables
 * of every node within 5 s of clock time (and so the DNS directory: @coral/node's
 * test/adapters/node-directory.spec.ts); a LEAVE removes it at once; a restarted
 * member comes back with its new incarnation, a resumed one after refuting its death; a quiet
 * fleet suspects nobody and probes at a rate that does not grow with the fleet.
 */
import { describe, expect, it } from 'vitest';
import { SimFleet } from '../../../src/index.js';
import { Dsht, toHex, type MemberChange } from '@coral/dsht';

const LATENCY = () => 2;

function sleep(fleet: SimFleet, ms: number): Promise<void> {
  return fleet.run(new Promise<void>((resolve) => fleet.clock.setTimeout(resolve, ms)));
}

/** Clock ms until `cond` holds, checked every 50 ms, or -1 after `limitMs`. */
async function until(fleet: SimFleet, cond: () => boolean, limitMs: number): Promise<number> {
  const t0 = fleet.clock.now();
  while (fleet.clock.now() - t0 <= limitMs) {
    if (cond()) return fleet.clock.now() - t0;
    await sleep(fleet, 50);
  }
  return -1;
}

async function quietFleet(nodes: number, seed = 1, keyed = false): Promise<SimFleet> {
  const fleet = new SimFleet({
    nodes,
    seed,
    latencyMs: LATENCY,
    dsht: { swim: {}, service: { httpPort: 8090 } },
    ...(keyed ? { keys: ['ab'.repeat(32)] } : {}),
  });
  await fleet.start();
  // Everyone verifies everyone (a few probe rounds and the introductions); in larger fleets,
  // each node the ones its lookups met.
  const want = Math.min(nodes - 1, 8);
  const all = (): boolean => fleet.nodes.every((n) => n.members().length >= want);
  expect(await until(fleet, all, 30_000)).toBeGreaterThanOrEqual(0);
  return fleet;
}

const hexOf = (n: Dsht) => toHex(n.id);
const others = (fleet: SimFleet, gone: Dsht) => fleet.nodes.filter((n) => n !== gone);
const sees = (n: Dsht, gone: Dsht) => n.member(hexOf(gone)) !== undefined;

describe('failure detection in the DSHT (simulated network, clock time)', () => {
  it.each([
    [1, false],
    [2, false],
    [3, true],
    [4, true],
  ])(
    'a crashed member is out of every node within 5 s (seed %i, keyed %s)',
    async (seed, keyed) => {
      const fleet = await quietFleet(6, seed, keyed);
      const victim = fleet.nodes[3]!;
      const dead: MemberChange[] = [];
      for (const n of others(fleet, victim)) n.on('member-dead', (c) => dead.push(c));
      // A crash (or SIGSTOP): nothing gets in or out of it any more.
      fleet.network.partition(
        [victim.contact.ip],
        others(fleet, victim).map((n) => n.contact.ip),
      );
      const ms = await until(
        fleet,
        () => others(fleet, victim).every((n) => !sees(n, victim)),
        5_000,
      );
      expect(ms).toBeGreaterThanOrEqual(0);
      for (const n of others(fleet, victim)) {
        expect(n.members().map((m) => m.id)).not.toContain(hexOf(victim));
        expect(n.routes(0).map((c) => toHex(c.id))).not.toContain(hexOf(victim));
        expect(n.failureDetection()!.members.find((m) => m.id === hexOf(victim))?.state).toBe(
          'dead',
        );
      }
      expect(dead.length).toBe(5);
      expect(dead.every((c) => c.id === hexOf(victim) && c.state === 'dead')).toBe(true);
      // The others are still there for each other.
      for (const n of others(fleet, victim)) expect(n.members()).toHaveLength(4);
      fleet.network.heal();
      await fleet.stop();
    },
  );

  it('a member that leaves (stop with leave) is out of every node by the time its stop returns', async () => {
    const fleet = await quietFleet(6);
    const leaver = fleet.nodes[2]!;
    const left: string[] = [];
    for (const n of others(fleet, leaver)) n.on('member-left', (c) => left.push(c.id));
    await fleet.run(leaver.stop({ leave: true }));
    for (const n of others(fleet, leaver)) {
      expect(sees(n, leaver)).toBe(false);
      expect(n.routes(0).map((c) => toHex(c.id))).not.toContain(hexOf(leaver));
    }
    expect(left).toEqual(Array(5).fill(hexOf(leaver)));
    await fleet.stop();
  });

  it('a restarted member is taken back promptly, with its new incarnation', async () => {
    const fleet = await quietFleet(6);
    const old = fleet.nodes[4]!;
    const address = { ...old.transport.address };
    await fleet.run(old.stop()); // no leave: a crash
    await until(fleet, () => others(fleet, old).every((n) => !sees(n, old)), 5_000);
    for (const n of others(fleet, old)) expect(sees(n, old)).toBe(false);
    const back: string[] = [];
    for (const n of others(fleet, old)) n.on('member-alive', (c) => back.push(c.id));

    await sleep(fleet, 2_000);
    const again = new Dsht(
      {
        transport: fleet.network.createTransport(address.ip, address.port),
        clock: fleet.clock,
        random: fleet.random.fork(),
      },
      { swim: {}, service: { httpPort: 8090 } },
    );
    const boot = fleet.nodes[0]!.contact;
    await fleet.run(again.start({ bootstrap: [`${boot.ip}:${boot.port}`] }));
    expect(toHex(again.id)).toBe(hexOf(old));
    const ms = await until(
      fleet,
      () => others(fleet, old).every((n) => n.member(hexOf(old)) !== undefined),
      5_000,
    );
    expect(ms).toBeGreaterThanOrEqual(0);
    expect(new Set(back)).toEqual(new Set([hexOf(old)]));
    const inc = again.failureDetection()!.incarnation;
    for (const n of others(fleet, old)) {
      const rec = n.failureDetection()!.members.find((m) => m.id === hexOf(old))!;
      expect(rec).toMatchObject({ state: 'alive', incarnation: inc });
    }
    await fleet.run(again.stop());
    await fleet.stop();
  });

  it('a hung member that resumes refutes its death and comes back (incarnation + 1)', async () => {
    const fleet = await quietFleet(6, 7);
    const hung = fleet.nodes[1]!;
    const before = hung.failureDetection()!.incarnation;
    fleet.network.partition(
      [hung.contact.ip],
      others(fleet, hung).map((n) => n.contact.ip),
    );
    await until(fleet, () => others(fleet, hung).every((n) => !sees(n, hung)), 5_000);
    for (const n of others(fleet, hung)) expect(sees(n, hung)).toBe(false);
    // A datagram from its present life (same incarnation) does not bring it back ...
    fleet.network.heal();
    const ms = await until(fleet, () => others(fleet, hung).every((n) => sees(n, hung)), 10_000);
    // ... its refutation does, once it hears it was declared dead.
    expect(ms).toBeGreaterThanOrEqual(0);
    expect(hung.failureDetection()!.incarnation).toBeGreaterThan(before);
    expect(hung.failureDetection()!.counters.refuted).toBeGreaterThan(0);
    await fleet.stop();
  });

  it('a quiet fleet suspects nobody, and each node probes at the same rate in a fleet of 6 or 24', async () => {
    const rates: number[] = [];
    for (const size of [6, 24]) {
      const fleet = await quietFleet(size, 11);
      await sleep(fleet, 5_000);
      const sent = () => fleet.nodes.map((n) => n.rpc.counters.byType.PING?.ok ?? 0);
      const t0 = sent();
      await sleep(fleet, 30_000);
      const t1 = sent();
      for (const n of fleet.nodes) {
        const fd = n.failureDetection()!;
        expect(fd.counters.suspected).toBe(0);
        expect(fd.states).toMatchObject({ suspect: 0, dead: 0, left: 0 });
        expect(fd.states.alive).toBe(n.members().length);
      }
      rates.push(Math.max(...t1.map((v, i) => v - t0[i]!)) / 30);
      await fleet.stop();
    }
    // One probe per probe interval (500 ms) and little else, whatever the fleet's size (O(1) per
    // node, not O(n)).
    for (const r of rates) expect(r).toBeLessThanOrEqual(3);
  });
});
