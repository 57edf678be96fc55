/**
 * The RPC stack of a starting node, every part given to its constructor: the authenticator
 * (keyed or open, its isolation reported to the log and as the node's 'isolated' event), keyed
 * mode's key notices (a peer not accepting this node's key id reported as 'key-rejected'), the write
 * tokens, the per-source limiter, the request handlers (`NodeHandlers`: failure detection's
 * messages, then one handler per message type), the membership observer (`MembershipObserver`)
 * and failure detection's PING fields. A node builds a fresh one at every start.
 */
import { DatagramAuth, type IsolationState } from '../auth/datagram-auth.js';
import { KeyNotices, type KeyRejection } from '../auth/key-notices.js';
import { KBUCKET_SIZE, MAX_IDS_PER_IP, WALK_CONTACTS } from '../constants.js';
import type { NodeContext } from '../context.js';
import { SourceLimiter } from '../limits/rate-limiter.js';
import { MembershipObserver } from '../membership/rpc-observer.js';
import { authStateOf } from '../snapshot.js';
import { NodeHandlers } from './handlers/index.js';
import { Rpc } from './rpc.js';
import { WriteTokens } from './tokens.js';

export interface NodeRpcHooks {
  /** Keyed mode: a datagram came under a key id this node lacks (judge isolation soon). */
  onUnknownKey: () => void;
}

export function createNodeRpc(
  ctx: NodeContext,
  hooks: NodeRpcHooks,
): { rpc: Rpc; auth: DatagramAuth } {
  const { clock, options } = ctx;
  const auth = new DatagramAuth(
    {
      clock,
      keyring: ctx.keyring,
      onIsolation: (state) => isolationChanged(ctx, state),
      onUnknownKey: hooks.onUnknownKey,
    },
    options.auth,
  );
  const noticeOptions = options.auth?.keyNotices;
  const notices = ctx.keyring
    ? new KeyNotices(
        { clock, heard: () => auth.heardLately, onReport: (r) => keyRejected(ctx, r) },
        noticeOptions === false ? { send: false } : noticeOptions,
      )
    : undefined;
  const detector = ctx.detector;
  const peers = ctx.peers;
  const rpc = new Rpc(
    {
      transport: ctx.transport,
      clock,
      random: ctx.random,
      metrics: ctx.metrics,
      logger: ctx.logger,
      auth,
      notices,
      tokens: new WriteTokens({ clock }, { rotateMs: options.tokenRotateMs }),
      limiter: new SourceLimiter(
        { clock },
        { limits: options.rateLimits, netMultiplier: options.netRateMultiplier },
      ),
      handler: new NodeHandlers({
        clock,
        context: {
          table: (l) => peers.tables[l],
          store: ctx.store,
          k: options.k ?? KBUCKET_SIZE,
          walkContacts: options.walkContacts ?? WALK_CONTACTS,
        },
        detector,
      }),
      observer: new MembershipObserver(ctx),
      decorate: detector ? (body, to) => detector.outgoing(body, to) : undefined,
    },
    {
      self: () => ctx.contact,
      timeoutMs: options.rpcTimeoutMs,
      retries: options.rpcRetries,
      backoff: options.rpcBackoff,
      allowNat: options.allowNat,
      maxIdsPerIp: options.maxIdsPerIp ?? MAX_IDS_PER_IP,
      unverifiedReplies: options.unverifiedReplies,
    },
  );
  return { rpc, auth };
}

function isolationChanged(ctx: NodeContext, iso: IsolationState): void {
  const state = authStateOf(ctx.reports());
  if (iso.isolated)
    ctx.logger.error(
      { reason: iso.reason, unknownKeyIds: iso.unknownKeyIds },
      'dsht isolated: fleet keys changed without this node',
    );
  else
    ctx.logger.warn(
      { keyIds: state.keyIds },
      'dsht no longer isolated: authenticated traffic again',
    );
  ctx.events.emit('isolated', state);
}

function keyRejected(ctx: NodeContext, r: KeyRejection): void {
  ctx.logger.debug(
    { keyId: r.keyId, from: r.from, notices: r.notices, fleetHeard: r.fleetHeard },
    "dsht: a peer does not accept this node's key id",
  );
  ctx.events.emit('key-rejected', r);
}
