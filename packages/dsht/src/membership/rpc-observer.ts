/**
 * What a node's RPC layer tells its membership (the `observer` of its `Rpc`): a round trip admits
 * the sender as a member (and into the tables that admit it), an answer feeds failure detection,
 * an RTT sample of a member goes out as the node's 'rtt' event, and a peer met for the first time
 * gets this node introduced to it.
 */
import type { Address, Contact } from '../contact.js';
import { INTRODUCE_DELAY_MS } from '../constants.js';
import type { NodeContext } from '../context.js';
import { addressKey, toHex } from '../id/id.js';
import type { RpcObserver } from '../rpc/rpc.js';
import type { Response } from '../wire/messages.js';

export class MembershipObserver implements RpcObserver {
  readonly #ctx: NodeContext;

  constructor(ctx: NodeContext) {
    this.#ctx = ctx;
  }

  seen(sender: Contact, roundTrip: boolean, from: Address): void {
    if (roundTrip) this.#ctx.peers.learn(sender, from.ip);
  }

  answered(sender: Contact, body: Response): void {
    this.#ctx.detector?.answered(sender, body);
  }

  rtt(sender: Contact, rttMs: number): void {
    const ctx = this.#ctx;
    if (ctx.peers.registry.has(toHex(sender.id))) ctx.events.emit('rtt', sender, rttMs);
  }

  /**
   * Introduce this node to a peer met for the first time: a PING with its fresh token is the round
   * trip the peer needs before it may admit this node (see Peers.wantsIntroduction).
   */
  firstToken(peer: Contact): void {
    const ctx = this.#ctx;
    const rpc = ctx.rpc;
    const addr = addressKey(peer.ip, peer.port);
    ctx.clock.setTimeout(() => {
      // A lookup that asked the peer again in the meantime has introduced this node already;
      // judged late, so a joining node's tables have filled (see Peers.wantsIntroduction).
      if (!ctx.running || rpc.peerTokens.used(addr) || !ctx.peers.wantsIntroduction(peer)) return;
      // An introduction that goes unanswered is counted by the Rpc (timeouts) and judged by the
      // failure detector; nothing more to do with it here.
      void rpc.request(peer, { type: 'PING' }, { retries: 0 }).catch(() => undefined);
    }, INTRODUCE_DELAY_MS);
  }
}
