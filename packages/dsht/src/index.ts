/**
 * @coral/dsht — Coral's distributed sloppy hash table (placeholder: the DSHT lands with its issue).
 */
export const DSHT_PLACEHOLDER = true;
