/**
 * NODE_RUNTIME_ENV (src/runtime-env.ts) reaches every way the repository starts a long-running
 * node: the Docker image's ENV (runtime stage), `npm start` and the fleet launcher. glibc reads
 * these variables only when a process starts, so they must be set by whatever starts it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { nodeProcessEnv } from '../src/fleet/launcher.js';
import { NODE_RUNTIME_ENV } from '../src/index.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const entries = Object.entries(NODE_RUNTIME_ENV);

describe('NODE_RUNTIME_ENV', () => {
  it('names glibc malloc variables with numeric values', () => {
    expect(entries.length).toBeGreaterThan(0);
    for (const [name, value] of entries) {
      expect(name).toMatch(/^MALLOC_[A-Z_]+$/);
      expect(value).toMatch(/^\d+$/);
    }
  });

  it("is set by the Docker image's runtime stage", () => {
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    const env = Object.fromEntries(
      [...runtime.matchAll(/^ENV\s+(.*)$/gm)].flatMap((m) =>
        [...m[1]!.matchAll(/(\w+)=(\S+)/g)].map((kv) => [kv[1]!, kv[2]!]),
      ),
    );
    for (const [name, value] of entries) expect(env[name], name).toBe(value);
  });

  it('is set by `npm start`', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    const start = pkg.scripts.start!;
    const run = start.slice(start.lastIndexOf('&&') + 2).trim();
    for (const [name, value] of entries) expect(run).toContain(`${name}=${value} `);
    expect(run).toMatch(/ node packages\/node\/dist\/cli\.js start$/);
  });

  it('is given to the nodes the fleet launcher starts', () => {
    const env = nodeProcessEnv({ CORAL_HOST: '127.0.0.1' });
    for (const [name, value] of entries) expect(env[name], name).toBe(value);
    expect(env.CORAL_HOST).toBe('127.0.0.1');
  });
});
