#!/usr/bin/env node
// The `coral-node` command (package.json "bin"): runs the compiled CLI in ../dist. This file is
// plain JavaScript and part of the sources, so npm links the command at install time, before the
// workspace is built (the root `prepare` script builds it during `npm ci`).
import './check-node.js';
import { existsSync } from 'node:fs';

const cli = new URL('../dist/cli.js', import.meta.url);
if (existsSync(cli)) {
  await import(cli.href);
} else {
  process.stderr.write(
    'coral-node: not built yet (no packages/node/dist): run `npm run build` in the repository\n',
  );
  process.exitCode = 1;
}
