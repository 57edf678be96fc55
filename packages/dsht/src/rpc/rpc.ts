/**
 * The RPC layer: request/answer over datagrams with random transaction ids, per-peer adaptive
 * timeouts, retransmission with exponential backoff, and a smoothed RTT from every round trip.
 *
 * Receive path, in order; each step counts what it drops, and nothing before step 5 changes state:
 * 1. the datagram frame (`DatagramAuth`): keyed mode drops unauthenticated, unknown-key, bad-MAC,
 *    stale and replayed datagrams before reading the payload;
 * 2. the payload is decoded and validated (`malformed`);
 * 3. the sender's claimed id must be SHA-1 of its advertised address and its advertised IP the
 *    source IP, unless `allowNat` (`spoofed`);
 * 4. an answer must match a pending request from that address (`unexpected`); contacts listed in it
 *    whose id is not SHA-1 of their address are dropped (`listedIdMismatch`), as are more than
 *    `maxIdsPerIp` per IP (`listedIpLimited`);
 * 5. a request proves a round trip only with this node's write token for its source address.
 *    STORE (and PING_REQ, LEAVE) without one are refused with a fresh token (`tokenRefused`) — no
 *    state, no rate bucket. The reads (PING, FIND_NODE, GET, STORE_PROBE) are answered without
 *    one, as BEP 5 answers get_peers and asks its token only of announce_peer. Every request then
 *    passes its per-source token buckets (`rateLimited`).
 * 6. the answer carries a token for the requester's address. To a requester that proved no round
 *    trip it is never larger than the request (lists trimmed, then a minimal sender, else no
 *    answer: `amplificationDropped`), and such answers share one global rate.
 *
 * A request sent to a peer this node holds no fresh token from is padded (FIRST_CONTACT_PAD_BYTES)
 * so the peer can answer in full; an answer refused for want of a token, or trimmed, is asked
 * again once with the token it brought.
 *
 * Keyed mode, besides: a datagram dropped at step 1 because this node lacks its key id may be
 * answered with a 13-byte key notice, and a notice answering one of this node's first-contact
 * requests is reported (auth/key-notices.ts) — a hint, which changes no state.
 */
import type { Clock, Random, TimerHandle } from '@coral/runtime';
import { DatagramAuth } from '../auth/datagram-auth.js';
import { KeyNotices } from '../auth/key-notices.js';
import type { Address, Contact } from '../contact.js';
import {
  FIRST_CONTACT_PAD_BYTES,
  MAX_DATAGRAM_BYTES,
  MAX_IDS_PER_IP,
  RPC_BACKOFF,
  RPC_MAX_TIMEOUT_MS,
  RPC_MIN_TIMEOUT_MS,
  RPC_RETRIES,
  RPC_TIMEOUT_MS,
  RTT_PEERS,
  UNVERIFIED_REPLIES_BURST,
  UNVERIFIED_REPLIES_PER_SECOND,
} from '../constants.js';
import { AbortedError, DshtError, RemoteError, RpcTimeoutError } from '../errors.js';
import { addressKey, verifiedContact } from '../id/id.js';
import { hostKey } from '../limits/address.js';
import { GlobalBucket, SourceLimiter } from '../limits/rate-limiter.js';
import { decodePayload, encodePayload } from '../wire/codec.js';
import {
  WireErrorCode,
  type Message,
  type Request,
  type RequestType,
  type Response,
} from '../wire/messages.js';
import type { Transport } from '../transport/transport.js';
import type { RequestSource } from './handlers/context.js';
import { RttTable } from './rtt.js';
import { PeerTokens, WriteTokens } from './tokens.js';

export interface DshtMetrics {
  rpc(type: string, outcome: 'ok' | 'timeout' | 'error'): void;
  lookup(kind: 'get' | 'put', hops: number, latencyMs: number): void;
}

export interface Logger {
  debug(obj: unknown, msg?: string): void;
  info(obj: unknown, msg?: string): void;
  warn(obj: unknown, msg?: string): void;
  error(obj: unknown, msg?: string): void;
}

