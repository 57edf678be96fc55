/**
 * The RPC layer: request/answer over datagrams with random transaction ids, per-peer adaptive
 * timeouts, retransmission with exponential backoff, and a smoothed RTT from every round trip.
 *
 * Every received datagram is decoded and checked before anything else: a malformed one is counted
 * and dropped; one whose claimed id is not SHA-1 of its advertised address, or whose advertised IP
 * is not the source IP (unless `allowNat`), is counted as spoofed and dropped. Neither throws nor
 * changes any state.
 */
import type { Clock, Random, TimerHandle } from '@coral/testkit';
import type { Address, Contact } from '../contact.js';
import {
  RPC_BACKOFF,
  RPC_MAX_TIMEOUT_MS,
  RPC_MIN_TIMEOUT_MS,
  RPC_RETRIES,
  RPC_TIMEOUT_MS,
  RTT_PEERS,
} from '../constants.js';
import { AbortedError, DshtError, RemoteError, RpcTimeoutError } from '../errors.js';
import { addressString, idEquals, nodeIdFor } from '../id/id.js';
import { decode, encode } from '../wire/codec.js';
import { WireErrorCode, type Message, type Request, type Response } from '../wire/messages.js';
import type { Transport } from '../transport/transport.js';
import { RttTable } from './rtt.js';

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
}

export interface RpcReply {
  body: Response;
  sender: Contact;
  rttMs: number;
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

export type RequestHandler = (req: Request, sender: Contact, from: Address) => Response;

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
  #pending = new Map<number, Pending>();
  #verified = new Map<string, Uint8Array>();
  readonly rtt = new RttTable(RTT_PEERS);
  readonly counters: RpcCounters = emptyCounters();
  /** Answers incoming requests. */
  onRequest: RequestHandler = () => ({
    type: 'ERROR',
    code: WireErrorCode.INTERNAL,
    message: 'no handler',
  });
  /** Every verified datagram's sender (request or answer). */
  onSeen: ((sender: Contact) => void) | undefined;
  /** Every RTT sample, after the smoothed estimate was updated. */
  onRtt: ((sender: Contact, rttMs: number) => void) | undefined;

  constructor(components: RpcComponents, options: RpcOptions) {
    this.#transport = components.transport;
    this.#clock = components.clock;
    this.#random = components.random;
    this.#metrics = components.metrics;
    this.#self = options.self;
    this.#timeout = options.timeoutMs ?? RPC_TIMEOUT_MS;
    this.#minTimeout = options.minTimeoutMs ?? RPC_MIN_TIMEOUT_MS;
    this.#maxTimeout = options.maxTimeoutMs ?? RPC_MAX_TIMEOUT_MS;
    this.#retries = options.retries ?? RPC_RETRIES;
    this.#backoff = options.backoff ?? RPC_BACKOFF;
    this.#allowNat = options.allowNat ?? false;
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
    const retries = opts.retries ?? this.#retries;
    const peer = addressString(to.ip, to.port);
    const type = body.type;
    const stats = (this.counters.byType[type] ??= { ok: 0, timeout: 0, error: 0 });
    return new Promise<RpcReply>((resolve, reject) => {
      let attempt = 0;
      let current: Pending | undefined;
      let done = false;
      const finish = (): void => {
        done = true;
        if (current) {
          current.timer?.cancel();
          this.#pending.delete(current.txid);
        }
        signal?.removeEventListener('abort', onAbort);
      };
      const onAbort = (): void => {
        if (done) return;
        finish();
        reject(new AbortedError());
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const send = (): void => {
        if (current) this.#pending.delete(current.txid);
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
          data = encode({ kind: 'request', txid, sender: this.#self(), body });
        } catch (err) {
          p.reject(
            err instanceof DshtError ? err : new DshtError('DSHT_ERR_TOO_LARGE', String(err)),
          );
          return;
        }
        this.counters.requestsSent++;
        this.#transport.send(data, to);
      };
      send();
    });
  }

  /** Reject every pending request (on stop). */
  cancelAll(): void {
    for (const p of [...this.#pending.values()]) p.reject(new AbortedError('node stopped'));
  }

  #newTxid(): number {
    for (;;) {
      const t = (this.#random.next() * 4294967296) >>> 0;
      if (!this.#pending.has(t)) return t;
    }
  }

  #verify(sender: Contact, from: Address): boolean {
    if (!this.#allowNat && sender.ip !== from.ip) return false;
    const addr = addressString(sender.ip, sender.port);
    let id = this.#verified.get(addr);
    if (!id) {
      id = nodeIdFor(sender.ip, sender.port);
      if (this.#verified.size > 65_536) this.#verified.clear();
      this.#verified.set(addr, id);
    }
    return idEquals(id, sender.id);
  }

  #receive(data: Uint8Array, from: Address): void {
    let msg: Message;
    try {
      msg = decode(data);
    } catch {
      this.counters.malformed++;
      return;
    }
    if (!this.#verify(msg.sender, from)) {
      this.counters.spoofed++;
      return;
    }
    if (msg.kind === 'response') {
      const p = this.#pending.get(msg.txid);
      if (!p || p.to.ip !== from.ip || p.to.port !== from.port) {
        this.counters.unexpected++;
        return;
      }
      this.counters.responsesReceived++;
      const rttMs = this.#clock.now() - p.sentAt;
      this.rtt.sample(addressString(from.ip, from.port), rttMs);
      this.onSeen?.(msg.sender);
      this.onRtt?.(msg.sender, rttMs);
      p.resolve({ body: msg.body, sender: msg.sender, rttMs });
      return;
    }
    this.counters.requestsReceived++;
    this.onSeen?.(msg.sender);
    let answer: Response;
    try {
      answer = this.onRequest(msg.body, msg.sender, from);
    } catch (err) {
      answer = {
        type: 'ERROR',
        code: WireErrorCode.INTERNAL,
        message: String((err as Error).message ?? err),
      };
    }
    let out: Uint8Array;
    try {
      out = encode({ kind: 'response', txid: msg.txid, sender: this.#self(), body: answer });
    } catch {
      out = encode({
        kind: 'response',
        txid: msg.txid,
        sender: this.#self(),
        body: { type: 'ERROR', code: WireErrorCode.INTERNAL, message: 'answer too large' },
      });
    }
    this.#transport.send(out, from);
  }
}
