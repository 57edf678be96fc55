/**
 * The DSHT's messages as typed values. The codec (`codec.ts`) maps them to and from datagrams.
 * Every request and answer names the cluster level it is about, so the same messages serve the
 * global table and the clusters.
 */
import type { Contact } from '../contact.js';
import type { Id } from '../id/id.js';

/** A stored value as carried in a GET answer. */
export interface WireValue {
  /**
   * Node id of the publisher. For a first-hand value it is the authenticated node that stored it
   * (the replace rule keys on it); for a path-cached copy it is the publisher the copier named,
   * which nobody verified.
   */
  publisher: Id;
  value: Uint8Array;
  /** Remaining lifetime in seconds. */
  ttl: number;
  /** A path-cached copy (stored by a node that found the value elsewhere), not first-hand. */
  copy?: boolean;
}

/** Failure detection (SWIM): what a member is believed to be, as of its incarnation. */
export type MemberState = 'alive' | 'suspect' | 'dead' | 'left';

/** One piece of membership gossip, piggybacked on PING / PONG. */
export interface WireMemberUpdate {
  id: Id;
  state: MemberState;
  /** The member's incarnation the update is about (a safe integer). */
  incarnation: number;
}

/**
 * What PING and PONG may carry for failure detection: the sender's incarnation and gossip. A
 * PING / PONG without them (older senders, tests) is still valid.
 */
export interface SwimFields {
  incarnation?: number;
  updates?: WireMemberUpdate[];
}

export type Request =
  | ({ type: 'PING' } & SwimFields)
  /**
   * Indirect probe: ping the member `target` (a verified live member of the receiver, by id —
   * never an address) within `timeoutMs`, answer whether it acknowledged.
   */
  | { type: 'PING_REQ'; target: Id; timeoutMs: number }
  /** The sender leaves the fleet (graceful shutdown) as of its incarnation. */
  | { type: 'LEAVE'; incarnation: number }
  /**
   * `count`: contacts wanted in the answer (1..32); absent = as many as the answerer gives (its k).
   * A converging walk asks few, a node surveying the fleet (discovery, cluster exploration) all.
   */
  | { type: 'FIND_NODE'; level: number; target: Id; count?: number }
  | { type: 'GET'; level: number; key: Id; max: number }
  | { type: 'STORE_PROBE'; level: number; key: Id; ttl: number }
  /**
   * The publisher of a first-hand value is the authenticated sender, never a field. A path-cached
   * copy carries `copyOf`: the publisher named by the GET answer it was copied from.
   */
  | { type: 'STORE'; level: number; key: Id; value: Uint8Array; ttl: number; copyOf?: Id };

/** Why a STORE was refused (wire numbers, separate from thrown error codes). */
export const StoreStatus = {
  ACCEPTED: 0,
  FULL: 1,
  LOADED: 2,
  /** A byte, count or per-source cap. */
  LIMIT: 3,
  /** A copy of a value whose first-hand original is stored here already (copies never replace it). */
  EXISTS: 4,
} as const;
export type StoreStatus = (typeof StoreStatus)[keyof typeof StoreStatus];

/** Wire error numbers of an ERROR answer. */
export const WireErrorCode = {
  BAD_REQUEST: 1,
  BAD_LEVEL: 2,
  INTERNAL: 3,
  /**
   * STORE, PING_REQ or LEAVE without a valid write token for the source address: the answer carries
   * one; send the request again with it. Nothing was stored or counted.
   */
  TOKEN_REQUIRED: 4,
} as const;

export type Response =
  | ({ type: 'PONG' } & SwimFields)
  /** Answer to PING_REQ: did the target acknowledge the receiver's ping in time? */
  | { type: 'INDIRECT_ACK'; acked: boolean }
  | { type: 'NODES'; contacts: Contact[] }
  | { type: 'VALUES'; values: WireValue[]; contacts: Contact[] }
  | { type: 'PROBE_RESULT'; full: boolean; loaded: boolean; contacts: Contact[] }
  | { type: 'STORE_RESULT'; status: StoreStatus }
  | { type: 'ERROR'; code: number; message: string };

export type RequestType = Request['type'];
export type ResponseType = Response['type'];

/** Fields every message carries besides its body (wire version 2). */
export interface Envelope {
  txid: number;
  sender: Contact;
  /**
   * Write token. In a request: the token the receiver last handed to this sender's address (proof
   * of a round trip); in an answer: a token for the requester's address. Absent = none.
   */
  token?: Uint8Array;
  /** Answer only: trimmed because the request proved no round trip; ask again with the token. */
  truncated?: boolean;
}

/** A decoded datagram. */
export type Message =
  | (Envelope & { kind: 'request'; body: Request })
  | (Envelope & { kind: 'response'; body: Response });

/** The answer type each request expects (ERROR is always possible). */
export const RESPONSE_FOR: Record<RequestType, ResponseType> = {
  PING: 'PONG',
  PING_REQ: 'INDIRECT_ACK',
  LEAVE: 'PONG',
  FIND_NODE: 'NODES',
  GET: 'VALUES',
  STORE_PROBE: 'PROBE_RESULT',
  STORE: 'STORE_RESULT',
};