export interface RpcComponents {
  transport: Transport;
  clock: Clock;
  random: Random;
  metrics?: DshtMetrics;
  logger?: Logger;
  /** Datagram framing / authentication. Default: open mode. */
  auth?: DatagramAuth;
  /** Keyed mode: key notices sent and read. Default (keyed): a KeyNotices with its defaults. */
  notices?: KeyNotices;
  /** Write tokens this node issues. Default: a WriteTokens on the clock. */
  tokens?: WriteTokens;
  /** Per-source request limits. Default: a SourceLimiter with RATE_LIMITS. */
  limiter?: SourceLimiter;
  /** Answers incoming requests. Default: every request answered ERROR INTERNAL "no handler". */
  handler?: RequestHandler;
  /** Told of every verified sender, answer, RTT sample and first token. */
  observer?: RpcObserver;
  /** Completes an outgoing request's body just before it is sent (failure detection's PING fields). */
  decorate?: (body: Request, to: Address) => Request;
}

/** What the RPC layer tells its owner, in this order for an answer: seen, answered, rtt. */
export interface RpcObserver {
  /**
   * Every verified datagram's sender (request or answer). `roundTrip` is true for answers to this
   * node's requests and for requests carrying its write token: only those prove the address.
   */
  seen?(sender: Contact, roundTrip: boolean, from: Address): void;
  /** Every answer to this node's requests (a round trip), after `seen`. */
  answered?(sender: Contact, body: Response): void;
  /** Every RTT sample, after the smoothed estimate was updated. */
  rtt?(sender: Contact, rttMs: number): void;
  /**
   * A peer handed this node its first (or first fresh) token, and no request carrying it is on the
   * way: the owner may send one (a PING) so the peer, too, sees a round trip and can admit this
   * node — peers only learn contacts from requests that carry their token.
   */
  firstToken?(peer: Contact): void;
}

export interface RpcOptions {
  /** This node's contact as sent in every message (called per message: clusters may change). */
  self: () => Contact;
  /** First-attempt timeout to a peer with no RTT estimate. Default RPC_TIMEOUT_MS. */
  timeoutMs?: number;
  minTimeoutMs?: number;
  maxTimeoutMs?: number;
  /** Retransmissions. Default RPC_RETRIES (2). */
  retries?: number;
  /** Backoff multiplier. Default RPC_BACKOFF (2). */
  backoff?: number;
  /** Accept senders whose advertised IP differs from the source IP. Default false. */
  allowNat?: boolean;
  /** Contacts per IP kept from a listed answer. Default MAX_IDS_PER_IP (1). */
  maxIdsPerIp?: number;
  /** Replies per second to requesters that proved no round trip (all together). */
  unverifiedReplies?: { perSecond: number; burst: number };
}

export interface RpcReply {
  body: Response;
  sender: Contact;
  rttMs: number;
  /** The answer was trimmed by a peer that saw no round trip (asked again once; still trimmed). */
  truncated?: boolean;
}

export interface RpcCounters {
  requestsSent: number;
  requestsReceived: number;
  responsesReceived: number;
  retransmits: number;
  timeouts: number;
  malformed: number;
  spoofed: number;
  unexpected: number;
  /** Answers' listed contacts dropped: id is not SHA-1(ip:port). */
  listedIdMismatch: number;
  /** Answers' listed contacts dropped: more than maxIdsPerIp from one IP. */
  listedIpLimited: number;
  /** STORE, PING_REQ or LEAVE refused for want of a valid write token (no state created). */
  tokenRefused: number;
  /** Requests dropped by a per-source or the global unverified-reply bucket. */
  rateLimited: number;
  /** Requests asked again with a token after a token refusal or a trimmed answer. */
  tokenRetries: number;
  /** Requests sent padded (no fresh token from the peer). */
  padded: number;
  /** Requests from sources that proved no round trip, and the bytes in and out for them. */
  unverifiedRequests: number;
  unverifiedBytesIn: number;
  unverifiedBytesOut: number;
  /** Answers to unverified sources trimmed to the request's size, and those not sent at all. */
  amplificationTrimmed: number;
  amplificationDropped: number;
  /** Largest answer/request size ratio sent to an unverified source, overall and by request type. */
  amplificationMax: number;
  amplificationMaxByType: Record<string, number>;
  byType: Record<string, { ok: number; timeout: number; error: number }>;
}

