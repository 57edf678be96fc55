/**
 * The DSHT's messages as typed values. The codec (`codec.ts`) maps them to and from datagrams.
 * Every request and answer names the cluster level it is about, so the same messages serve the
 * global table and the clusters.
 */
import type { Contact } from '../contact.js';
import type { Id } from '../id/id.js';

/** A stored value as carried in a GET answer. */
export interface WireValue {
  /** Node id of the publisher (the replace rule keys on it). */
  publisher: Id;
  value: Uint8Array;
  /** Remaining lifetime in seconds. */
  ttl: number;
}

export type Request =
  | { type: 'PING' }
  | { type: 'FIND_NODE'; level: number; target: Id }
  | { type: 'GET'; level: number; key: Id; max: number }
  | { type: 'STORE_PROBE'; level: number; key: Id; ttl: number }
  | { type: 'STORE'; level: number; key: Id; value: Uint8Array; ttl: number; publisher: Id };

/** Why a STORE was refused (wire numbers, separate from thrown error codes). */
export const StoreStatus = {
  ACCEPTED: 0,
  FULL: 1,
  LOADED: 2,
  LIMIT: 3,
} as const;
export type StoreStatus = (typeof StoreStatus)[keyof typeof StoreStatus];

/** Wire error numbers of an ERROR answer. */
export const WireErrorCode = {
  BAD_REQUEST: 1,
  BAD_LEVEL: 2,
  INTERNAL: 3,
} as const;

export type Response =
  | { type: 'PONG' }
  | { type: 'NODES'; contacts: Contact[] }
  | { type: 'VALUES'; values: WireValue[]; contacts: Contact[] }
  | { type: 'PROBE_RESULT'; full: boolean; loaded: boolean; contacts: Contact[] }
  | { type: 'STORE_RESULT'; status: StoreStatus }
  | { type: 'ERROR'; code: number; message: string };

export type RequestType = Request['type'];
export type ResponseType = Response['type'];

/** A decoded datagram. */
export type Message =
  | { kind: 'request'; txid: number; sender: Contact; body: Request }
  | { kind: 'response'; txid: number; sender: Contact; body: Response };

/** The answer type each request expects (ERROR is always possible). */
export const RESPONSE_FOR: Record<RequestType, ResponseType> = {
  PING: 'PONG',
  FIND_NODE: 'NODES',
  GET: 'VALUES',
  STORE_PROBE: 'PROBE_RESULT',
  STORE: 'STORE_RESULT',
};
