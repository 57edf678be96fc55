/**
 * Key notices: what a keyed node tells the source of a datagram under a key id it does not hold,
 * and how the node that sent that datagram reads it — so that a node started with a wrong fleet
 * key learns that the fleet does not accept its key, instead of hearing nothing forever.
 *
 *     notice = [0x04] [key id: 4] [nonce: 8]     13 bytes
 *
 * Both fields are copied from the datagram it answers (a keyed datagram has at least 36 bytes).
 *
 * **Sending** (`answer`): only for a keyed datagram whose key id this node lacks (the frame's
 * `unknownKey` drop), never larger than it (13 bytes: no amplification), at most
 * KEY_NOTICE_RATE per source host (NET_RATE_MULTIPLIER times that per /24, IPv6 /48) and
 * KEY_NOTICE_GLOBAL_RATE for all sources together. It holds nothing the source did not send: no
 * key id of this node, no secret, nothing about the fleet but "this key id is not accepted here".
 *
 * **Receiving** (`expect`, `receive`): a notice is not authenticated — it cannot be: the two ends
 * share no key — so anyone can send one, and it is a hint only. It counts only when it comes from
 * the exact address this node sent a first-contact request to (one sent without a token from that
 * peer: a peer that handed this node a token has authenticated it), echoing that request's key id
 * and nonce while the request waits for its answer; a forger off the path would have to guess 64
 * random bits. Even then it changes no state: the request still waits for its answer or its
 * timeout, and no member, routing table, isolation or readiness moves. A matching notice is
 * counted (`keyRejected`) and reported (`onReport`: a log line, a metric) at most once per
 * `reportIntervalMs`; the others are counted (`keyNoticesIgnored`) and dropped.
 */
import type { Clock } from '@coral/runtime';
import type { Address } from '../contact.js';
import {
  KEY_NOTICE_BYTES,
  KEY_NOTICE_GLOBAL_RATE,
  KEY_NOTICE_RATE,
  KEY_NOTICE_SOURCES,
  KEY_NOTICE_VERSION,
  KEY_REJECTED_REPORT_MS,
} from '../constants.js';
import { GlobalBucket, SourceLimiter, type RateLimit } from '../limits/rate-limiter.js';

export interface KeyNoticeCounters {
  /** Notices sent to sources of datagrams under key ids this node does not hold. */
  keyNoticesSent: number;
  /** Notices not sent: the source's or the global bucket was empty. */
  keyNoticesLimited: number;
  /** Notices received that matched no request of this node (forged, late, malformed): dropped. */
  keyNoticesIgnored: number;
  /** Notices received that matched a request: a peer does not accept this node's key id. */
  keyRejected: number;
}

/** A peer said it does not accept this node's key id (`'key-rejected'`, `authState()`). */
export interface KeyRejection {
  /** This node's key id (8 hex digits) that the peer does not accept. */
  keyId: string;
  /** The peer that said so: the address the request went to. */
  from: Address;
  /** Matching notices since the previous report, this one included. */
  notices: number;
  /**
   * This node authenticated a datagram within the isolation window (`auth.isolationAfterMs`): it
   * does talk to its fleet, so the peer lacks this key rather than the fleet refusing it.
   */
  fleetHeard: boolean;
  /** Clock time of the notice. */
  at: number;
}

export interface KeyNoticesComponents {
  clock: Clock;
  /** Has this node authenticated a datagram lately (`DatagramAuth.heardLately`)? Default: no. */
  heard?: () => boolean;
  /** A matching notice, at most once per `reportIntervalMs` (the first at once). */
  onReport?: (rejection: KeyRejection) => void;
}

export interface KeyNoticesOptions {
  /** Send notices (receiving them is always on: it only reports). Default true. */
  send?: boolean;
  /** Notices per source host. Default KEY_NOTICE_RATE (0.5/s, burst 4). */
  perSource?: RateLimit;
  /** Notices for all sources together. Default KEY_NOTICE_GLOBAL_RATE (20/s, burst 40). */
  global?: RateLimit;
  /** A /24 (IPv6 /48) may get this many times a host's notices. Default NET_RATE_MULTIPLIER (8). */
  netMultiplier?: number;
  /** Sources whose buckets are kept. Default KEY_NOTICE_SOURCES (2,048). */
  maxSources?: number;
  /** Report at most this often. Default KEY_REJECTED_REPORT_MS (60 s). */
  reportIntervalMs?: number;
}

/** A first-contact request's key id and nonce, waiting for a notice (see `expect`). */
interface Expected {
  ip: string;
  port: number;
  keyId: number;
  /** The nonce's last 2 bytes (its first 6 are the map's key). */
  tail: number;
}

/** Requests expected at most (a bound on a bug's cost: `forget` removes each when it settles). */
const EXPECTED_MAX = 16_384;

/** Where a keyed datagram's key id and nonce are (auth/datagram-auth.ts). */
const FRAME_KEY_ID = 1;
const FRAME_NONCE = 11;
/** Where a notice's key id and nonce are. */
const NOTICE_KEY_ID = 1;
const NOTICE_NONCE = 5;

function u32(b: Uint8Array, at: number): number {
  return ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
}

/** The first 6 bytes of a nonce as an exact number (the expected requests' key). */
function head48(b: Uint8Array, at: number): number {
  return u32(b, at) * 65536 + ((b[at + 4]! << 8) | b[at + 5]!);
}

function tail16(b: Uint8Array, at: number): number {
  return (b[at + 6]! << 8) | b[at + 7]!;
}

