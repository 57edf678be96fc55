/**
 * Attack tooling for the adversary tests: real DSHT nodes over real UDP on loopback, and attackers
 * that are their own dgram sockets on their own 127.x addresses, writing datagrams by hand.
 *
 * An attacker speaks the wire format directly (`Wire`): in keyed mode it is either an outsider
 * (no key: it can only replay, forge or guess) or an insider (a fleet member gone bad: it holds
 * the key, so every per-source defence must still hold against it).
 *
 * `barrier(node)` proves a node has processed everything sent before it: a canary on its own socket
 * does a round trip after the attack; the node reads its socket in order, so once the canary's
 * answer is in, any answer to the attacker was sent before it. No sleeping on time.
 */
import dgram from 'node:dgram';
import { Keyring } from '@coral/keyring';
import { systemClock, waitFor, type Clock } from '@coral/testkit';
import { expect } from 'vitest';
import { DatagramAuth } from '../../src/auth/datagram-auth.js';
import type { Address, Contact } from '../../src/contact.js';
import {
  FIRST_CONTACT_PAD_BYTES,
  KEY_NOTICE_BYTES,
  KEY_NOTICE_RATE,
  KEY_NOTICE_VERSION,
  MAX_DATAGRAM_BYTES,
} from '../../src/constants.js';
import { Dsht } from '../../src/dsht.js';
import type { DshtOptions } from '../../src/types.js';
import { addressString, nodeIdFor } from '../../src/id/id.js';
import { decodePayload, encodePayload } from '../../src/wire/codec.js';
import type { Message, Request, Response } from '../../src/wire/messages.js';

export type Mode = 'open' | 'keyed';
export const MODES: Mode[] = ['open', 'keyed'];

/** The fleet key of every keyed adversary test (its value does not matter). */
export const FLEET_KEY = 'f1'.repeat(32);

export function keyringFor(mode: Mode): Keyring | undefined {
  return mode === 'keyed' ? Keyring.parse([FLEET_KEY]) : undefined;
}

/** Start a real node on `ip` (port 0 unless given), open or keyed. */
export async function startNode(
  ip: string,
  mode: Mode,
  options: DshtOptions & { dataDir?: string; port?: number } = {},
  bootstrap: string[] = [],
): Promise<Dsht> {
  const { port = 0, ...rest } = options;
  const node = await Dsht.open(
    { bind: { host: ip, port }, ...rest },
    { keyring: keyringFor(mode) },
  );
  await node.start({ bootstrap });
  return node;
}

export function addrOf(node: Dsht): string {
  return addressString(node.contact.ip, node.contact.port);
}

/** How an attacker writes and reads datagrams. */
export class Wire {
  readonly auth: DatagramAuth;
  /** `outsider`: keyed datagrams under a key of its own, which no fleet node holds. */
  constructor(mode: Mode | 'outsider', clock: Clock = systemClock) {
    const keyring =
      mode === 'keyed'
        ? Keyring.parse([FLEET_KEY])
        : mode === 'outsider'
          ? Keyring.parse([Keyring.generateKey()])
          : undefined;
    this.auth = new DatagramAuth({ clock, keyring }, { maxNonces: 1_000_000 });
  }

  frame(msg: Message, padTo = 0): Uint8Array {
    const payload = encodePayload(msg, { limit: MAX_DATAGRAM_BYTES });
    return this.auth.seal(payload, padTo);
  }

  read(data: Uint8Array): Message | undefined {
    const p = this.auth.open(data);
    if (typeof p === 'string') return undefined;
    try {
      return decodePayload(p);
    } catch {
      return undefined;
    }
  }
}

export interface Received {
  data: Buffer;
  from: Address;
  /** The message, when it decoded (and, keyed, authenticated). */
  msg: Message | undefined;
}

/** One UDP socket on its own address, as an attacker (or a canary) uses it. */
export class Peer {
  readonly received: Received[] = [];
  #socket: dgram.Socket;
  #txid = 1;
  /** Answers its socket gives to requests, when it plays a DSHT node (see `serve`). */
  #server: ((req: Extract<Message, { kind: 'request' }>, from: Address) => Response) | undefined;

  private constructor(
    socket: dgram.Socket,
    readonly address: Address,
    readonly wire: Wire,
  ) {
    this.#socket = socket;
    socket.on('message', (data, rinfo) => {
      const from = { ip: rinfo.address, port: rinfo.port };
      // Read once: in keyed mode a second read of the same datagram is a replay.
      const msg = wire.read(data);
      this.received.push({ data, from, msg });
      if (this.#server) {
        if (msg?.kind === 'request') {
          const body = this.#server(msg, from);
          const answer: Message = { kind: 'response', txid: msg.txid, sender: this.contact, body };
          socket.send(wire.frame(answer), from.port, from.ip);
        }
      }
    });
  }

