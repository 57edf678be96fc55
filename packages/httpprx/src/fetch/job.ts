/**
 * What a fetch stage is handed by the fetcher (./fetcher.ts), as named objects: the request and
 * the transfer its answer goes to, the fields sent upstream, and how the transfer leaves the
 * in-flight map; each stage adds its own (./peer.ts `PeerAsk`, ./origin.ts `OriginAsk`).
 */
import type { RequestCtx } from '../kit/core.js';
import type { Transfer } from '../transfer/transfer.js';

export interface FetchJob {
  ctx: RequestCtx;
  /** The transfer the upstream answer is settled and pumped into. */
  transfer: Transfer;
  /** The request fields sent upstream (./request-headers.ts `forwardHeaders`). */
  headers: Record<string, string>;
  /**
   * Takes the transfer out of the in-flight map (called as soon as its response turns out not
   * shareable, so no later request joins it).
   */
  unregister: () => void;
  /** Holder records skipped before any connection: naming no verified member (Cache-Status). */
  notMembers: number;
}
