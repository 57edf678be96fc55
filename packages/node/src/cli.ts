#!/usr/bin/env node
/**
 * coral-node — placeholder entry point; the CLI lands with the node issue.
 */
console.error('coral-node: not built yet');
process.exitCode = 1;