/** Counters of an RPC layer that has sent and received nothing yet. */
export function emptyCounters(): RpcCounters {
  return {
    requestsSent: 0,
    requestsReceived: 0,
    responsesReceived: 0,
    retransmits: 0,
    timeouts: 0,
    malformed: 0,
    spoofed: 0,
    unexpected: 0,
    listedIdMismatch: 0,
    listedIpLimited: 0,
    tokenRefused: 0,
    rateLimited: 0,
    tokenRetries: 0,
    padded: 0,
    unverifiedRequests: 0,
    unverifiedBytesIn: 0,
    unverifiedBytesOut: 0,
    amplificationTrimmed: 0,
    amplificationDropped: 0,
    amplificationMax: 0,
    amplificationMaxByType: {},
    byType: {},
  };
}

interface Pending {
  txid: number;
  to: Address;
  sentAt: number;
  resolve: (r: RpcReply) => void;
  reject: (e: Error) => void;
  timer: TimerHandle | undefined;
}

/** Answers a request: at once, or later (an indirect probe waits for its own ping). */
export interface RequestHandler {
  handle(
    req: Request,
    sender: Contact,
    from: Address,
    source: RequestSource,
  ): Response | Promise<Response>;
}

const NO_HANDLER: RequestHandler = {
  handle: () => ({ type: 'ERROR', code: WireErrorCode.INTERNAL, message: 'no handler' }),
};

/**
 * Requests refused without a write token (no state, no rate bucket, a token in answer): the one
 * that writes, and the ones that act on the membership (an indirect probe, a leave). STORE_PROBE
 * is a read — a put's question "are you full or loaded for this key?", with closer contacts — and
 * tells a stranger less than GET does, so it is answered like GET: within the request's size until
 * a round trip. (Refusing it cost a put's walk a second round trip at every node it had not met in
 * the last token period: 249,000 refusals in the 10,000-node simulation, ~10 % of its datagrams.)
 */
const NEED_TOKEN: ReadonlySet<RequestType> = new Set(['STORE', 'PING_REQ', 'LEAVE']);

function internalError(err: unknown): Response {
  return {
    type: 'ERROR',
    code: WireErrorCode.INTERNAL,
    message: String((err as Error)?.message ?? err),
  };
}

const TOKEN_REFUSAL: Response = {
  type: 'ERROR',
  code: WireErrorCode.TOKEN_REQUIRED,
  message: 'token',
};

export class Rpc {
  #transport: Transport;
  #clock: Clock;
  #random: Random;
  #metrics: DshtMetrics | undefined;
  #self: () => Contact;
  #timeout: number;
  #minTimeout: number;
  #maxTimeout: number;
  #retries: number;
  #backoff: number;
  #allowNat: boolean;
  #maxIdsPerIp: number;
  #pending = new Map<number, Pending>();
  /** Scratch list of `#filterListed`. */
  readonly #listedHosts: string[] = [];
  readonly auth: DatagramAuth;
  /** Key notices (keyed mode only). */
  readonly notices: KeyNotices | undefined;
  readonly tokens: WriteTokens;
  readonly peerTokens: PeerTokens;
  readonly limiter: SourceLimiter;
  readonly unverifiedReplies: GlobalBucket;
  readonly rtt = new RttTable(RTT_PEERS);
  readonly counters: RpcCounters = emptyCounters();
  readonly #handler: RequestHandler;
  readonly #observer: RpcObserver;
  readonly #decorate: ((body: Request, to: Address) => Request) | undefined;
  /** Set by `#encodeRequest`: the request it just sealed went padded (no token from the peer). */
  #padded = false;

  constructor(components: RpcComponents, options: RpcOptions) {
    this.#transport = components.transport;
    this.#clock = components.clock;
    this.#random = components.random;
    this.#metrics = components.metrics;
    this.#handler = components.handler ?? NO_HANDLER;
    this.#observer = components.observer ?? {};
    this.#decorate = components.decorate;
    this.#self = options.self;
    this.#timeout = options.timeoutMs ?? RPC_TIMEOUT_MS;
    this.#minTimeout = options.minTimeoutMs ?? RPC_MIN_TIMEOUT_MS;
    this.#maxTimeout = options.maxTimeoutMs ?? RPC_MAX_TIMEOUT_MS;
    this.#retries = options.retries ?? RPC_RETRIES;
    this.#backoff = options.backoff ?? RPC_BACKOFF;
    this.#allowNat = options.allowNat ?? false;
    this.#maxIdsPerIp = options.maxIdsPerIp ?? MAX_IDS_PER_IP;
    const clock = this.#clock;
    this.auth = components.auth ?? new DatagramAuth({ clock });
    this.notices =
      this.auth.mode === 'keyed' ? (components.notices ?? new KeyNotices({ clock })) : undefined;
    this.tokens = components.tokens ?? new WriteTokens({ clock });
    this.peerTokens = new PeerTokens({ clock }, { maxAgeMs: this.tokens.rotateMs });
    this.limiter = components.limiter ?? new SourceLimiter({ clock });
    this.unverifiedReplies = new GlobalBucket(
      { clock },
      options.unverifiedReplies ?? {
        perSecond: UNVERIFIED_REPLIES_PER_SECOND,
        burst: UNVERIFIED_REPLIES_BURST,
      },
    );
    this.#transport.onDatagram((data, from) => this.#receive(data, from));
  }

