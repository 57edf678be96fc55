import { ManualClock, SeededRandom, flushMicrotasks } from '@coral/testkit';
import { describe, expect, it } from 'vitest';
import { Swim, type SwimUpdate } from '../../src/membership/swim.js';

/** One-way delay of the simulated network, in clock milliseconds. */
const HOP_MS = 5;
/** Updates piggybacked per datagram. */
const PIGGYBACK = 6;

/**
 * Swim instances joined by a simulated network on one ManualClock: a ping is a round trip that
 * carries gossip both ways; a node that is down (or hung) answers nothing; `cut` drops the direct
 * path between two nodes only.
 */
class Fleet {
  clock = new ManualClock(1_700_000_000_000);
  nodes = new Map<string, Swim>();
  down = new Set<string>();
  cut = new Set<string>();

  constructor(ids: string[], seed = 1) {
    const random = new SeededRandom(seed);
    for (const id of ids) this.add(id, random);
    for (const a of ids) for (const b of ids) if (a !== b) this.nodes.get(a)!.heard(b, 0);
  }

  add(id: string, random = new SeededRandom(id.length), incarnation?: number): Swim {
    const swim = new Swim(
      {
        clock: this.clock,
        random,
        probes: {
          ping: (target, timeoutMs) => this.#roundTrip(id, target, timeoutMs),
          pingVia: (via, target, timeoutMs) =>
            this.#roundTrip(id, via, timeoutMs, () =>
              this.#roundTrip(via, target, Math.max(0, timeoutMs - 2 * HOP_MS)),
            ),
          gossip: (to, updates) => {
            if (!this.#reachable(id, to)) return;
            this.clock.setTimeout(() => this.nodes.get(to)!.incoming(updates, id), HOP_MS);
          },
        },
      },
      { self: id, incarnation },
    );
    this.nodes.set(id, swim);
    return swim;
  }

  #reachable(a: string, b: string): boolean {
    return !this.down.has(a) && !this.down.has(b) && !this.cut.has([a, b].sort().join('|'));
  }

  /** `from` → `to` and back, gossip piggybacked both ways; false after `timeoutMs` if lost. */
  #roundTrip(
    from: string,
    to: string,
    timeoutMs: number,
    relay?: () => Promise<boolean>,
  ): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = this.clock.setTimeout(() => resolve(false), timeoutMs);
      if (!this.#reachable(from, to)) return;
      const sent = this.nodes.get(from)!.outgoing(PIGGYBACK);
      this.clock.setTimeout(() => {
        const receiver = this.nodes.get(to)!;
        receiver.incoming(sent, from);
        const answer = async () => {
          const ok = relay ? await relay() : true;
          if (!ok || !this.#reachable(from, to)) return;
          const back = receiver.outgoing(PIGGYBACK);
          this.clock.setTimeout(() => {
            this.nodes.get(from)!.incoming(back, to);
            timer.cancel();
            resolve(true);
          }, HOP_MS);
        };
        void answer();
      }, HOP_MS);
    });
  }

  start(): void {
    for (const s of this.nodes.values()) s.start();
  }

  /** Advance the clock in small steps so that promise chains between timers run. */
  async run(ms: number, stepMs = HOP_MS): Promise<void> {
    const end = this.clock.now() + ms;
    while (this.clock.now() < end) {
      await this.clock.advance(Math.min(stepMs, end - this.clock.now()));
      await flushMicrotasks();
    }
  }

  /** Clock ms until every node other than `except` sees `id` as `state` (or -1 within `limitMs`). */
  async until(id: string, state: string, limitMs: number, except: string[] = []): Promise<number> {
    const t0 = this.clock.now();
    while (this.clock.now() - t0 <= limitMs) {
      const all = [...this.nodes]
        .filter(([n]) => n !== id && !except.includes(n))
        .every(([, s]) => s.state(id) === state);
      if (all) return this.clock.now() - t0;
      await this.run(HOP_MS * 2);
    }
    return -1;
  }
}

const six = ['a', 'b', 'c', 'd', 'e', 'f'];

