#!/usr/bin/env node
/**
 * coral-node — run a Coral node (`coral-node start`) or talk to a running one through its admin
 * API (`status`, `dsht get|put|routes`, `clusters`, `cache ls|purge`, `purge`, `acme set|remove|list`, `coralize`). See
 * docs/configuration.md and docs/admin-api.md.
 */
import { run } from './cli/program.js';
import { runNode } from './compose/run.js';
import { realServices } from './compose/services.js';

const io = { stdout: process.stdout, stderr: process.stderr, env: process.env };
const code = await run(process.argv.slice(2), io, {
  startNode: (config, cliIo, reload) =>
    runNode(config, cliIo, realServices, process, reload, process),
});
process.exitCode = code;
