/**
 * Fetching an object from other proxies that announced it. The nearest few holders are raced: a
 * request goes to each at once, the first to answer 200 wins and the others are aborted. Every
 * wait is bounded on the injected clock (a per-holder patience for the answer, then an idle bound
 * for each body chunk), so a refusing, stalled or dead peer costs at most that before the caller
 * falls back to the origin.
 * Holders are reached only at their verified member address (`PeerTarget`, ./members.ts), never
 * at an address from the holder record, through the peer connector (./connector.ts).
 * A peer request carries the peer header, `Cache-Control: only-if-cached` and, with a `PeerAuth`,
 * `Coral-Peer-Auth`: the peer answers from its cache or an in-flight fetch, or 504, and never
 * fetches on our behalf. The one exception is the ask of the member designated to fetch the URL
 * (`designated`, ./rendezvous.ts): it carries the designated marker and the client's own cache
 * directives instead of `only-if-cached`, and that member fetches from the origin on a miss.
 */
import { ioFirst, type Clock, type TimerHandle } from '@coral/runtime';
import type { Holder } from '../content-index.js';
import { DESIGNATED_HEADER, PEER_AUTH_HEADER, PEER_HEADER } from '../constants.js';
import type { Upstream, UpstreamResponse } from '../origin/upstream.js';
import type { PeerAuth } from './auth.js';
import type { PeerConnector } from './connector.js';
import type { PeerTarget } from './members.js';

/** Request fields never sent to a peer. */
const PRIVATE_FIELDS = new Set([
  'cookie',
  'authorization',
  'proxy-authorization',
  PEER_AUTH_HEADER,
]);

export interface PeerRequest {
  /** Path and query of the object. */
  path: string;
  /** Host header the client used (the Coralized or site name): the peer maps it the same way. */
  host: string;
  /** End-to-end request headers to pass (Accept-Encoding etc., for Vary). */
  headers: Record<string, string>;
  /** Our node ID, sent in the peer header. */
  nodeId: string;
  via: string;
  /** Ask the member designated for this URL to fetch it on a miss (one target). */
  designated?: boolean;
  /**
   * With `designated`: the patience once the member answered 102 Processing (it took the ask and
   * is fetching from the origin), replacing the holder's patience: the whole wait for the answer
   * from the first 102 on.
   */
  takenPatienceMs?: number;
  /**
   * With `takenPatienceMs`: the longest wait between one 102 and the next (the member repeats it
   * while it waits on the origin, ./processing.ts); a member that falls silent longer has hung or
   * died, and is given up on then rather than at the end of `takenPatienceMs`.
   */
  beatPatienceMs?: number;
  /**
   * With `designated` and `takenPatienceMs`: is the member still live by the fleet's failure
   * detection? Before its first 102, a member that is still live when the holder's patience runs
   * out is only slow to read the ask (a busy machine), and the wait goes on (looked at every
   * third of a patience), up to `takenPatienceMs` in all: giving up sends the request to the
   * origin, a second fetch of the object. A member that hung or died leaves the live set within
   * seconds.
   */
  live?: (holder: Holder) => boolean;
}

export interface PeerWinner {
  holder: Holder;
  target: PeerTarget;
  response: UpstreamResponse;
  requestTime: number;
  responseTime: number;
  /** Abort the transfer (and the socket). */
  abort(): void;
}

export type PeerEvent =
  | { type: 'peer-error'; holder: Holder; error: string }
  | { type: 'peer-refused'; holder: Holder; status: number }
  /** `silent`: the member had taken the ask (102) and then stopped sending its 102s. */
  | { type: 'peer-timeout'; holders: Holder[]; silent?: boolean }
  | { type: 'peer-processing'; holder: Holder };

/**
 * Race `targets` (already the nearest few members); resolves to the first 200, or undefined once
 * every one has failed or run out of its patience (`patienceMs(holder)` on the clock).
 */
