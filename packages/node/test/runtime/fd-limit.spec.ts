/**
 * The open-file limit through libc (koffi). Run in a child process: lowering the limit of the test
 * worker itself would starve whatever else it runs.
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { raiseDescriptorLimit, type RlimitCalls } from '../../src/runtime/fd-limit.js';
import { glibc } from '../helpers.js';

const FD_LIMIT = new URL('../../dist/runtime/fd-limit.js', import.meta.url).href;

describe('raiseDescriptorLimit', () => {
  it.runIf(glibc)('raises a lowered soft limit to the hard one (setrlimit through koffi)', () => {
    const script = `
      import { loadRlimit, raiseDescriptorLimit } from ${JSON.stringify(FD_LIMIT)};
      const { calls } = await loadRlimit();
      const { hard } = calls.get();
      calls.setSoft(300, hard);
      const r = await raiseDescriptorLimit();
      process.stdout.write(JSON.stringify({ hard, r }));`;
    const out = JSON.parse(
      execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }),
    ) as {
      hard: number;
      r: { raised: boolean; before: { soft: number }; limits: { soft: number; hard: number } };
    };
    expect(out.r.raised).toBe(true);
    expect(out.r.before.soft).toBe(300);
    expect(out.r.limits).toEqual({ soft: Math.min(out.hard, 1_048_576), hard: out.hard });
  });

  it('reports a refused raise and leaves the limit; nothing to do at the hard limit', async () => {
    let soft = 256;
    const calls: RlimitCalls = {
      get: () => ({ soft, hard: 4096 }),
      setSoft: () => {
        throw new Error('setrlimit: errno 1');
      },
    };
    expect(await raiseDescriptorLimit(calls)).toEqual({
      raised: false,
      before: { soft: 256, hard: 4096 },
      limits: { soft: 256, hard: 4096 },
      error: 'setrlimit: errno 1',
    });
    soft = 4096;
    expect(await raiseDescriptorLimit(calls)).toMatchObject({
      raised: false,
      limits: { soft: 4096 },
    });
  });
});
