/**
 * @coral/httpprx — Coral's cooperative caching HTTP proxy (placeholder: the proxy lands with its issue).
 */
export type { ContentIndex, Holder } from './content-index.js';
