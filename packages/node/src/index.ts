/**
 * @coral/node — the Coral process (placeholder: composition lands with its issue).
 */
export const NODE_PLACEHOLDER = true;
