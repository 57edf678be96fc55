/**
 * An attacker of running Coral nodes: its own UDP socket on its own 127.x address, writing DSHT
 * datagrams by hand with the wire codec @coral/dsht exports. Without a key it is an outsider
 * (open-mode frames, or keyed frames under a key of its own); with the fleet key it is an insider
 * (a member gone bad), against which every per-source defence must still hold.
 *
 * It answers the node's requests like a node would (PONG, empty NODES), so a node that verifies it
 * by a round trip keeps it as long as the defences allow.
 */
import dgram from 'node:dgram';
import {
  DatagramAuth,
  FIRST_CONTACT_PAD_BYTES,
  MAX_DATAGRAM_BYTES,
  decodePayload,
  encodePayload,
  nodeIdFor,
  type Contact,
  type Message,
  type Request,
  type Response,
} from '@coral/dsht/internal';
import { Keyring } from '@coral/keyring';
import { systemClock } from '@coral/testkit';
import { loadConfig } from '../../src/config/index.js';
import { CoralNode } from '../../src/compose/node.js';
import { realServices } from '../../src/compose/services.js';
import { createLogger } from '../../src/logging/logger.js';
import { waitFor } from '../helpers.js';

export type Mode = 'keyed' | 'open';

export interface Reply {
  msg: Message;
  from: { ip: string; port: number };
}

export class Attacker {
  readonly ip: string;
  port = 0;
  readonly #socket = dgram.createSocket('udp4');
  readonly #auth: DatagramAuth;
  readonly #pending = new Map<number, (r: Reply) => void>();
  /** The token each node last handed this socket (node `ip:port` → token). */
  readonly #tokens = new Map<string, Uint8Array>();
  #txid = 1;
  /** Extra fields of its contact: e.g. the HTTP port it claims. */
  profile: Partial<Contact> = {};

  /** `keys`: the keys it signs with (insider: the fleet's; outsider: its own); none = open frames. */
  constructor(ip: string, keys?: string[]) {
    this.ip = ip;
    this.#auth = new DatagramAuth(
      { clock: systemClock, keyring: keys ? Keyring.parse(keys) : undefined },
      { maxNonces: 100_000 },
    );
    this.#socket.on('message', (data, rinfo) => this.#receive(data, rinfo));
  }

  async bind(): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.#socket.once('error', reject);
      this.#socket.bind(0, this.ip, () => resolve());
    });
    this.port = this.#socket.address().port;
    return this;
  }

  get contact(): Contact {
    return { ...this.profile, id: nodeIdFor(this.ip, this.port), ip: this.ip, port: this.port };
  }

  get idHex(): string {
    return Buffer.from(this.contact.id).toString('hex');
  }

  /** Send a request; resolves to the answer, or undefined when none came within `timeoutMs`. */
  request(
    to: { ip: string; port: number },
    body: Request,
    timeoutMs = 1_000,
  ): Promise<Reply | undefined> {
    const txid = this.#txid++;
    const token = this.#tokens.get(`${to.ip}:${to.port}`);
    const msg: Message = {
      kind: 'request',
      txid,
      sender: this.contact,
      ...(token ? { token } : {}),
      body,
    };
    const pad = token ? 0 : (FIRST_CONTACT_PAD_BYTES[body.type] ?? 0);
    const answer = new Promise<Reply | undefined>((resolve) => {
      const timer = setTimeout(() => {
        this.#pending.delete(txid);
        resolve(undefined);
      }, timeoutMs);
      this.#pending.set(txid, (r) => {
        clearTimeout(timer);
        resolve(r);
      });
    });
    this.#send(msg, to, pad);
    return answer;
  }

  /** A round trip with `to` (PING, then PING with its token): the node now holds it verified. */
  async roundTrip(to: { ip: string; port: number }): Promise<boolean> {
    await this.request(to, { type: 'PING' });
    return (await this.request(to, { type: 'PING' }))?.msg.body.type === 'PONG';
  }

  /** Store `value` under `key` at one level; the STORE_RESULT status, or undefined. */
  async store(
    to: { ip: string; port: number },
    key: Uint8Array,
    value: Uint8Array,
    level: number,
    ttl = 600,
  ): Promise<number | undefined> {
    let r = await this.request(to, { type: 'STORE', level, key, value, ttl });
    // TOKEN_REQUIRED: the answer carried a token for this address; send it again with it.
    if (r?.msg.body.type === 'ERROR')
      r = await this.request(to, { type: 'STORE', level, key, value, ttl });
    return r?.msg.body.type === 'STORE_RESULT' ? r.msg.body.status : undefined;
  }

  close(): void {
    this.#socket.close();
  }

  #send(msg: Message, to: { ip: string; port: number }, padTo: number): void {
    const payload = encodePayload(msg, { limit: MAX_DATAGRAM_BYTES });
    this.#socket.send(this.#auth.seal(payload, padTo), to.port, to.ip);
  }

  #receive(data: Buffer, rinfo: dgram.RemoteInfo): void {
    const payload = this.#auth.open(data);
    if (typeof payload === 'string') return;
    let msg: Message;
    try {
      msg = decodePayload(payload);
    } catch {
      return;
    }
    const from = { ip: rinfo.address, port: rinfo.port };
    if (msg.token) this.#tokens.set(`${from.ip}:${from.port}`, msg.token);
    if (msg.kind === 'response') {
      this.#pending.get(msg.txid)?.({ msg, from });
      this.#pending.delete(msg.txid);
      return;
    }
    // Play a node: answer what the node asks.
    const body: Response =
      msg.body.type === 'PING' ? { type: 'PONG' } : { type: 'NODES', contacts: [] };
    this.#send({ kind: 'response', txid: msg.txid, sender: this.contact, body }, from, 0);
  }
}

/** The fleet key of the adversary tests' keyed nodes. */
export const FLEET_KEY = 'ad'.repeat(32);

/** Environment of an in-process node on `ip` in `mode` (keyed with FLEET_KEY, or open). */
export function nodeEnv(ip: string, dataDir: string, mode: Mode): Record<string, string> {
  return {
    CORAL_HOST: ip,
    CORAL_DNS_HOST: ip,
    CORAL_ADMIN_HOST: ip,
    CORAL_DATA_DIR: dataDir,
    CORAL_ALLOW_PRIVATE_ORIGINS: 'true',
    CORAL_HOSTS: 'www.origin.test=127.0.0.1',
    CORAL_LOG_LEVEL: 'silent',
    ...(mode === 'keyed' ? { CORAL_FLEET_KEYS: FLEET_KEY } : { CORAL_FLEET_OPEN: 'true' }),
  };
}

/** A counter of a node's Prometheus text (0 when absent). */
export function metric(text: string, name: string, labels = ''): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ''} `));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

/**
 * Two running nodes in this process on `ips` (the second bootstraps from the first), keyed or
 * open, once each holds the other as a verified member.
 */
export async function startPair(
  ips: [string, string],
  dir: string,
  mode: Mode,
): Promise<CoralNode[]> {
  const logger = createLogger({ level: 'silent' });
  const nodes: CoralNode[] = [];
  for (const [i, ip] of ips.entries()) {
    const env = {
      ...nodeEnv(ip, `${dir}/${i}`, mode),
      ...(i > 0 ? { CORAL_BOOTSTRAP: `${ips[0]}:8091` } : {}),
    };
    nodes.push(await CoralNode.start(loadConfig({ env }), { services: realServices, logger }));
  }
  await waitFor(() => nodes.every((n) => n.dsht.members().length === 1), 20_000, 'members');
  return nodes;
}