export function emptyKeyNoticeCounters(): KeyNoticeCounters {
  return { keyNoticesSent: 0, keyNoticesLimited: 0, keyNoticesIgnored: 0, keyRejected: 0 };
}

export class KeyNotices {
  readonly counters: KeyNoticeCounters = emptyKeyNoticeCounters();
  readonly #clock: Clock;
  readonly #heard: () => boolean;
  readonly #onReport: ((r: KeyRejection) => void) | undefined;
  readonly #send: boolean;
  readonly #limiter: SourceLimiter<'KEY_NOTICE'>;
  readonly #global: GlobalBucket;
  readonly #reportIntervalMs: number;
  readonly #expected = new Map<number, Expected>();
  #reportedAt = -Infinity;
  #unreported = 0;
  #last: { keyId: string; from: Address; at: number } | undefined;

  constructor(components: KeyNoticesComponents, options: KeyNoticesOptions = {}) {
    const clock = components.clock;
    this.#clock = clock;
    this.#heard = components.heard ?? (() => false);
    this.#onReport = components.onReport;
    this.#send = options.send ?? true;
    this.#limiter = new SourceLimiter<'KEY_NOTICE'>(
      { clock },
      {
        kinds: { KEY_NOTICE: options.perSource ?? KEY_NOTICE_RATE },
        netMultiplier: options.netMultiplier,
        maxEntries: options.maxSources ?? KEY_NOTICE_SOURCES,
      },
    );
    this.#global = new GlobalBucket({ clock }, options.global ?? KEY_NOTICE_GLOBAL_RATE);
    this.#reportIntervalMs = options.reportIntervalMs ?? KEY_REJECTED_REPORT_MS;
  }

  /** Is this datagram a notice (by its first byte; `receive` checks the rest)? */
  static is(data: Uint8Array): boolean {
    return data[0] === KEY_NOTICE_VERSION;
  }

  /** Source buckets held (for tests: what a spray from spoofed sources can make it keep). */
  get sources(): number {
    return this.#limiter.size;
  }

  /** First-contact requests waiting for a possible notice. */
  get expecting(): number {
    return this.#expected.size;
  }

  /** The last matching notice: which key id, who said so, when. */
  get last(): { keyId: string; from: Address; at: number } | undefined {
    return this.#last;
  }

  /**
   * The notice for `datagram` — a keyed datagram the frame dropped because this node lacks its
   * key id — from `from`, or undefined when notices are off or this source (or everyone) had its
   * share. The caller sends it to `from`.
   */
  answer(datagram: Uint8Array, from: Address): Uint8Array | undefined {
    if (!this.#send || datagram.length < FRAME_NONCE + 8) return undefined;
    if (!this.#limiter.allow('KEY_NOTICE', from.ip) || !this.#global.take()) {
      this.counters.keyNoticesLimited++;
      return undefined;
    }
    const out = new Uint8Array(KEY_NOTICE_BYTES);
    out[0] = KEY_NOTICE_VERSION;
    out.set(datagram.subarray(FRAME_KEY_ID, FRAME_KEY_ID + 4), NOTICE_KEY_ID);
    out.set(datagram.subarray(FRAME_NONCE, FRAME_NONCE + 8), NOTICE_NONCE);
    this.counters.keyNoticesSent++;
    return out;
  }

  /**
   * A first-contact request `datagram` (sealed, keyed) is going to `to`: a notice echoing its
   * nonce from that address would count. Returns the handle to `forget` it by when it settles.
   */
  expect(datagram: Uint8Array, to: Address): number {
    const key = head48(datagram, FRAME_NONCE);
    if (this.#expected.size >= EXPECTED_MAX) {
      this.#expected.delete(this.#expected.keys().next().value as number);
    }
    this.#expected.set(key, {
      ip: to.ip,
      port: to.port,
      keyId: u32(datagram, FRAME_KEY_ID),
      tail: tail16(datagram, FRAME_NONCE),
    });
    return key;
  }

  /** The request `expect` returned `handle` for has settled (answered, timed out, aborted). */
  forget(handle: number): void {
    this.#expected.delete(handle);
  }

  /** A notice arrived from `from`: counted, and reported when it matches and a report is due. */
  receive(data: Uint8Array, from: Address): void {
    if (data.length !== KEY_NOTICE_BYTES) {
      this.counters.keyNoticesIgnored++;
      return;
    }
    const key = head48(data, NOTICE_NONCE);
    const e = this.#expected.get(key);
    const keyId = u32(data, NOTICE_KEY_ID);
    if (
      !e ||
      e.tail !== tail16(data, NOTICE_NONCE) ||
      e.keyId !== keyId ||
      e.ip !== from.ip ||
      e.port !== from.port
    ) {
      this.counters.keyNoticesIgnored++;
      return;
    }
    // One notice per datagram: a copy of it counts no more.
    this.#expected.delete(key);
    this.counters.keyRejected++;
    this.#unreported++;
    const at = this.#clock.now();
    const hex = keyId.toString(16).padStart(8, '0');
    this.#last = { keyId: hex, from: { ip: from.ip, port: from.port }, at };
    if (at - this.#reportedAt < this.#reportIntervalMs) return;
    this.#reportedAt = at;
    const notices = this.#unreported;
    this.#unreported = 0;
    this.#onReport?.({
      keyId: hex,
      from: { ...this.#last.from },
      notices,
      fleetHeard: this.#heard(),
      at,
    });
  }
}