  get pendingCount(): number {
    return this.#pending.size;
  }

  /**
   * Send `body` to `to` and wait for the answer, retransmitting on timeout. Rejects with
   * RpcTimeoutError, RemoteError (the peer answered ERROR) or AbortedError.
   */
  request(
    to: Address,
    body: Request,
    opts: { signal?: AbortSignal; retries?: number } = {},
  ): Promise<RpcReply> {
    const signal = opts.signal;
    if (signal?.aborted) return Promise.reject(new AbortedError());
    if (this.#decorate) body = this.#decorate(body, to);
    const retries = opts.retries ?? this.#retries;
    const peer = addressKey(to.ip, to.port);
    const type = body.type;
    const stats = (this.counters.byType[type] ??= { ok: 0, timeout: 0, error: 0 });
    return new Promise<RpcReply>((resolve, reject) => {
      let attempt = 0;
      let current: Pending | undefined;
      let done = false;
      let askedWithToken = false;
      /** Key notices that would answer this request's first-contact attempts (keyed mode). */
      let expected: number[] | undefined;
      const finish = (): void => {
        done = true;
        if (current) {
          current.timer?.cancel();
          this.#pending.delete(current.txid);
        }
        if (expected) for (const h of expected) this.notices!.forget(h);
        signal?.removeEventListener('abort', onAbort);
      };
      const onAbort = (): void => {
        if (done) return;
        finish();
        reject(new AbortedError());
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const send = (): void => {
        if (current) {
          current.timer?.cancel();
          this.#pending.delete(current.txid);
        }
        const txid = this.#newTxid();
        const base = this.rtt.timeout(peer, this.#timeout, this.#minTimeout, this.#maxTimeout);
        const wait = Math.min(
          this.#maxTimeout * this.#backoff ** this.#retries,
          base * this.#backoff ** attempt,
        );
        const p: Pending = {
          txid,
          to,
          sentAt: this.#clock.now(),
          resolve: (r) => {
            // Refused for want of a token, or trimmed: ask once more with the token it brought.
            const refused = r.body.type === 'ERROR' && r.body.code === WireErrorCode.TOKEN_REQUIRED;
            if ((refused || r.truncated) && !askedWithToken && this.peerTokens.has(peer)) {
              askedWithToken = true;
              this.counters.tokenRetries++;
              send();
              return;
            }
            finish();
            if (r.body.type === 'ERROR') {
              stats.error++;
              this.#metrics?.rpc(type, 'error');
              reject(new RemoteError(r.body.code, r.body.message));
            } else {
              stats.ok++;
              this.#metrics?.rpc(type, 'ok');
              resolve(r);
            }
          },
          reject: (e) => {
            finish();
            stats.error++;
            this.#metrics?.rpc(type, 'error');
            reject(e);
          },
          timer: undefined,
        };
        current = p;
        this.#pending.set(txid, p);
        p.timer = this.#clock.setTimeout(() => {
          if (done || current !== p) return;
          if (attempt < retries) {
            attempt++;
            this.counters.retransmits++;
            send();
          } else {
            finish();
            this.counters.timeouts++;
            stats.timeout++;
            this.#metrics?.rpc(type, 'timeout');
            reject(new RpcTimeoutError(type, peer, attempt + 1));
          }
        }, wait);
        let data: Uint8Array;
        try {
          data = this.#encodeRequest(txid, body, peer);
        } catch (err) {
          p.reject(
            err instanceof DshtError ? err : new DshtError('DSHT_ERR_TOO_LARGE', String(err)),
          );
          return;
        }
        this.counters.requestsSent++;
        if (this.#padded && this.notices) (expected ??= []).push(this.notices.expect(data, to));
        this.#transport.send(data, to);
      };
      send();
    });
  }

  /** Reject every pending request (on stop). */
  cancelAll(): void {
    for (const p of [...this.#pending.values()]) p.reject(new AbortedError('node stopped'));
  }

  #encodeRequest(txid: number, body: Request, peer: string): Uint8Array {
    const overhead = this.auth.overhead;
    const token = this.peerTokens.take(peer);
    const msg: Message = { kind: 'request', txid, sender: this.#self(), body };
    let padTo = 0;
    this.#padded = !token;
    if (token) msg.token = token;
    else {
      padTo = FIRST_CONTACT_PAD_BYTES[body.type];
      this.counters.padded++;
    }
    const payload = encodePayload(msg, { limit: MAX_DATAGRAM_BYTES - overhead });
    return this.auth.seal(payload, padTo);
  }

  #newTxid(): number {
    for (;;) {
      const t = (this.#random.next() * 4294967296) >>> 0;
      if (!this.#pending.has(t)) return t;
    }
  }

  /** The sender as kept (the memo's shared contact when plain), or undefined when spoofed. */
  #verify(sender: Contact, from: Address): Contact | undefined {
    if (!this.#allowNat && sender.ip !== from.ip) return undefined;
    return verifiedContact(sender);
  }

  #receive(data: Uint8Array, from: Address): void {
    const notices = this.notices;
    if (notices && KeyNotices.is(data)) {
      notices.receive(data, from);
      return;
    }
    const payload = this.auth.open(data);
    if (typeof payload === 'string') {
      if (payload === 'malformed') this.counters.malformed++;
      else if (payload === 'unknownKey' && notices) {
        const notice = notices.answer(data, from);
        if (notice) this.#transport.send(notice, from);
      }
      return;
    }
    let msg: Message;
    try {
      msg = decodePayload(payload);
    } catch {
      this.counters.malformed++;
      return;
    }
    const sender = this.#verify(msg.sender, from);
    if (!sender) {
      this.counters.spoofed++;
      return;
    }
    msg.sender = sender;
    if (msg.kind === 'response') {
      const p = this.#pending.get(msg.txid);
      if (!p || p.to.ip !== from.ip || p.to.port !== from.port) {
        this.counters.unexpected++;
        return;
      }
      this.counters.responsesReceived++;
      const addr = addressKey(from.ip, from.port);
      let first = false;
      if (msg.token) {
        first = !this.peerTokens.has(addr);
        this.peerTokens.set(addr, msg.token);
      }
      this.#filterListed(msg.body);
      const rttMs = this.#clock.now() - p.sentAt;
      this.rtt.sample(addr, rttMs);
      const observer = this.#observer;
      observer.seen?.(msg.sender, true, from);
      observer.answered?.(msg.sender, msg.body);
      observer.rtt?.(msg.sender, rttMs);
      const reply: RpcReply = { body: msg.body, sender: msg.sender, rttMs };
      if (msg.truncated) reply.truncated = true;
      const asksAgain =
        msg.truncated ||
        (msg.body.type === 'ERROR' && msg.body.code === WireErrorCode.TOKEN_REQUIRED);
      p.resolve(reply);
      if (first && !asksAgain) observer.firstToken?.(msg.sender);
      return;
    }
    this.#serve(msg, from, data.length);
  }

  /** Drop listed contacts whose id does not match their address, and extra ids of one IP. */
  #filterListed(body: Response): void {
    if (body.type !== 'NODES' && body.type !== 'VALUES' && body.type !== 'PROBE_RESULT') return;
    const list = body.contacts;
    if (list.length === 0) return;
    // Hosts of the contacts kept so far: a list is short (k = 20), so a scan of them costs less
    // than a map made per answer.
    const hosts = this.#listedHosts;
    hosts.length = 0;
    let kept: Contact[] | undefined;
    for (let i = 0; i < list.length; i++) {
      const c = verifiedContact(list[i]!);
      if (!c) {
        this.counters.listedIdMismatch++;
        kept ??= list.slice(0, i);
        continue;
      }
      const h = hostKey(c.ip);
      let n = 0;
      for (let j = 0; j < hosts.length; j++) if (hosts[j] === h) n++;
      if (n >= this.#maxIdsPerIp) {
        this.counters.listedIpLimited++;
        kept ??= list.slice(0, i);
        continue;
      }
      hosts.push(h);
      if (kept) kept.push(c);
      else list[i] = c;
    }
    hosts.length = 0;
    if (kept) body.contacts = kept;
  }

  #serve(msg: Extract<Message, { kind: 'request' }>, from: Address, size: number): void {
    this.counters.requestsReceived++;
    const addr = addressKey(from.ip, from.port);
    const type: RequestType = msg.body.type;
    const verified = msg.token !== undefined && this.tokens.check(addr, msg.token);
    if (!verified && NEED_TOKEN.has(type)) {
      // No round trip proven: no write, no bucket, no table entry — only a token, within one
      // global rate and no larger than the request.
      this.counters.tokenRefused++;
      if (!this.unverifiedReplies.take()) {
        this.counters.rateLimited++;
        return;
      }
      this.#reply(msg, from, addr, TOKEN_REFUSAL, size, false);
      return;
    }
    if (!this.limiter.allow(type, from.ip)) {
      this.counters.rateLimited++;
      return;
    }
    if (!verified && !this.unverifiedReplies.take()) {
      this.counters.rateLimited++;
      return;
    }
    this.#observer.seen?.(msg.sender, verified, from);
    let answer: Response | Promise<Response>;
    try {
      answer = this.#handler.handle(msg.body, msg.sender, from, {
        host: hostKey(from.ip),
        verified,
      });
    } catch (err) {
      answer = internalError(err);
    }
    if (answer instanceof Promise) {
      answer.then(
        (a) => this.#reply(msg, from, addr, a, size, verified),
        (err: unknown) => this.#reply(msg, from, addr, internalError(err), size, verified),
      );
      return;
    }
    this.#reply(msg, from, addr, answer, size, verified);
  }

