/**
 * Failure detection on the wire: the SWIM component (`swim.ts`) over the DSHT's RPC layer and its
 * verified members (`Peers`).
 *
 * - Probes are PINGs to members (by their verified contact), indirect probes are PING_REQs to
 *   other members, answered INDIRECT_ACK once the helper's own PING was (or was not) answered.
 * - PING and PONG carry the sender's incarnation and, between verified members, up to
 *   MAX_MEMBER_UPDATES pieces of gossip; the gossip rounds are PINGs too.
 * - A graceful stop sends LEAVE to every member and waits (briefly) for their answers.
 *
 * Who counts. Every datagram was authenticated by the keyring in keyed mode before it gets here.
 * On top of that, only a *round trip* counts: an answer to this node's request, or a request
 * carrying this node's write token for the source address (`source.verified`) — so in open mode a
 * stranger spoofing a member's address counts for nothing. Gossip is taken only from members
 * (verified, not dead here); a member's incarnation only from the member itself; LEAVE only about
 * the sender. A PING_REQ is served only for a verified live member about another verified live
 * member, named by id (the probe goes to the address this node verified, never one given in the
 * request): nobody can make this node probe an arbitrary address.
 */
import { ioFirst, type Clock, type Random, type TimerHandle } from '@coral/runtime';
import type { Address, Contact } from '../contact.js';
import { LEAVE_TIMEOUT_MS } from '../constants.js';
import { fromHex, nodeIdFor, toHex } from '../id/id.js';
import type { RequestSource } from '../rpc/handlers/context.js';
import type { Logger, Rpc } from '../rpc/rpc.js';
import { MAX_MEMBER_UPDATES, MAX_PING_REQ_TIMEOUT_MS } from '../wire/codec.js';
import type { Request, Response, SwimFields, WireMemberUpdate } from '../wire/messages.js';
import type { Peers } from './peers.js';
import { Swim, type SwimState, type SwimUpdate } from './swim.js';
import type { FailureDetectionOptions, FailureDetectorCounters, MemberChange } from '../types.js';

export type { FailureDetectionOptions, FailureDetectorCounters, MemberChange } from '../types.js';

export interface FailureDetectorComponents {
  clock: Clock;
  random: Random;
  peers: Peers;
  rpc: () => Rpc;
  logger: Logger;
  /**
   * The DSHT accepts senders whose advertised address is not the datagram's source (NAT). Without
   * it, a request counts here only when it comes from the very address (ip and port) its sender
   * advertises — the RPC layer checks the IP only, so another socket on a member's host could
   * otherwise speak for it.
   */
  allowNat?: boolean;
  /** A member changed state (the node drops or restores it, logs and emits the change). */
  onChange?: (change: MemberChange) => void;
}

export class FailureDetector {
  readonly options: FailureDetectionOptions;
  readonly counters: FailureDetectorCounters = {
    indirectServed: 0,
    indirectRefused: 0,
    leaves: 0,
    leavesIgnored: 0,
    gossipIgnored: 0,
  };
  #c: FailureDetectorComponents;
  #swim: Swim | undefined;

  constructor(components: FailureDetectorComponents, options: FailureDetectionOptions = {}) {
    this.#c = { ...components, clock: ioFirst(components.clock) };
    this.options = options;
  }

  /** The SWIM state machine (undefined before `start`). */
  get swim(): Swim | undefined {
    return this.#swim;
  }

  get running(): boolean {
    return this.#swim !== undefined;
  }

