/**
 * Fetches in flight: at most one registered transfer per URL, which later requests may join
 * (request coalescing, Varnish's waiting list, nginx's `proxy_cache_lock`) when its response turns
 * out reusable for them (../cache/decide.ts: `mayShareWithWaiter` for those that waited for its
 * head, `mayJoin` for those that came after it). A response that may not be shared releases its
 * waiters at once, each to a fetch of its own, and its URL is remembered for
 * `HIT_FOR_MISS_SECONDS` (hit-for-miss): meanwhile its misses are not registered, so the next
 * crowd goes to the origin side by side instead of queueing behind one fetch to learn it again. A miss that fleet members may answer goes to the member designated for its URL
 * (../peer/rendezvous.ts), or straight to the origin when that is this node; when the designated
 * member does not answer, or there is no membership to choose from, to the holders the index
 * knows (./peer.ts), then to the origin (./origin.ts). A transfer stays registered until its body is committed, so there
 * is no window in which a second fetch of the same object could start.
 */
import { mayJoin, mayShareWithWaiter, staleOnErrorOk } from '../cache/decide.js';
import type { Fwd } from '../cache/decide.js';
import { announceFetching } from '../commit/announce.js';
import {
  HIT_FOR_MISS_MAX_ENTRIES,
  HIT_FOR_MISS_SECONDS,
  PEER_PENALTY_LIFT_WINDOW_MS,
  PEER_PENALTY_MS,
} from '../constants.js';
import { ProxyError } from '../errors.js';
import { PeerPenalties } from '../peer/penalties.js';
import type { ProxyCore, RequestCtx } from '../kit/core.js';
import { sendError } from '../kit/respond.js';
import { forwardInfo, serveOutcome } from '../serve/outcome.js';
import type { StoredMeta } from '../store/types.js';
import { Transfer } from '../transfer/transfer.js';
import type { Outcome } from '../transfer/transfer.js';
import { fetchFromOrigin } from './origin.js';
import type { FetchJob } from './job.js';
import { forwardHeaders } from './request-headers.js';
import { chooseFetcher } from '../peer/rendezvous.js';
import { fetchFromPeers, peerTargets } from './peer.js';

export interface FetchPlan {
  fwd: Fwd;
  /** The stored response to revalidate (conditional request, stale-if-error fallback). */
  stale?: StoredMeta | undefined;
  /** May fleet members answer it? */
  peers: boolean;
  /** May other requests join it? */
  register: boolean;
}

export class Fetcher {
  readonly #core: ProxyCore;
  readonly #inflight = new Map<string, Transfer>();
  readonly #penalties: PeerPenalties;
  /** Hit-for-miss: URLs (hex urlKey) whose last response could not be shared → until (ms). */
  readonly #unshared = new Map<string, number>();