  #reply(
    req: Extract<Message, { kind: 'request' }>,
    to: Address,
    addr: string,
    answer: Response,
    requestSize: number,
    verified: boolean,
  ): void {
    const overhead = this.auth.overhead;
    const token = this.tokens.issue(addr);
    const msg: Message = {
      kind: 'response',
      txid: req.txid,
      sender: this.#self(),
      body: answer,
      token,
    };
    let payload: Uint8Array | undefined;
    if (verified) {
      const limit = MAX_DATAGRAM_BYTES - overhead;
      try {
        payload = encodePayload(msg, { limit });
      } catch {
        const body: Response = {
          type: 'ERROR',
          code: WireErrorCode.INTERNAL,
          message: 'answer too large',
        };
        payload = encodePayload({ ...msg, body }, { limit });
      }
    } else {
      // Anti-amplification: never more bytes to an unproven address than it sent.
      const limit = Math.min(MAX_DATAGRAM_BYTES, requestSize) - overhead;
      const type = req.body.type;
      this.counters.unverifiedRequests++;
      this.counters.unverifiedBytesIn += requestSize;
      payload = this.#fit(msg, limit);
      if (!payload) {
        this.counters.amplificationDropped++;
        return;
      }
      const out = payload.length + overhead;
      this.counters.unverifiedBytesOut += out;
      const ratio = out / requestSize;
      if (ratio > this.counters.amplificationMax) this.counters.amplificationMax = ratio;
      const byType = this.counters.amplificationMaxByType;
      if (ratio > (byType[type] ?? 0)) byType[type] = ratio;
    }
    this.#transport.send(this.auth.seal(payload), to);
  }

  /** The answer within `limit` bytes: trimmed lists, then a minimal sender; undefined if neither fits. */
  #fit(msg: Message, limit: number): Uint8Array | undefined {
    let trimmed = false;
    const attempt = (m: Message): Uint8Array | undefined => {
      try {
        const full = encodePayload(m, { limit: MAX_DATAGRAM_BYTES });
        if (full.length <= limit) return full;
        trimmed = true;
        return encodePayload(m, { limit, truncate: true });
      } catch {
        return undefined;
      }
    };
    const s = msg.sender;
    const out =
      attempt(msg) ??
      attempt({ ...msg, sender: { id: s.id, ip: s.ip, port: s.port }, truncated: true });
    if (out && trimmed) this.counters.amplificationTrimmed++;
    return out;
  }
}
