import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor as poll } from '@coral/testkit';

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