  /**
   * Start probing as `selfHex`, at incarnation `incarnation` (the start time in ms: a restarted
   * node outranks what the fleet said about its previous life). Members already verified are
   * taken in as alive.
   */
  start(selfHex: string, incarnation: number): void {
    const { clock, random } = this.#c;
    const swim = new Swim(
      {
        clock,
        random,
        probes: {
          ping: (id, timeoutMs) => this.#ping(id, timeoutMs),
          pingVia: (via, target, timeoutMs) => this.#pingVia(via, target, timeoutMs),
          gossip: (id, updates) => this.#gossip(id, updates),
        },
      },
      { ...this.options, self: selfHex, incarnation },
    );
    swim.on('change', (id, state, from) => this.#changed(id, state, from));
    this.#swim = swim;
    for (const rec of this.#c.peers.registry.all()) swim.heard(rec.hex);
    swim.start();
  }

  stop(): void {
    this.#swim?.stop();
  }

  /** Dead or departed: out of members(), the tables and the directory until it comes back. */
  isDown(hex: string): boolean {
    return this.#swim?.isDown(hex) ?? false;
  }

  /** A member was verified by a round trip (its incarnation, when the datagram carried one). */
  heard(hex: string, incarnation?: number): void {
    this.#swim?.heard(hex, incarnation);
  }

  /** A member was forgotten by the registry. */
  removed(hex: string): void {
    this.#swim?.remove(hex);
  }

  /**
   * Graceful leave: LEAVE to every live member, waiting up to `leaveTimeoutMs` for the answers
   * (a member that missed it finds out by probing). Probing stops.
   */
  async leave(): Promise<number> {
    const swim = this.#swim;
    if (!swim) return 0;
    const members = this.#c.peers.members();
    const left = swim.leave();
    const wait = this.options.leaveTimeoutMs ?? LEAVE_TIMEOUT_MS;
    const body: Request = { type: 'LEAVE', incarnation: left.incarnation };
    const acks = await Promise.all(
      members.map((m) =>
        this.#request({ id: fromHex(m.id), ip: m.ip, port: m.port }, body, wait, 1).then(
          (r) => r !== undefined,
        ),
      ),
    );
    return acks.filter(Boolean).length;
  }

  /** The RPC layer's `decorate`: a PING to `to` gets `decorate`d for the node at that address. */
  outgoing(body: Request, to: Address): Request {
    return body.type === 'PING' ? this.decorate(body, toHex(nodeIdFor(to.ip, to.port))) : body;
  }

  /** What an outgoing PING to `to` carries: this node's incarnation, and gossip for members. */
  decorate(body: Request, toHex?: string): Request {
    const swim = this.#swim;
    if (!swim || body.type !== 'PING' || body.incarnation !== undefined) return body;
    const out: Request = { type: 'PING', incarnation: swim.incarnation };
    if (toHex !== undefined && this.#c.peers.registry.get(toHex)) {
      const updates = this.#wireUpdates(swim.outgoing(MAX_MEMBER_UPDATES));
      if (updates.length > 0) out.updates = updates;
    }
    return out;
  }

  /** An answer to this node's request (a round trip): its incarnation and gossip. */
  answered(sender: Contact, body: Response): void {
    if (body.type !== 'PONG') return;
    this.#absorb(toHex(sender.id), body, true);
  }

  /**
   * A request for failure detection (PING, PING_REQ, LEAVE), or undefined for the others. The RPC
   * layer refused PING_REQ and LEAVE without a write token already.
   */
  handle(
    req: Request,
    sender: Contact,
    from: Address,
    given: RequestSource,
  ): Response | Promise<Response> | undefined {
    const swim = this.#swim;
    if (!swim) return undefined;
    if (req.type !== 'PING' && req.type !== 'PING_REQ' && req.type !== 'LEAVE') return undefined;
    const hex = toHex(sender.id);
    const sameAddress =
      this.#c.allowNat === true || (from.ip === sender.ip && from.port === sender.port);
    const source: RequestSource = sameAddress ? given : { ...given, verified: false };
    switch (req.type) {
      case 'PING': {
        this.#absorb(hex, req, source.verified);
        const pong: Response = { type: 'PONG', incarnation: swim.incarnation };
        if (source.verified && this.#c.peers.registry.get(hex)) {
          const updates = swim.outgoing(MAX_MEMBER_UPDATES - 1);
          // A member this node holds dead or departed is told so, and refutes if it is alive.
          if (swim.isDown(hex)) updates.unshift(swim.record(hex)!);
          const wire = this.#wireUpdates(updates);
          if (wire.length > 0) pong.updates = wire;
        }
        return pong;
      }
      case 'PING_REQ':
        return this.#serveIndirect(hex, req.target, req.timeoutMs, source.verified);
      case 'LEAVE': {
        if (!source.verified || !this.#c.peers.registry.get(hex)) {
          this.counters.leavesIgnored++;
          return { type: 'PONG' };
        }
        this.counters.leaves++;
        swim.incoming([{ id: hex, state: 'left', incarnation: req.incarnation }], hex);
        return { type: 'PONG' };
      }
      default:
        return undefined;
    }
  }

  /** PING / PONG fields from `hex`: its incarnation (round trips only) and its gossip (members only). */
  #absorb(hex: string, body: SwimFields, roundTrip: boolean): void {
    const swim = this.#swim;
    if (!swim || !roundTrip || !this.#c.peers.registry.get(hex)) return;
    if (body.incarnation !== undefined) swim.heard(hex, body.incarnation);
    if (!body.updates || body.updates.length === 0) return;
    if (!swim.isLive(hex)) {
      this.counters.gossipIgnored++;
      return;
    }
    swim.incoming(
      body.updates.map((u) => ({ id: toHex(u.id), state: u.state, incarnation: u.incarnation })),
      hex,
    );
  }

  async #serveIndirect(
    requester: string,
    target: Uint8Array,
    timeoutMs: number,
    verified: boolean,
  ): Promise<Response> {
    const swim = this.#swim!;
    const targetHex = toHex(target);
    const peers = this.#c.peers;
    const member = peers.member(targetHex);
    if (
      !verified ||
      !peers.member(requester) ||
      !swim.isLive(requester) ||
      targetHex === requester ||
      !member
    ) {
      this.counters.indirectRefused++;
      return { type: 'INDIRECT_ACK', acked: false };
    }
    this.counters.indirectServed++;
    const contact = { id: target, ip: member.ip, port: member.port };
    const wait = Math.min(timeoutMs, MAX_PING_REQ_TIMEOUT_MS);
    const r = await this.#request(contact, this.decorate({ type: 'PING' }, targetHex), wait, 1);
    return { type: 'INDIRECT_ACK', acked: r?.body.type === 'PONG' };
  }

