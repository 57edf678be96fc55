import { closeSync, mkdtempSync, openSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ACCESSLOG_ERR_OPEN, ACCESSLOG_ERR_OPTIONS, openSink } from '../src/index.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'coral-accesslog-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const lines = (path: string) => readFileSync(path, 'utf8').split('\n').filter(Boolean);
const line = (i: number) => `{"log":"access","n":${i},"pad":"${'x'.repeat(i % 97)}"}\n`;

describe('file destination', () => {
  it('loses no line at close: N written, N read back in order', async () => {
    const path = join(dir, 'access.log');
    const sink = await openSink({ file: path });
    const n = 20_000;
    for (let i = 0; i < n; i++) sink.write(line(i));
    await sink.close();
    const got = lines(path);
    expect(got).toHaveLength(n);
    expect(got.map((l) => (JSON.parse(l) as { n: number }).n)).toEqual([...Array(n).keys()]);
    expect(sink.stats).toMatchObject({ lines: n, dropped: 0, pendingBytes: 0, errors: 0 });
    // After close: dropped and counted, never written, never thrown.
    sink.write(line(n));
    expect(sink.stats.dropped).toBe(1);
    expect(lines(path)).toHaveLength(n);
  });

  it('appends to an existing file rather than truncating it', async () => {
    const path = join(dir, 'access.log');
    for (const round of [0, 1]) {
      const sink = await openSink({ file: path });
      sink.write(line(round));
      await sink.close();
    }
    expect(lines(path)).toHaveLength(2);
  });

  it('flush() resolves once every accepted line is on disk', async () => {
    const path = join(dir, 'access.log');
    const sink = await openSink({ file: path });
    for (let i = 0; i < 1000; i++) sink.write(line(i));
    await sink.flush();
    expect(sink.stats.pendingBytes).toBe(0);
    expect(lines(path)).toHaveLength(1000);
    await sink.close();
  });

  it('reopens by path after logrotate moved the file: old lines stay, new ones go to the new file', async () => {
    const path = join(dir, 'access.log');
    const moved = join(dir, 'access.log.1');
    const sink = await openSink({ file: path });
    for (let i = 0; i < 500; i++) sink.write(line(i));
    await sink.flush();
    renameSync(path, moved);
    // Written after the move and before the reopen: still the old descriptor (the moved file).
    sink.write(line(500));
    sink.reopen();
    for (let i = 501; i < 1000; i++) sink.write(line(i));
    await sink.close();
    const before = lines(moved);
    const after = lines(path);
    expect(before.length + after.length).toBe(1000);
    expect(before.length).toBeGreaterThanOrEqual(500);
    const all = [...before, ...after].map((l) => (JSON.parse(l) as { n: number }).n);
    expect(all).toEqual([...Array(1000).keys()]);
    // Everything written after reopen() went to the new file.
    expect(after.map((l) => (JSON.parse(l) as { n: number }).n)).toEqual(
      [...Array(499).keys()].map((i) => i + 501),
    );
    expect(sink.stats.reopens).toBe(1);
  });

  it('drops and counts lines past its buffer instead of growing it', async () => {
    const path = join(dir, 'access.log');
    const sink = await openSink({ file: path }, { bufferBytes: 8192 });
    // One synchronous burst: no write can complete before it ends, so the buffer holds it all.
    const n = 1000;
    for (let i = 0; i < n; i++) sink.write(line(i));
    expect(sink.stats.pendingBytes).toBeLessThanOrEqual(8192);
    expect(sink.stats.dropped).toBeGreaterThan(0);
    expect(sink.stats.lines + sink.stats.dropped).toBe(n);
    await sink.close();
    expect(lines(path)).toHaveLength(sink.stats.lines);
  });

  it('refuses a path it cannot open with ACCESSLOG_ERR_OPEN', async () => {
    await expect(openSink({ file: join(dir, 'no', 'such', 'dir', 'a.log') })).rejects.toMatchObject(
      { code: ACCESSLOG_ERR_OPEN },
    );
  });

  it('refuses a buffer too small to hold a line with ACCESSLOG_ERR_OPTIONS', async () => {
    await expect(openSink('stdout', { bufferBytes: 100 })).rejects.toMatchObject({
      code: ACCESSLOG_ERR_OPTIONS,
    });
  });
});

describe('stdout and off', () => {
  it('stdout writes to its descriptor and leaves it open at close', async () => {
    const path = join(dir, 'stdout');
    const fd = openSync(path, 'a');
    const sink = await openSink('stdout', { stdoutFd: fd });
    for (let i = 0; i < 100; i++) sink.write(line(i));
    sink.reopen(); // a no-op: there is no path to reopen
    await sink.close();
    expect(lines(path)).toHaveLength(100);
    expect(sink.stats.reopens).toBe(0);
    closeSync(fd); // still ours to close: it throws EBADF if the sink had closed it
  });

  it('off writes nothing and flushes at once', async () => {
    const sink = await openSink('off');
    sink.write(line(1));
    await sink.flush();
    await sink.close();
    expect(sink.stats.lines).toBe(0);
  });
});
