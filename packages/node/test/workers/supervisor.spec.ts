import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock, waitFor } from '@coral/testkit';
import { WorkerSupervisor, type SupervisorLogger } from '../../src/workers/supervisor.js';
import type { ReadyMessage } from '../../src/workers/protocol.js';

/** A worker that speaks the protocol: ready at once, answers commands; `mode` makes it misbehave. */
const FIXTURE = `
const { parentPort, workerData } = require('node:worker_threads');
const { index, port, mode } = workerData;
if (mode === 'exit-early') process.exit(3);
if (mode !== 'silent') {
  if (mode === 'malformed') parentPort.postMessage({ type: 'bogus' });
  parentPort.on('message', (m) => {
    if (m.type !== 'command') return;
    if (m.command === 'reload' && mode === 'throw-on-reload') throw new Error('reload blew up');
    if (m.command === 'reload' && mode === 'oom-on-reload') {
      const hog = [];
      for (;;) hog.push(new Array(1e5).fill(hog.length));
    }
    parentPort.postMessage({ type: 'done', id: m.id, ok: true, value: { index, command: m.command } });
    if (m.command === 'drain') parentPort.close();
  });
  parentPort.postMessage({ type: 'ready', dns: { host: '127.0.0.1', port } });
}
`;

interface Entry {
  level: string;
  obj: Record<string, unknown>;
  msg: string | undefined;
}

function setup(count: number, modes: (index: number, spawnNo: number) => string = () => 'ok') {
  const clock = new ManualClock(0);
  const logs: Entry[] = [];
  const log =
    (level: string) =>
    (obj: object, msg?: string): void => {
      logs.push({ level, obj: obj as Record<string, unknown>, msg });
    };
  const logger: SupervisorLogger = { info: log('info'), warn: log('warn'), error: log('error') };
  const spawned: { index: number; first: ReadyMessage | undefined; worker: Worker }[] = [];
  const restarts: number[] = [];
  const supervisor = new WorkerSupervisor(
    {
      spawn: (index, first) => {
        const n = spawned.filter((s) => s.index === index).length;
        const mode = modes(index, n);
        const worker = new Worker(FIXTURE, {
          eval: true,
          workerData: { index, port: first?.dns?.port ?? 5300, mode },
          // As the node runs its workers (a smaller heap here): an overflow ends the thread only.
          ...(mode === 'oom-on-reload' ? { resourceLimits: { maxOldGenerationSizeMb: 16 } } : {}),
        });
        spawned.push({ index, first, worker });
        return worker;
      },
      clock,
      logger,
      restarted: (i) => restarts.push(i),
    },
    { count, readyTimeoutMs: 60_000 },
  );
  return { clock, logs, spawned, restarts, supervisor };
}

const spawnsOf = (s: { index: number }[], index: number) =>
  s.filter((x) => x.index === index).length;

