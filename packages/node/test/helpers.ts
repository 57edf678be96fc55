import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor as poll } from '@coral/testkit';
import { coralize } from '@coral/httpprx';
import { run, type CliIo } from '../src/cli/program.js';

/** A third octet for 127.0.B.x addresses no other concurrently running test is likely to use. */
export function randomSubnet(): number {
  return 100 + Math.floor(Math.random() * 150);
}

export function tmpDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `coral-${prefix}-`));
}

/** Poll `fn` until it returns a truthy value, within a bound (for conditions, not durations). */
export function waitFor<T>(
  fn: () => Promise<T> | T,
  timeoutMs = 20_000,
  what = 'condition',
): Promise<T> {
  return poll(fn, { what, limitMs: timeoutMs, everyMs: 50 });
}

/** Run a `coral-node` client command against the admin API at `adminUrl`, capturing its output. */
export async function cliAt(
  adminUrl: string,
  ...args: string[]
): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: CliIo = {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s) },
    env: {},
  };
  const code = await run(['--admin', adminUrl, ...args], io, {
    startNode: async () => 1,
    coralize,
  });
  return { code, out, err };
}
