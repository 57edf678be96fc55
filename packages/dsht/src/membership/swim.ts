/**
 * SWIM failure detection (Das, Gupta, Motivala, DSN 2002), the way HashiCorp memberlist runs it,
 * over the members this node verified by a round trip. Pure: time comes from the injected clock,
 * probes go out through the injected {@link SwimProbes}, and the updates to gossip are read with
 * {@link Swim.outgoing} and fed back with {@link Swim.incoming} by whoever owns the wire.
 *
 * - Every `probeIntervalMs` the next member of a shuffled round-robin is pinged; with no ack within
 *   `probeTimeoutMs`, `indirectProbes` other members are asked to ping it for us until the interval
 *   ends. Still nothing: the member is *suspect*, and the suspicion is gossiped.
 * - A suspect that is not refuted within the suspicion timeout is *dead*. The timeout grows with
 *   the fleet as memberlist's does (`suspicionMult × log10(n) × probeIntervalMs`, at least
 *   `minSuspicionMs`), so a quiet fleet of a few dozen nodes removes a dead member in a few seconds.
 * - A member refutes a suspicion (or a death) of itself by raising its incarnation number and
 *   gossiping *alive*; a node's first incarnation is its start time in seconds, so a restarted
 *   node's word outranks what the fleet said about its previous life.
 * - Updates spread by piggybacking on probes and by gossip rounds: every `gossipIntervalMs`, while
 *   updates are pending, they go to `gossipNodes` random members (memberlist's GossipInterval), so
 *   a suspicion or a death reaches a fleet in a few hundred milliseconds rather than probe rounds.
 * - A graceful shutdown gossips *left*, which removes the member at once.
 *
 * Gossip never adds a member: updates about ids this node has not verified itself are ignored, so
 * neither a member nor a stranger can inject identities through them. Nor can gossip alone evict
 * one: *left* counts only from the member itself, and *dead* heard from a third party is a
 * suspicion here plus a ping of this node's own — the member is dead here only if that ping goes
 * unanswered too (or the suspicion runs out unrefuted).
 * Nor can gossip alone bring a dead member back: *alive* with a higher incarnation from a third
 * party only makes this node ping it, and the member's own answer (`heard`) re-admits it.
 */
import { EventEmitter } from 'node:events';
import type { Clock, Random, TimerHandle } from '@coral/runtime';

/** What this node believes about a member. */
export type SwimState = 'alive' | 'suspect' | 'dead' | 'left';

/** One piece of gossip: `id` is in `state` as of its `incarnation`. */
export interface SwimUpdate {
  id: string;
  state: SwimState;
  incarnation: number;
}

/** How probes reach the network (the DSHT's PING and PING_REQ). */
export interface SwimProbes {
  /** Ping `id` directly; true when it acknowledged within `timeoutMs`. */
  ping(id: string, timeoutMs: number): Promise<boolean>;
  /** Ask `via` to ping `target` for us; true when `via` relays an ack within `timeoutMs`. */
  pingVia(via: string, target: string, timeoutMs: number): Promise<boolean>;
  /** Send `updates` to `id` on their own, unacknowledged (the gossip round). */
  gossip(id: string, updates: SwimUpdate[]): void;
}

export interface SwimComponents {
  clock: Clock;
  random: Random;
  probes: SwimProbes;
}

/** Milliseconds between two probes. */
export const SWIM_PROBE_INTERVAL_MS = 500;
/** Milliseconds a direct ping may take before indirect probes start. */
export const SWIM_PROBE_TIMEOUT_MS = 300;
/** Members asked to probe a member that did not answer us (memberlist: IndirectChecks 3). */
export const SWIM_INDIRECT_PROBES = 3;
/** Milliseconds between gossip rounds, each sending pending updates to a few members. */
export const SWIM_GOSSIP_INTERVAL_MS = 200;
/** Members a gossip round sends to (memberlist: GossipNodes 3). */
export const SWIM_GOSSIP_NODES = 3;
/** Updates in one datagram. */
export const SWIM_MAX_UPDATES_PER_DATAGRAM = 8;
/** Suspicion timeout = this × log10(members) × probe interval (memberlist's LAN profile: 4). */
export const SWIM_SUSPICION_MULT = 2;
/** Shortest suspicion timeout. */
export const SWIM_MIN_SUSPICION_MS = 2_000;
/** Each update is gossiped this × ⌈log10(members + 1)⌉ times (memberlist: RetransmitMult 4). */
export const SWIM_RETRANSMIT_MULT = 4;
/**
 * A third party's word about a member may raise its incarnation by at most this much (a member
 * raises its own by one per refutation): a member gone bad cannot push a suspicion so high that
 * the suspected member cannot refute it.
 */
