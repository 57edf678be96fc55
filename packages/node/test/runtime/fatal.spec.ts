import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { FATAL_EXIT_CODE, installFatalHandlers } from '../../src/runtime/fatal.js';

class FakeProcess extends EventEmitter {
  exits: number[] = [];
  exit(code: number): void {
    this.exits.push(code);
  }
}

function setup() {
  const proc = new FakeProcess();
  const lines: Array<{ obj: Record<string, unknown>; msg: string }> = [];
  let flushed = 0;
  installFatalHandlers(proc, {
    fatal: ((obj: Record<string, unknown>, msg: string) => lines.push({ obj, msg })) as never,
    flush: () => void flushed++,
  });
  return { proc, lines, flushed: () => flushed };
}

describe('installFatalHandlers', () => {
  it('an uncaught exception is logged at fatal with its cause, then the process exits 1', () => {
    const { proc, lines, flushed } = setup();
    const err = Object.assign(new Error('boom'), { code: 'ERR_X' });
    proc.emit('uncaughtException', err, 'uncaughtException');
    expect(lines).toHaveLength(1);
    expect(lines[0]!.obj).toMatchObject({ err, origin: 'uncaughtException', code: 'ERR_X' });
    expect(lines[0]!.msg).toMatch(/uncaught exception: boom; exiting \(status 1\)/);
    expect(flushed()).toBe(1);
    expect(proc.exits).toEqual([FATAL_EXIT_CODE]);
    expect(FATAL_EXIT_CODE).not.toBe(0);
  });

  it('an unhandled rejection too', () => {
    const { proc, lines } = setup();
    proc.emit('unhandledRejection', new Error('lost'));
    expect(lines[0]!.msg).toMatch(/unhandled rejection: lost/);
    expect(proc.exits).toEqual([1]);
  });
});