describe('Swim (SWIM failure detection over verified members)', () => {
  it('keeps a healthy fleet alive: no suspicion in a minute of probing', async () => {
    const fleet = new Fleet(six);
    fleet.start();
    await fleet.run(60_000, 20);
    for (const s of fleet.nodes.values()) {
      expect(s.counters.suspected).toBe(0);
      expect(s.size).toBe(5);
      expect(s.counters.probes).toBeGreaterThan(50);
    }
  });

  it.each([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])(
    'declares a crashed member dead on every node within 5 s of clock time in a fleet of six (seed %i)',
    async (seed) => {
      const fleet = new Fleet(six, seed);
      fleet.start();
      await fleet.run(3_000);
      fleet.down.add('d');
      const ms = await fleet.until('d', 'dead', 10_000);
      expect(ms).toBeGreaterThanOrEqual(0);
      expect(ms).toBeLessThanOrEqual(5_000);
      for (const [id, s] of fleet.nodes) if (id !== 'd') expect(s.isLive('d')).toBe(false);
    },
  );

  it('does not suspect a member that only one prober cannot reach (indirect probes answer)', async () => {
    const fleet = new Fleet(six, 3);
    fleet.cut.add('a|c');
    fleet.start();
    await fleet.run(30_000, 10);
    for (const s of fleet.nodes.values()) expect(s.state('c') ?? 'alive').toBe('alive');
    expect(fleet.nodes.get('a')!.counters.indirect).toBeGreaterThan(0);
  });

  it('removes a member that leaves at once, as soon as its leave message arrives', () => {
    const fleet = new Fleet(six);
    const left = fleet.nodes.get('e')!.leave();
    expect(left).toMatchObject({ id: 'e', state: 'left' });
    for (const [id, s] of fleet.nodes) {
      if (id === 'e') continue;
      s.incoming([left], 'e');
      expect(s.isLive('e')).toBe(false);
      expect(s.state('e')).toBe('left');
    }
  });

  it('lets a suspected member refute the suspicion with a higher incarnation', () => {
    const fleet = new Fleet(['a', 'b', 'c']);
    const [a, b, c] = ['a', 'b', 'c'].map((id) => fleet.nodes.get(id)!);
    const before = b!.incarnation;
    const suspicion: SwimUpdate = { id: 'b', state: 'suspect', incarnation: 0 };
    a!.incoming([suspicion], 'c');
    c!.incoming([suspicion], 'a');
    expect(a!.state('b')).toBe('suspect');
    // b hears it (incarnation 0 is below its own: nothing to refute) ...
    b!.incoming([suspicion], 'a');
    expect(b!.counters.refuted).toBe(0);
    // ... but one at its own incarnation is refuted.
    b!.incoming([{ id: 'b', state: 'suspect', incarnation: before }], 'a');
    expect(b!.counters.refuted).toBe(1);
    const refute = b!.outgoing(10).find((u) => u.id === 'b')!;
    expect(refute).toEqual({ id: 'b', state: 'alive', incarnation: before + 1 });
    a!.incoming([refute], 'b');
    c!.incoming([refute], 'b');
    expect(a!.state('b')).toBe('alive');
    expect(c!.state('b')).toBe('alive');
  });

  it('takes back a restarted member only with an incarnation above the one it died with', async () => {
    const fleet = new Fleet(['a', 'b']);
    const a = fleet.nodes.get('a')!;
    a.heard('b', 100);
    a.incoming([{ id: 'b', state: 'left', incarnation: 100 }], 'b');
    expect(a.isLive('b')).toBe(false);
    // A late datagram from b's previous life changes nothing.
    a.heard('b', 100);
    a.incoming([{ id: 'b', state: 'alive', incarnation: 99 }], 'b');
    expect(a.state('b')).toBe('left');
    // The restarted b starts at a later second and announces it.
    await fleet.clock.advance(5_000);
    const again = new Swim(
      {
        clock: fleet.clock,
        random: new SeededRandom(2),
        probes: { ping: async () => true, pingVia: async () => true, gossip: () => undefined },
      },
      { self: 'b' },
    );
    expect(again.incarnation).toBeGreaterThan(100);
    again.start();
    a.incoming(again.outgoing(4), 'b');
    again.stop();
    expect(a.state('b')).toBe('alive');
  });

  it('never adds a member through gossip, and ignores stale gossip', () => {
    const fleet = new Fleet(['a', 'b']);
    const a = fleet.nodes.get('a')!;
    a.incoming(
      [
        { id: 'stranger', state: 'alive', incarnation: 9 },
        { id: 'other', state: 'suspect', incarnation: 1 },
      ],
      'b',
    );
    expect(a.state('stranger')).toBeUndefined();
    expect(a.state('other')).toBeUndefined();
    a.heard('b', 5);
    a.incoming([{ id: 'b', state: 'suspect', incarnation: 4 }], 'b');
    expect(a.state('b')).toBe('alive');
    a.incoming([{ id: 'b', state: 'dead', incarnation: 4 }], 'b');
    expect(a.state('b')).toBe('alive');
  });

  it('scales the suspicion timeout with log10 of the fleet, as memberlist does', () => {
    const clock = new ManualClock(0);
    const swim = new Swim(
      {
        clock,
        random: new SeededRandom(1),
        probes: { ping: async () => true, pingVia: async () => true, gossip: () => undefined },
      },
      { self: 'me', probeIntervalMs: 1_000, suspicionMult: 4, minSuspicionMs: 1_000 },
    );
    for (let i = 0; i < 9; i++) swim.heard(`m${i}`, 0);
    expect(swim.suspicionMs()).toBe(4_000);
    for (let i = 9; i < 99; i++) swim.heard(`m${i}`, 0);
    expect(swim.suspicionMs()).toBe(8_000);
  });

  it('gossips each update a bounded number of times', () => {
    const fleet = new Fleet(six);
    const a = fleet.nodes.get('a')!;
    a.incoming([{ id: 'b', state: 'suspect', incarnation: 0 }], 'c');
    let times = 0;
    for (let i = 0; i < 100; i++) if (a.outgoing(8).some((u) => u.id === 'b')) times++;
    expect(times).toBe(4); // retransmitMult 4 × ⌈log10(5 + 1)⌉
  });

  it("takes a third party's word for no eviction: left is ignored, dead is only a suspicion", async () => {
    const fleet = new Fleet(['a', 'b', 'c']);
    const a = fleet.nodes.get('a')!;
    fleet.start();
    a.incoming([{ id: 'b', state: 'left', incarnation: 0 }], 'c');
    expect(a.state('b')).toBe('alive');
    expect(a.counters.ignored).toBe(1);
    a.incoming([{ id: 'b', state: 'dead', incarnation: 0 }], 'c');
    expect(a.state('b')).toBe('suspect');
    expect(a.isLive('b')).toBe(true);
    // b refutes before the suspicion runs out: it stays.
    a.incoming([{ id: 'b', state: 'alive', incarnation: 1 }], 'b');
    expect(a.state('b')).toBe('alive');
    await fleet.clock.advance(10_000);
    expect(a.state('b')).toBe('alive');
    // A jump beyond SWIM_MAX_INCARNATION_STEP (one b could not refute in time) is ignored. (The
    // ten seconds of probing and gossip before it have their own stale updates ignored.)
    const ignored = a.counters.ignored;
    a.incoming([{ id: 'b', state: 'suspect', incarnation: 1 + 1_001 }], 'c');
    expect(a.state('b')).toBe('alive');
    expect(a.counters.ignored).toBe(ignored + 1);
  });

  it('pings a dead member a third party says is back, and takes it back only on its own answer', async () => {
    const clock = new ManualClock(0);
    const pinged: string[] = [];
    const a = new Swim(
      {
        clock,
        random: new SeededRandom(1),
        probes: {
          ping: async (id) => {
            pinged.push(id);
            return false;
          },
          pingVia: async () => false,
          gossip: () => undefined,
        },
      },
      { self: 'a', incarnation: 1 },
    );
    a.heard('b', 10);
    a.heard('c', 10);
    a.start();
    a.incoming([{ id: 'b', state: 'left', incarnation: 10 }], 'b');
    expect(a.isDown('b')).toBe(true);
    a.incoming([{ id: 'b', state: 'alive', incarnation: 11 }], 'c');
    await flushMicrotasks();
    expect(a.isDown('b')).toBe(true);
    expect(pinged).toEqual(['b']);
    a.heard('b', 11);
    expect(a.state('b')).toBe('alive');
    a.stop();
  });
});
