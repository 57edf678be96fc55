import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { waitFor as poll, type Truthy } from '@coral/testkit';
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
): Promise<Truthy<T>> {
  return poll(fn, { what, limitMs: timeoutMs, everyMs: 50 });
}

/** Wait until every node of a fleet verifies every other one as a live member (its DSHT's view). */
export function everyNodeVerifiesTheOthers(
  nodes: { admin: { json<T>(method: string, path: string): Promise<T> } }[],
  timeoutMs = 30_000,
): Promise<boolean> {
  const others = nodes.length - 1;
  return waitFor(
    async () => {
      const counts = await Promise.all(
        nodes.map(
          async (n) =>
            (await n.admin.json<{ members: unknown[] }>('GET', '/v1/fleet/auth')).members.length,
        ),
      );
      return counts.every((c) => c === others);
    },
    timeoutMs,
    `every node verifies the ${others} others`,
  );
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
  const code = await run(['--admin', adminUrl, ...args], io, { startNode: async () => 1 });
  return { code, out, err };
}
/** Run the `coral-node` CLI in-process (no node is started): exit code and what it printed. */
export async function runCli(
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<{ code: number; out: string; err: string }> {
  const { run } = await import('../src/cli/program.js');
  let out = '';
  let err = '';
  const code = await run(
    args,
    {
      stdout: { write: (s: string) => (out += s) },
      stderr: { write: (s: string) => (err += s) },
      env,
    },
    { startNode: async () => 1 },
  );
  return { code, out, err };
}

/** Debian's Chromium, which the browser tests drive through playwright-core. */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * Headless Chromium with the flags every browser test uses (no sandbox in containers, no GPU,
 * no QUIC, no background traffic), plus `extraArgs`. Rejects when it does not start; callers
 * turn a missing Chromium into a failing test, never a skipped one.
 */
export function launchChromium(extraArgs: string[]): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...extraArgs,
    ],
  });
}

/** Wait until the node behind `admin` answers /readyz ready; its readiness view. */
export function waitReady(
  admin: { json<T>(method: string, path: string): Promise<T> },
  what = 'the node is ready',
  timeoutMs = 30_000,
): Promise<{ ready: boolean; checks: Record<string, boolean> }> {
  return waitFor(
    () =>
      admin.json<{ ready: boolean; checks: Record<string, boolean> }>('GET', '/readyz').then(
        (r) => (r.ready ? r : undefined),
        () => undefined,
      ),
    timeoutMs,
    what,
  );
}

/** Is this process linked against glibc (Node's report names its runtime version)? */
export const glibc = Boolean(
  (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header
    ?.glibcVersionRuntime,
);
