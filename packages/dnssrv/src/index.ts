/**
 * @coral/dnssrv — Coral's authoritative DNS redirector (placeholder: the server lands with its issue).
 */
export type { NodeDirectory, NodeInfo, HintResult } from './node-directory.js';
