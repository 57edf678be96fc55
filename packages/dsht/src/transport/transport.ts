/**
 * The datagram transport the RPC layer runs on. Two implementations honour the same contract
 * (test/transport/contract.ts): `UdpTransport` (node:dgram) and `SimNetwork`'s in-memory endpoints.
 */
import type { Address } from '../contact.js';

export type DatagramHandler = (data: Uint8Array, from: Address) => void;

export interface Transport {
  /** Bind / attach. Resolves once `address` is final (a UDP port 0 becomes the bound port). */
  start(): Promise<void>;
  /** Unbind. Further sends are dropped silently. */
  close(): Promise<void>;
  /** The local address datagrams come from. */
  readonly address: Address;
  /** Send one datagram, best effort (no delivery guarantee, no error for a lost datagram). */
  send(data: Uint8Array, to: Address): void;
  /** Install the receive handler (one per transport). */
  onDatagram(handler: DatagramHandler): void;
}