describe('WorkerSupervisor', () => {
  const running: WorkerSupervisor[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((s) => s.stop(0)));
  });

  it('starts worker 0 first, gives the others its ready message, and fans commands out', async () => {
    const t = setup(3);
    running.push(t.supervisor);
    await t.supervisor.start();
    expect(t.spawned.map((s) => [s.index, s.first?.dns?.port])).toEqual([
      [0, undefined],
      [1, 5300],
      [2, 5300],
    ]);
    expect(t.supervisor.workers().every((w) => w.ready && w.restarts === 0)).toBe(true);
    const out = await t.supervisor.reload();
    expect(out).toEqual(
      [0, 1, 2].map((i) => ({ worker: i, ok: true, value: { index: i, command: 'reload' } })),
    );
    expect(t.logs.some((l) => l.msg === 'every worker reloaded')).toBe(true);
  });

  it('restarts a crashed worker with a doubling backoff, logs and counts it; the others go on', async () => {
    const t = setup(2, (index, n) => (index === 1 && n < 2 ? 'throw-on-reload' : 'ok'));
    running.push(t.supervisor);
    await t.supervisor.start();

    // Worker 1 throws (an uncaught exception ends its thread): its reload fails, worker 0's is fine.
    const out = await t.supervisor.reload();
    expect(out[0]).toMatchObject({ worker: 0, ok: true });
    expect(out[1]).toMatchObject({ worker: 1, ok: false, code: 'CORAL_ERR_WORKER_UNAVAILABLE' });
    await waitFor(() => t.restarts.length === 1, { what: 'the restart' });
    const crash = t.logs.find((l) => l.msg === 'worker exited; starting it again')!;
    expect(crash.level).toBe('error');
    expect(crash.obj).toMatchObject({ worker: 1, exitCode: 1, restartInMs: 100, restarts: 1 });
    expect(String((crash.obj.err as Error).message)).toContain('reload blew up');
    expect(t.supervisor.workers()[1]!.ready).toBe(false);

    // Started again after 100 ms of the clock, not before.
    await t.clock.advance(99);
    expect(spawnsOf(t.spawned, 1)).toBe(1);
    await t.clock.advance(1);
    expect(spawnsOf(t.spawned, 1)).toBe(2);
    await waitFor(() => t.supervisor.workers()[1]!.ready, { what: 'worker 1 ready again' });

    // It crashes again at once: 200 ms this time.
    await t.supervisor.reload();
    await waitFor(() => t.restarts.length === 2, { what: 'the second restart' });
    await t.clock.advance(199);
    expect(spawnsOf(t.spawned, 1)).toBe(2);
    await t.clock.advance(1);
    expect(spawnsOf(t.spawned, 1)).toBe(3);
    await waitFor(() => t.supervisor.workers()[1]!.ready, { what: 'worker 1 ready a third time' });

    // Up a minute, then killed: the backoff starts over at 100 ms.
    await t.clock.advance(60_000);
    await t.supervisor.kill(1);
    await waitFor(() => t.restarts.length === 3, { what: 'the third restart' });
    expect(
      t.logs.filter((l) => l.msg === 'worker exited; starting it again').at(-1)!.obj,
    ).toMatchObject({
      worker: 1,
      restartInMs: 100,
    });
    expect(t.restarts).toEqual([1, 1, 1]);
    // Worker 0 never noticed.
    expect(spawnsOf(t.spawned, 0)).toBe(1);
    expect(t.supervisor.workers().map((w) => w.restarts)).toEqual([0, 3]);
  });

  it('restarts a worker whose heap overflowed its resourceLimits; the process lives on', async () => {
    const t = setup(2, (index, n) => (index === 0 && n === 0 ? 'oom-on-reload' : 'ok'));
    running.push(t.supervisor);
    await t.supervisor.start();
    const out = await t.supervisor.reload();
    expect(out.map((o) => o.ok)).toEqual([false, true]);
    await waitFor(() => t.restarts.length === 1, { what: 'the restart' });
    const crash = t.logs.find((l) => l.msg === 'worker exited; starting it again')!;
    expect(crash.obj).toMatchObject({ worker: 0, restartInMs: 100 });
    expect((crash.obj.err as { code?: string }).code).toBe('ERR_WORKER_OUT_OF_MEMORY');
    await t.clock.advance(100);
    await waitFor(() => t.supervisor.workers()[0]!.ready, { what: 'worker 0 ready again' });
  });

  it('drops a malformed message from a worker with an error line, and keeps the worker', async () => {
    const t = setup(1, () => 'malformed');
    running.push(t.supervisor);
    await t.supervisor.start();
    const line = t.logs.find((l) => l.msg === 'dropped a malformed message from a worker')!;
    expect((line.obj.err as { code: string }).code).toBe('CORAL_ERR_WORKER_PROTOCOL');
    expect(t.supervisor.workers()[0]!.ready).toBe(true);
  });

  it('fails the start when a worker exits or stays silent before it is ready', async () => {
    const early = setup(2, (index) => (index === 1 ? 'exit-early' : 'ok'));
    await expect(early.supervisor.start()).rejects.toMatchObject({
      code: 'CORAL_ERR_WORKER_START',
      message: expect.stringContaining('worker 1 exited with code 3 before it was ready'),
    });
    expect(early.restarts).toEqual([]);

    const silent = setup(1, () => 'silent');
    const started = silent.supervisor.start();
    await waitFor(() => silent.spawned.length === 1);
    await silent.clock.advance(60_000);
    await expect(started).rejects.toMatchObject({
      code: 'CORAL_ERR_WORKER_START',
      message: expect.stringContaining('not ready after 60000 ms'),
    });
  });

  it('drains every worker on stop and starts none again', async () => {
    const t = setup(2);
    await t.supervisor.start();
    const out = await t.supervisor.stop(1000);
    expect(out).toEqual(
      [0, 1].map((i) => ({ worker: i, ok: true, value: { index: i, command: 'drain' } })),
    );
    await t.clock.advance(20_000);
    expect(t.spawned).toHaveLength(2);
    expect(t.restarts).toEqual([]);
    await expect(
      t.supervisor.command(0, { type: 'command', command: 'stats' }),
    ).rejects.toMatchObject({
      code: 'CORAL_ERR_WORKER_UNAVAILABLE',
    });
  });
});