export const SWIM_MAX_INCARNATION_STEP = 1_000;
/** Records of dead or departed members kept (to refuse stale gossip), oldest dropped first. */
export const SWIM_MAX_DEPARTED = 4_096;

export interface SwimOptions {
  /** This node's id (hex). */
  self: string;
  /** Default {@link SWIM_PROBE_INTERVAL_MS}. */
  probeIntervalMs?: number;
  /** Default {@link SWIM_PROBE_TIMEOUT_MS}. */
  probeTimeoutMs?: number;
  /** Default {@link SWIM_INDIRECT_PROBES}. */
  indirectProbes?: number;
  /** Default {@link SWIM_GOSSIP_INTERVAL_MS}. */
  gossipIntervalMs?: number;
  /** Default {@link SWIM_GOSSIP_NODES}. */
  gossipNodes?: number;
  /** Default {@link SWIM_SUSPICION_MULT}. */
  suspicionMult?: number;
  /** Default {@link SWIM_MIN_SUSPICION_MS}. */
  minSuspicionMs?: number;
  /** Default {@link SWIM_RETRANSMIT_MULT}. */
  retransmitMult?: number;
  /** This node's first incarnation. Default: the clock's time in milliseconds. */
  incarnation?: number;
}

interface Member {
  state: SwimState;
  incarnation: number;
  /** Clock time of the last state change. */
  since: number;
  /** Pending suspect → dead transition. */
  suspicion?: TimerHandle;
}

interface Gossip {
  update: SwimUpdate;
  /** Times it was handed out so far. */
  sent: number;
}

export interface SwimEvents {
  /** A member changed state (`from` undefined: it was just added). */
  change: [id: string, state: SwimState, from: SwimState | undefined];
}

/** Precedence of an update over what is known (memberlist's aliveNode / suspectNode / deadNode). */
function overrides(u: SwimUpdate, known: Member): boolean {
  switch (u.state) {
    case 'alive':
      return u.incarnation > known.incarnation;
    case 'suspect':
      return known.state === 'alive'
        ? u.incarnation >= known.incarnation
        : known.state === 'suspect' && u.incarnation > known.incarnation;
    case 'dead':
    case 'left':
      return known.state === 'alive' || known.state === 'suspect'
        ? u.incarnation >= known.incarnation
        : u.incarnation > known.incarnation;
  }
}

export class Swim extends EventEmitter<SwimEvents> {
  readonly self: string;
  #clock: Clock;
  #random: Random;
  #probes: SwimProbes;
  #interval: number;
  #timeout: number;
  #indirect: number;
  #suspicionMult: number;
  #minSuspicion: number;
  #retransmitMult: number;
  #incarnation: number;
  #members = new Map<string, Member>();
  #queue: Gossip[] = [];
  #order: string[] = [];
  #next = 0;
  #timer: TimerHandle | undefined;
  #gossipTimer: TimerHandle | undefined;
  #gossipInterval: number;
  #gossipNodes: number;
  #running = false;
  #probing = false;
  #leaving = false;
  /** Dead or departed members being pinged because a third party said they are back. */
  #verifying = new Set<string>();
  /** Probes sent, indirect probe rounds, suspicions raised, refutations of our own suspicion. */
  readonly counters = {
    probes: 0,
    indirect: 0,
    suspected: 0,
    refuted: 0,
    dead: 0,
    left: 0,
    /** Updates ignored: about unknown ids, stale, a third party's *left*, too large a jump. */
    ignored: 0,
  };

  constructor(components: SwimComponents, options: SwimOptions) {
    super();
    this.#clock = components.clock;
    this.#random = components.random;
    this.#probes = components.probes;
    this.self = options.self;
    this.#interval = options.probeIntervalMs ?? SWIM_PROBE_INTERVAL_MS;
    this.#timeout = Math.min(options.probeTimeoutMs ?? SWIM_PROBE_TIMEOUT_MS, this.#interval);
    this.#indirect = options.indirectProbes ?? SWIM_INDIRECT_PROBES;
    this.#gossipInterval = options.gossipIntervalMs ?? SWIM_GOSSIP_INTERVAL_MS;
    this.#gossipNodes = options.gossipNodes ?? SWIM_GOSSIP_NODES;
    this.#suspicionMult = options.suspicionMult ?? SWIM_SUSPICION_MULT;
    this.#minSuspicion = options.minSuspicionMs ?? SWIM_MIN_SUSPICION_MS;
    this.#retransmitMult = options.retransmitMult ?? SWIM_RETRANSMIT_MULT;
    this.#incarnation = options.incarnation ?? Math.floor(this.#clock.now());
  }