export function racePeers(
  deps: {
    upstream: Upstream;
    clock: Clock;
    connector: PeerConnector;
    auth?: PeerAuth;
    onEvent?: (e: PeerEvent) => void;
  },
  targets: readonly PeerTarget[],
  req: PeerRequest,
  patienceMs: (h: Holder) => number,
): Promise<PeerWinner | undefined> {
  if (targets.length === 0) return Promise.resolve(undefined);
  // Verdicts wait for the I/O that arrived before them (an answer must not lose to its timeout).
  const clock = ioFirst(deps.clock);
  const requestTime = clock.now();
  const holders = targets.map((t) => t.holder);
  // The member addresses being asked may be connected to while the race lasts.
  const releases = targets.map((t) => deps.connector.sanction(t.ip, t.httpPort));
  // A member serves only shared copies: the client's credentials are none of its business.
  const endToEnd: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (!PRIVATE_FIELDS.has(k)) endToEnd[k] = v;
  return new Promise<PeerWinner | undefined>((settle) => {
    // The winner has its connection once its answer is here; the losers are aborted.
    const resolve = (w: PeerWinner | undefined) => {
      for (const r of releases) r();
      settle(w);
    };
    let pending = holders.length;
    let done = false;
    const controllers = holders.map(() => new AbortController());
    const lost = holders.map(() => false);
    // The end of the taken patience, from each member's first 102.
    const deadlines: (number | undefined)[] = holders.map(() => undefined);
    const taken = req.takenPatienceMs;
    const expire = (i: number, ms: number, silent = false): TimerHandle =>
      clock.setTimeout(() => {
        if (done || lost[i]) return;
        if (
          req.designated &&
          taken !== undefined &&
          deadlines[i] === undefined &&
          clock.now() - requestTime < taken &&
          req.live?.(holders[i]!) === true
        ) {
          // Looked at again a third of a patience later: a member declared dead meanwhile is
          // given up on soon after.
          const step = Math.max(1, Math.floor(patienceMs(holders[i]!) / 3));
          timers[i] = expire(i, Math.min(step, taken - (clock.now() - requestTime)));
          return;
        }
        deps.onEvent?.({ type: 'peer-timeout', holders: [holders[i]!], silent });
        controllers[i]!.abort(new Error('peer timeout'));
        lose(i);
      }, ms);
    const timers = holders.map((holder, i) => expire(i, patienceMs(holder)));
    const lose = (i: number) => {
      if (lost[i]) return;
      lost[i] = true;
      timers[i]!.cancel();
      releases[i]!();
      if (--pending === 0 && !done) {
        done = true;
        resolve(undefined);
      }
    };
    targets.forEach((target, i) => {
      const holder = target.holder;
      const ac = controllers[i]!;
      const host = target.ip.includes(':') ? `[${target.ip}]` : target.ip;
      const url = new URL(`http://${host}:${target.httpPort}${req.path}`);
      // Signed exactly as sent: the Host value and the path undici puts on the request line.
      const path = url.pathname + url.search;
      const headers: Record<string, string> = {
        ...endToEnd,
        host: req.host,
        [PEER_HEADER]: req.nodeId,
        via: req.via,
      };
      if (req.designated) headers[DESIGNATED_HEADER] = '1';
      else headers['cache-control'] = 'only-if-cached';
      if (deps.auth) {
        headers[PEER_AUTH_HEADER] = deps.auth.sign({ method: 'GET', authority: req.host, path });
      }
      const beat = req.beatPatienceMs ?? taken;
      const onInfo =
        req.designated && taken !== undefined && beat !== undefined
          ? (status: number) => {
              if (status !== 102 || done || lost[i]) return;
              const now = clock.now();
              const first = deadlines[i] === undefined;
              const deadline = (deadlines[i] ??= now + taken);
              timers[i]!.cancel();
              const left = deadline - now;
              timers[i] = expire(i, Math.max(0, Math.min(beat, left)), beat < left);
              if (first) deps.onEvent?.({ type: 'peer-processing', holder });
            }
          : undefined;
      deps.upstream
        .request({
          url: url.href,
          method: 'GET',
          headers,
          signal: ac.signal,
          ...(onInfo ? { onInfo } : {}),
        })
        .then(
          (response) => {
            if (done || lost[i] || response.status !== 200) {
              if (!done && !lost[i]) {
                deps.onEvent?.({ type: 'peer-refused', holder, status: response.status });
              }
              response.body.on('error', () => {});
              response.body.destroy();
              lose(i);
              return;
            }
            done = true;
            for (const t of timers) t.cancel();
            controllers.forEach((c, j) => {
              if (j !== i) c.abort(new Error('another peer won'));
            });
            resolve({
              holder,
              target,
              response,
              requestTime,
              responseTime: clock.now(),
              abort: () => ac.abort(new Error('peer transfer aborted')),
            });
          },
          (err: unknown) => {
            if (!done && !lost[i]) {
              deps.onEvent?.({
                type: 'peer-error',
                holder,
                error: (err as { code?: string }).code ?? String(err),
              });
            }
            lose(i);
          },
        );
    });
  });
}