  static async bind(ip: string, wire: Wire, port = 0): Promise<Peer> {
    const socket = dgram.createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(port, ip, () => {
        socket.off('error', reject);
        resolve();
      });
    });
    return new Peer(socket, { ip, port: socket.address().port }, wire);
  }

  /** Extra fields of its sender contact (ports, region, cluster adverts) when it plays a node. */
  profile: Omit<Partial<Contact>, 'id' | 'ip' | 'port'> = {};

  /** Its honest contact (id = SHA-1 of its address), with its profile. */
  get contact(): Contact {
    return { ...this.profile, id: nodeIdFor(this.address.ip, this.address.port), ...this.address };
  }

  /** Answer requests like a DSHT node would (or however `fn` says). */
  serve(fn: (req: Extract<Message, { kind: 'request' }>, from: Address) => Response): void {
    this.#server = fn;
  }

  send(data: Uint8Array, to: Address): Promise<void> {
    return new Promise((resolve, reject) =>
      this.#socket.send(data, to.port, to.ip, (err) => (err ? reject(err) : resolve())),
    );
  }

  /** A request message from this peer (its honest sender unless given). */
  request(body: Request, opts: { token?: Uint8Array; sender?: Contact } = {}): Message {
    const msg: Message = {
      kind: 'request',
      txid: this.#txid++,
      sender: opts.sender ?? this.contact,
      body,
    };
    if (opts.token) msg.token = opts.token;
    return msg;
  }

  /** Send a request and wait for the answer with its txid (or undefined after `limitMs`). */
  async ask(
    to: Address,
    msg: Message,
    opts: { padTo?: number; limitMs?: number } = {},
  ): Promise<{ msg: Message; size: number; sent: number } | undefined> {
    const data = this.wire.frame(msg, opts.padTo ?? 0);
    const start = this.received.length;
    await this.send(data, to);
    try {
      return await waitFor(
        () => {
          for (let i = start; i < this.received.length; i++) {
            const r = this.received[i]!;
            if (r.msg?.txid === msg.txid)
              return { msg: r.msg, size: r.data.length, sent: data.length };
          }
          return undefined;
        },
        { what: `answer to txid ${msg.txid}`, limitMs: opts.limitMs ?? 3_000 },
      );
    } catch {
      return undefined;
    }
  }

  /**
   * Send a request, let `canary` prove the node processed it, and return its answer if one came
   * (never waits on a clock for an answer that does not come).
   */
  async tell(
    node: Dsht,
    msg: Message,
    canary: Peer,
    padTo = 0,
  ): Promise<{ msg: Message; size: number; sent: number } | undefined> {
    const data = this.wire.frame(msg, padTo);
    const start = this.received.length;
    await this.send(data, node.contact);
    await barrier(node, canary);
    for (let i = start; i < this.received.length; i++) {
      const r = this.received[i]!;
      if (r.msg?.txid === msg.txid) return { msg: r.msg, size: r.data.length, sent: data.length };
    }
    return undefined;
  }

  /** A write token from `to`, by a padded first-contact PING. */
  async token(to: Address): Promise<Uint8Array> {
    const r = await this.ask(to, this.request({ type: 'PING' }), {
      padTo: FIRST_CONTACT_PAD_BYTES.PING,
    });
    if (!r?.msg.token) throw new Error(`no token from ${to.ip}:${to.port}`);
    return r.msg.token;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.#socket.close(() => resolve()));
  }
}

/**
 * Wait until `node` has processed everything sent to it before now: a canary (which the node can
 * authenticate) does a round trip, then the event loop turns so other sockets' answers land.
 */
export async function barrier(node: Dsht, canary: Peer): Promise<void> {
  const r = await canary.ask(node.contact, canary.request({ type: 'PING' }), {
    padTo: FIRST_CONTACT_PAD_BYTES.PING,
  });
  if (!r) throw new Error('barrier: the node did not answer the canary');
  for (let i = 0; i < 5; i++) await new Promise((res) => setImmediate(res));
}

/** Everything a node holds about strangers: what an attack must not grow. */
export function stateOf(node: Dsht) {
  const snap = node.snapshot();
  return {
    members: snap.members.known,
    contacts: snap.levels.reduce((s, l) => s + l.contacts, 0),
    buckets: snap.limits.buckets,
    values: snap.store.values,
    bytes: snap.store.bytes,
  };
}

/**
 * All a stranger without the fleet key gets back from a keyed node: key notices, and no more of
 * them than one source's burst (KEY_NOTICE_RATE) — each 13 bytes, naming the key id it signed
 * with, holding nothing else of the node's. Returns how many came.
 */
export function onlyKeyNotices(p: Peer): number {
  const keyId =
    p.wire.auth.mode === 'keyed'
      ? Buffer.from(p.wire.frame(p.request({ type: 'PING' })).subarray(1, 5))
      : undefined;
  for (const r of p.received) {
    expect(r.msg).toBeUndefined();
    expect(r.data.length).toBe(KEY_NOTICE_BYTES);
    expect(r.data[0]).toBe(KEY_NOTICE_VERSION);
    if (keyId) expect(r.data.subarray(1, 5).equals(keyId)).toBe(true);
  }
  expect(p.received.length).toBeLessThanOrEqual(KEY_NOTICE_RATE.burst);
  return p.received.length;
}