  /** This node's current incarnation (carried in its own alive updates). */
  get incarnation(): number {
    return this.#incarnation;
  }

  /** Members believed alive or suspect (the ones still answered and probed). */
  get size(): number {
    let n = 0;
    for (const m of this.#members.values()) if (m.state === 'alive' || m.state === 'suspect') n++;
    return n;
  }

  /** Alive or suspect: a suspect stays usable until it is declared dead (memberlist does the same). */
  isLive(id: string): boolean {
    const m = this.#members.get(id);
    return m !== undefined && (m.state === 'alive' || m.state === 'suspect');
  }

  state(id: string): SwimState | undefined {
    return this.#members.get(id)?.state;
  }

  /** Dead or departed (out of the membership until it comes back with a higher incarnation). */
  isDown(id: string): boolean {
    const s = this.#members.get(id)?.state;
    return s === 'dead' || s === 'left';
  }

  /** What this node holds about `id`, as an update (to tell a dead member it is believed dead). */
  record(id: string): SwimUpdate | undefined {
    const m = this.#members.get(id);
    return m ? { id, state: m.state, incarnation: m.incarnation } : undefined;
  }

  /** Every known member and its state. */
  snapshot(): Array<{ id: string; state: SwimState; incarnation: number; since: number }> {
    return [...this.#members].map(([id, m]) => ({
      id,
      state: m.state,
      incarnation: m.incarnation,
      since: m.since,
    }));
  }

  /** The suspicion timeout for the current fleet size. */
  suspicionMs(): number {
    const n = Math.max(this.size + 1, 2);
    return Math.max(
      this.#minSuspicion,
      Math.round(this.#suspicionMult * Math.log10(n) * this.#interval),
    );
  }

  /**
   * Direct evidence: `id` completed a round trip with this node, carrying `incarnation` when the
   * wire tells it. Adds a newly verified member as alive; brings back a dead or departed one only
   * with an incarnation above the one it died with (a restart), so a delayed datagram from before
   * its death cannot.
   */
  heard(id: string, incarnation?: number): void {
    if (id === this.self) return;
    const known = this.#members.get(id);
    if (!known) {
      this.#set(id, 'alive', incarnation ?? 0);
      return;
    }
    if (incarnation === undefined) {
      if (known.state === 'suspect') this.#set(id, 'alive', known.incarnation);
      return;
    }
    if (known.state === 'alive' || known.state === 'suspect') {
      if (incarnation > known.incarnation || known.state === 'suspect')
        this.#set(id, 'alive', Math.max(incarnation, known.incarnation));
    } else if (incarnation > known.incarnation) {
      this.#set(id, 'alive', incarnation);
      this.#gossip({ id, state: 'alive', incarnation });
    }
  }

  /** Forget a member (evicted from the verified set); gossip about it is ignored from now on. */
  remove(id: string): void {
    const m = this.#members.get(id);
    if (!m) return;
    m.suspicion?.cancel();
    this.#members.delete(id);
    this.#queue = this.#queue.filter((g) => g.update.id !== id);
  }

  /**
   * Apply gossip received from the verified member `from`. Updates about unknown members are
   * ignored; a member's word about itself is taken as it is; a third party's *left* is ignored,
   * its *dead* is a suspicion here, and its *alive* for a dead member makes this node ping it.
   */
  incoming(updates: readonly SwimUpdate[], from: string): void {
    for (const given of updates) {
      if (given.id === this.self) {
        this.#aboutSelf(given);
        continue;
      }
      const known = this.#members.get(given.id);
      let u = given;
      if (known && given.id !== from) {
        if (
          given.state === 'left' ||
          // (0: its incarnation is not known here yet — it was only heard without one.)
          (known.incarnation > 0 &&
            given.incarnation > known.incarnation + SWIM_MAX_INCARNATION_STEP)
        ) {
          this.counters.ignored++;
          continue;
        }
        if (given.state === 'dead') {
          // Not on trust: a suspicion here, and a ping of our own; no answer confirms the death.
          if (known.state === 'alive' || known.state === 'suspect') this.#confirm(given, true);
          u = { ...given, state: 'suspect' };
        } else if (given.state === 'suspect' && known.state === 'alive') {
          // A ping of our own: its answer clears the suspicion here at once.
          this.#confirm(given, false);
        }
        if (given.state === 'alive' && (known.state === 'dead' || known.state === 'left')) {
          if (given.incarnation > known.incarnation) this.#verify(given.id);
          continue;
        }
      }
      if (!known || !overrides(u, known)) {
        this.counters.ignored++;
        continue;
      }
      if (u.state === 'suspect') this.#suspect(u.id, u.incarnation);
      else this.#set(u.id, u.state, u.incarnation);
      this.#gossip(u);
    }
  }

  /**
   * A third party says `u.id` is dead (`fatal`) or suspect: ping it. An answer clears the
   * suspicion (through `heard`); none, after a third party's "dead", confirms the death.
   */
  #confirm(u: SwimUpdate, fatal: boolean): void {
    if (this.#verifying.has(u.id) || !this.#running) return;
    this.#verifying.add(u.id);
    void this.#probes
      .ping(u.id, this.#timeout)
      .catch(() => false)
      .then((ok) => {
        this.#verifying.delete(u.id);
        const m = this.#members.get(u.id);
        if (ok) this.heard(u.id);
        if (ok || !fatal || !m || m.state !== 'suspect' || m.incarnation !== u.incarnation) return;
        this.#set(u.id, 'dead', u.incarnation);
        this.#gossip({ id: u.id, state: 'dead', incarnation: u.incarnation });
      });
  }

  /** Ping a dead member said to be back; its answer, through `heard`, is what re-admits it. */
  #verify(id: string): void {
    if (this.#verifying.has(id) || !this.#running) return;
    this.#verifying.add(id);
    void this.#probes
      .ping(id, this.#timeout)
      .catch(() => false)
      .finally(() => this.#verifying.delete(id));
  }

  /**
   * Up to `max` updates to piggyback on a datagram, the least gossiped first; each goes out
   * `retransmitMult × ⌈log10(n + 1)⌉` times and is then dropped.
   */
  outgoing(max: number): SwimUpdate[] {
    if (this.#queue.length === 0 || max <= 0) return [];
    const limit = this.#retransmitMult * Math.max(1, Math.ceil(Math.log10(this.size + 1)));
    this.#queue.sort((a, b) => a.sent - b.sent);
    const out: SwimUpdate[] = [];
    for (const g of this.#queue.slice(0, max)) {
      out.push(g.update);
      g.sent++;
    }
    this.#queue = this.#queue.filter((g) => g.sent < limit);
    return out;
  }

  /**
   * Start probing, and announce this node's incarnation: members that saw its previous life die
   * take it back when the announcement reaches them.
   */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#leaving = false;
    this.#gossip({ id: this.self, state: 'alive', incarnation: this.#incarnation });
    this.#schedule();
    this.#scheduleGossip();
  }

  /** Stop probing and cancel pending suspicions (the state stays readable). */
  stop(): void {
    this.#running = false;
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#gossipTimer?.cancel();
    this.#gossipTimer = undefined;
    for (const m of this.#members.values()) {
      m.suspicion?.cancel();
      m.suspicion = undefined;
    }
  }

  /**
   * A graceful shutdown: the update to send to every member (the owner of the wire sends it
   * directly rather than waiting for gossip), also queued for piggybacking. Probing stops.
   */
  leave(): SwimUpdate {
    this.#leaving = true;
    this.stop();
    const u: SwimUpdate = { id: this.self, state: 'left', incarnation: this.#incarnation };
    this.#gossip(u);
    return u;
  }

  /** One probe round now (the timer calls it; tests may too). Resolves when the round is over. */
  async probeOnce(): Promise<void> {
    const target = this.#nextTarget();
    if (target === undefined) return;
    this.counters.probes++;
    const started = this.#clock.now();
    if (await this.#probes.ping(target, this.#timeout).catch(() => false)) {
      this.heard(target);
      return;
    }
    if (!this.#members.has(target)) return;
    const helpers = this.#pick(this.#indirect, target);
    const remaining = Math.max(0, this.#interval - (this.#clock.now() - started));
    if (helpers.length > 0 && remaining > 0) {
      this.counters.indirect++;
      const acks = await Promise.all(
        helpers.map((h) => this.#probes.pingVia(h, target, remaining).catch(() => false)),
      );
      if (acks.some(Boolean)) {
        this.heard(target);
        return;
      }
    }
    const m = this.#members.get(target);
    if (m && m.state === 'alive') {
      const u: SwimUpdate = { id: target, state: 'suspect', incarnation: m.incarnation };
      this.#suspect(target, m.incarnation);
      this.#gossip(u);
      // Told directly too: a member that was only slow answers (which clears the suspicion here)
      // or refutes it, instead of waiting for the gossip to reach it.
      this.#probes.gossip(target, [u]);
    }
  }

  /**
   * A probe round every `probeIntervalMs`, at a fixed rate (a round ends within the interval: its
   * indirect probes get what is left of it), so a failing probe does not slow the next one down.
   */
  #schedule(): void {
    if (!this.#running) return;
    this.#timer = this.#clock.setTimeout(() => {
      this.#schedule();
      if (this.#probing) return;
      this.#probing = true;
      void this.probeOnce().finally(() => (this.#probing = false));
    }, this.#interval);
  }

  /** One gossip round now: pending updates to a few random live members. */
  gossipOnce(): void {
    if (this.#queue.length === 0) return;
    for (const id of this.#pick(this.#gossipNodes, this.self, true)) {
      const updates = this.outgoing(SWIM_MAX_UPDATES_PER_DATAGRAM);
      if (updates.length === 0) break;
      this.#probes.gossip(id, updates);
    }
  }

  #scheduleGossip(): void {
    if (!this.#running) return;
    this.#gossipTimer = this.#clock.setTimeout(() => {
      this.gossipOnce();
      this.#scheduleGossip();
    }, this.#gossipInterval);
  }

  /** Round-robin over a shuffled list of live members, reshuffled after each pass (SWIM §4.3). */
  #nextTarget(): string | undefined {
    for (let tries = 0; tries < 2; tries++) {
      while (this.#next < this.#order.length) {
        const id = this.#order[this.#next++]!;
        if (this.isLive(id)) return id;
      }
      this.#order = [...this.#members.keys()].filter((id) => this.isLive(id));
      for (let i = this.#order.length - 1; i > 0; i--) {
        const j = this.#random.int(i + 1);
        [this.#order[i], this.#order[j]] = [this.#order[j]!, this.#order[i]!];
      }
      this.#next = 0;
    }
    return undefined;
  }

  /** Up to `k` random alive (with `suspects`, also suspect) members other than `except`. */
  #pick(k: number, except: string, suspects = false): string[] {
    const pool = [...this.#members]
      .filter(
        ([id, m]) => id !== except && (m.state === 'alive' || (suspects && m.state === 'suspect')),
      )
      .map(([id]) => id);
    const out: string[] = [];
    while (out.length < k && pool.length > 0)
      out.push(pool.splice(this.#random.int(pool.length), 1)[0]!);
    return out;
  }

  #aboutSelf(u: SwimUpdate): void {
    if (this.#leaving || u.state === 'alive' || u.incarnation < this.#incarnation) return;
    if (u.incarnation >= Number.MAX_SAFE_INTEGER) return;
    // Suspected, declared dead or departed while running: refute with a higher incarnation.
    this.#incarnation = u.incarnation + 1;
    this.counters.refuted++;
    this.#gossip({ id: this.self, state: 'alive', incarnation: this.#incarnation });
  }

  #suspect(id: string, incarnation: number): void {
    const m = this.#set(id, 'suspect', incarnation);
    this.counters.suspected++;
    m.suspicion?.cancel();
    m.suspicion = this.#clock.setTimeout(() => {
      m.suspicion = undefined;
      const now = this.#members.get(id);
      if (now !== m || m.state !== 'suspect' || m.incarnation !== incarnation) return;
      this.#set(id, 'dead', incarnation);
      this.#gossip({ id, state: 'dead', incarnation });
    }, this.suspicionMs());
  }

  #set(id: string, state: SwimState, incarnation: number): Member {
    let m = this.#members.get(id);
    const from = m?.state;
    if (!m) {
      m = { state, incarnation, since: this.#clock.now() };
      this.#members.set(id, m);
    } else {
      if (state !== 'suspect') {
        m.suspicion?.cancel();
        m.suspicion = undefined;
      }
      if (m.state !== state) m.since = this.#clock.now();
      m.state = state;
      m.incarnation = incarnation;
    }
    if (from !== state) {
      if (state === 'dead') this.counters.dead++;
      if (state === 'left') this.counters.left++;
      if (state === 'dead' || state === 'left') this.#trimDeparted();
      this.emit('change', id, state, from);
    }
    return m;
  }

  #gossip(update: SwimUpdate): void {
    this.#queue = this.#queue.filter((g) => g.update.id !== update.id);
    this.#queue.push({ update, sent: 0 });
  }

  #trimDeparted(): void {
    let departed = 0;
    for (const m of this.#members.values())
      if (m.state === 'dead' || m.state === 'left') departed++;
    if (departed <= SWIM_MAX_DEPARTED) return;
    let oldest: [string, Member] | undefined;
    for (const e of this.#members)
      if (
        (e[1].state === 'dead' || e[1].state === 'left') &&
        (!oldest || e[1].since < oldest[1].since)
      )
        oldest = e;
    if (oldest) this.#members.delete(oldest[0]);
  }
}