  constructor(core: ProxyCore) {
    this.#core = core;
    const members = core.members;
    this.#penalties = new PeerPenalties(
      {
        clock: core.clock,
        ...(members?.generation ? { generation: (id) => members.generation!(id) } : {}),
      },
      { penaltyMs: PEER_PENALTY_MS, liftWindowMs: PEER_PENALTY_LIFT_WINDOW_MS },
    );
  }

  /** Is the URL (hex urlKey) remembered as unshareable (hit-for-miss) right now? */
  passing(primary: string): boolean {
    const until = this.#unshared.get(primary);
    if (until === undefined) return false;
    if (until > this.#core.clock.now()) return true;
    this.#unshared.delete(primary);
    return false;
  }

  /**
   * What a coalescing fetch's outcome teaches about its URL: a shared response ends hit-for-miss;
   * one that could not be shared starts it — unless it was a 5xx, whose waiters are released to
   * fetches of their own but whose next crowd still queues, sparing an origin in trouble.
   */
  #learn(primary: string, o: Outcome): void {
    if (o.kind === 'entry') {
      this.#unshared.delete(primary);
      return;
    }
    if (o.kind !== 'stream') return;
    if (o.head.shareable) {
      this.#unshared.delete(primary);
      return;
    }
    if (o.head.status >= 500) return;
    this.#unshared.delete(primary); // re-inserted last: the map is oldest first
    this.#unshared.set(primary, this.#core.clock.now() + HIT_FOR_MISS_SECONDS * 1000);
    if (this.#unshared.size > HIT_FOR_MISS_MAX_ENTRIES) {
      const oldest = this.#unshared.keys().next();
      if (!oldest.done) this.#unshared.delete(oldest.value);
    }
  }

  /** The registered fetch of a URL (hex urlKey), if any. */
  inflight(primary: string): Transfer | undefined {
    return this.#inflight.get(primary);
  }

  /** Fetch for `ctx` and serve it the outcome. */
  async fetchAndServe(ctx: RequestCtx, plan: FetchPlan): Promise<void> {
    const t = this.start(ctx, plan);
    t.addReader();
    const o = await this.#await(ctx, t);
    return serveOutcome(this.#core, ctx, t, o, false, () =>
      this.fetchAndServe(ctx, { ...plan, stale: undefined }),
    );
  }

  /**
   * Join `t` if its response is reusable for `ctx`; otherwise `fallback` (a fetch of its own, or a
   * refusal for peers and only-if-cached requests).
   */
  async join(ctx: RequestCtx, t: Transfer, fallback: FetchPlan | 'refuse'): Promise<void> {
    const core = this.#core;
    t.joiners++;
    core.metrics?.joined?.();
    t.addReader(); // before any await: the body is not released under a joiner
    // A waiter (joined before the response's head) may share more than a late joiner.
    const reusable = t.settled ? mayJoin : mayShareWithWaiter;
    const o = await this.#await(ctx, t);
    const now = core.clock.now();
    let ok = true;
    if (o.kind === 'stream') {
      const h = o.head;
      ok =
        h.shareable &&
        !(ctx.peer && h.peerVerified === false) &&
        reusable(ctx.cache, { ...h }, now, core.policy);
    } else if (o.kind === 'entry') {
      ok =
        o.detail === 'stale-if-error' || o.detail === 'stale-on-error'
          ? staleOnErrorOk(ctx.cache, o.meta, now, core.policy)
          : reusable(ctx.cache, o.meta, now, core.policy);
    }
    if (!ok) {
      t.removeReader();
      if (fallback === 'refuse' || ctx.peer) return this.refuse(ctx, 'no reusable response');
      return this.fetchAndServe(ctx, { ...fallback, register: false, peers: false });
    }
    return serveOutcome(core, ctx, t, o, true, () =>
      fallback === 'refuse'
        ? Promise.resolve(this.refuse(ctx, 'not held'))
        : this.fetchAndServe(ctx, { ...fallback, register: false, peers: false, stale: undefined }),
    );
  }

  refuse(ctx: RequestCtx, why: string): void {
    sendError(
      ctx.res,
      ctx.method,
      new ProxyError('CORAL_NOT_CACHED', `${why} (only-if-cached, or a peer request)`),
      this.#core.via,
      this.#core.metrics,
    );
  }

  /** Start a fetch (registered when `plan.register`); the caller decides who reads it. */
  start(ctx: RequestCtx, plan: FetchPlan): Transfer {
    const core = this.#core;
    const t = new Transfer(ctx.primary);
    if (plan.register) {
      // Under hit-for-miss the fetch is nobody's to wait for; its outcome still teaches.
      if (!this.passing(ctx.primary)) this.#inflight.set(ctx.primary, t);
      void t.outcome.then((o) => this.#learn(ctx.primary, o));
    }
    const unregister = () => {
      if (this.#inflight.get(ctx.primary) === t) this.#inflight.delete(ctx.primary);
    };
    const task = this.#run(ctx, t, plan, unregister)
      .catch((e: unknown) => {
        const err =
          e instanceof ProxyError ? e : new ProxyError('CORAL_ORIGIN_UNREACHABLE', String(e));
        core.log.debug({ url: ctx.url, err: err.message }, 'fetch failed');
        t.settle({ kind: 'error', error: err });
        t.fail(err);
      })
      .finally(() => {
        unregister();
        t.bodySettled();
        core.tasks.delete(task);
      });
    core.tasks.add(task);
    return t;
  }

  async #await(ctx: RequestCtx, t: Transfer): Promise<Outcome> {
    if (t.settled) return t.outcome;
    const off = t.onInfo((status, headers) => forwardInfo(ctx, status, headers));
    try {
      return await t.outcome;
    } finally {
      off();
    }
  }

  async #run(ctx: RequestCtx, t: Transfer, plan: FetchPlan, unregister: () => void): Promise<void> {
    const core = this.#core;
    const job: FetchJob = {
      ctx,
      transfer: t,
      headers: forwardHeaders(core, ctx),
      unregister,
      notMembers: 0,
    };
    const get = ctx.method === 'GET';
    // Members first (a GET they may answer): the designated one, else the index's holders.
    const fleet = plan.peers && get ? await this.#designated(job) : undefined;
    if (fleet === 'served') return;
    const found =
      fleet === 'index' ? await peerTargets(core, ctx.keyBytes, this.#penalties) : undefined;
    if (found) job.notMembers = found.notMembers;
    // "fetching" is announced here only, before anyone is asked: when this node is the
    // designated fetcher, when the index is asked and no claim of ours announced it already,
    // and for a registered fetch the fleet is not asked about.
    const announce =
      fleet === 'self'
        ? true
        : found
          ? !found.claimed
          : fleet === undefined && plan.register && get;
    if (announce) announceFetching(core, ctx.keyBytes);
    const targets = found?.targets.slice(0, core.limits.peerRace) ?? [];
    if (
      targets.length > 0 &&
      (await fetchFromPeers(core, { ...job, targets, penalties: this.#penalties }))
    ) {
      return;
    }
    return fetchFromOrigin(core, { ...job, fwd: plan.fwd, stale: plan.stale });
  }

  /**
   * The member designated for the URL (keyed mode): `self` when it is this node (it fetches from
   * the origin), `served` when the member asked is answering, `index` when the index decides
   * (no designation, the member is penalized, down, or sees the membership differently).
   */
  async #designated(job: FetchJob): Promise<'self' | 'served' | 'index'> {
    const core = this.#core;
    const { ctx } = job;
    // This node's own origin policy before any member is asked: a member fetches from the
    // origin on our behalf (the designated one) or serves what it fetched, and an origin this
    // node would refuse (a name mapped to a private or link-local address) is refused here,
    // whatever the member would have done.
    if (core.members) await core.checkOrigin(ctx.url);
    // One fetcher per object: the designated member (peer/rendezvous.ts) fetches, the others ask
    // it. Keyed mode only: in open mode nothing authenticates an ask, and none is taken.
    const choice = core.peerAuth
      ? chooseFetcher(core.members, core.self.nodeId, ctx.keyBytes)
      : undefined;
    if (choice?.kind === 'self') {
      core.metrics?.designated?.('self');
      return 'self';
    }
    if (choice?.kind === 'member' && !this.#penalties.penalized(choice.member.nodeId)) {
      const { nodeId, ip, httpPort } = choice.member;
      const target = { holder: { nodeId, ip, httpPort, state: 'fetching' as const }, ip, httpPort };
      const served = await fetchFromPeers(core, {
        ...job,
        targets: [target],
        penalties: this.#penalties,
        designated: true,
      });
      if (served) {
        core.metrics?.designated?.('asked');
        return 'served';
      }
      // It is down, or sees the membership differently: the index and its claims decide.
    }
    return 'index';
  }
}