  async #ping(hex: string, timeoutMs: number): Promise<boolean> {
    const rec = this.#c.peers.registry.get(hex);
    if (!rec) return false;
    const c = rec.contact;
    const r = await this.#request(c, this.decorate({ type: 'PING' }, hex), timeoutMs, 1);
    return r?.body.type === 'PONG';
  }

  async #pingVia(via: string, target: string, timeoutMs: number): Promise<boolean> {
    const helper = this.#c.peers.registry.get(via);
    const t = this.#c.peers.registry.get(target);
    if (!helper || !t) return false;
    // The helper gets most of what is left, so its answer can still arrive in time.
    const ask = Math.max(1, Math.min(MAX_PING_REQ_TIMEOUT_MS, Math.floor(timeoutMs * 0.8)));
    const body: Request = { type: 'PING_REQ', target: t.contact.id, timeoutMs: ask };
    const r = await this.#request(helper.contact, body, timeoutMs, 0);
    return r?.body.type === 'INDIRECT_ACK' && r.body.acked;
  }

  #gossip(hex: string, updates: SwimUpdate[]): void {
    const swim = this.#swim;
    const rec = this.#c.peers.registry.get(hex);
    if (!swim || !rec) return;
    const body: Request = {
      type: 'PING',
      incarnation: swim.incarnation,
      updates: this.#wireUpdates(updates),
    };
    // A member told of its own suspicion gets the retransmissions of a request (answering clears
    // the suspicion here); other gossip goes once.
    const aboutIt = updates.some((u) => u.id === hex);
    void this.#request(rec.contact, body, swim.suspicionMs(), aboutIt ? 2 : 0);
  }

  /** A request that gives up after `timeoutMs` of clock time; undefined on any failure. */
  async #request(
    to: Contact,
    body: Request,
    timeoutMs: number,
    retries: number,
  ): Promise<{ body: Response } | undefined> {
    const ac = new AbortController();
    const timer: TimerHandle = this.#c.clock.setTimeout(() => ac.abort(), timeoutMs);
    try {
      return await this.#c.rpc().request(to, body, { signal: ac.signal, retries });
    } catch {
      return undefined;
    } finally {
      timer.cancel();
    }
  }

  #wireUpdates(updates: SwimUpdate[]): WireMemberUpdate[] {
    return updates
      .slice(0, MAX_MEMBER_UPDATES)
      .map((u) => ({ id: fromHex(u.id), state: u.state, incarnation: u.incarnation }));
  }

  #changed(hex: string, state: SwimState, from: SwimState | undefined): void {
    const rec = this.#c.peers.registry.get(hex);
    if (!rec) return;
    const c = rec.contact;
    const change: MemberChange = {
      id: hex,
      ip: c.ip,
      port: c.port,
      state,
      from,
      incarnation: this.#swim?.record(hex)?.incarnation ?? 0,
    };
    if (c.httpPort) change.httpPort = c.httpPort;
    this.#c.onChange?.(change);
  }
}
