/**
 * The owner's side of a node's worker threads: starts N of them, keeps N running, and speaks the
 * protocol (protocol.ts) with each.
 *
 * - **Start.** Worker 0 first — it may bind a port chosen by the kernel (port 0), which the others
 *   are then given — then the rest together. `start()` resolves when every worker is `ready`; if
 *   one exits or stays silent for `readyTimeoutMs` first, every worker is stopped and `start()`
 *   rejects with `CORAL_ERR_WORKER_START`.
 * - **Crash → restart.** A worker that exits while the node runs (an uncaught exception, a heap
 *   overflow under `resourceLimits`, `terminate()`) is logged at error with its exit code and
 *   error, counted (`restarted(index)`: `coral_workers_restarts_total{worker}`), and started again
 *   after a backoff: `initialMs` (100 ms) doubling per consecutive failure up to `maxMs` (10 s); a
 *   worker that had been up `resetAfterMs` (60 s) starts from `initialMs` again. Its requests
 *   in flight fail with `CORAL_ERR_WORKER_UNAVAILABLE`; the other workers do not notice.
 * - **Commands.** `reload()` (SIGHUP) and `stats()` fan out to every ready worker and gather the
 *   answers; `stop(graceMs)` (SIGTERM) sends `drain` to every worker, waits for each to answer
 *   (bounded by `graceMs` + 1 s), then ends the threads; no restart after it began.
 * - **Requests** from a worker (`hinted`) go to `onRequest`; its value or error is the reply.
 *
 * Time goes through the injected clock (backoff, timeouts), so tests drive the restarts by hand.
 */
import type { Worker } from 'node:worker_threads';
import type { Clock, TimerHandle } from '@coral/runtime';
import { CoralNodeError, WorkerError } from '../errors.js';
import {
  decodeToOwner,
  type ReadyMessage,
  type ToOwner,
  type ToWorker,
  type CommandBody,
  type WorkerReport,
  type WorkerRequest,
} from './protocol.js';

export const DEFAULT_RESTART_INITIAL_MS = 100;
export const DEFAULT_RESTART_MAX_MS = 10_000;
export const DEFAULT_RESTART_RESET_AFTER_MS = 60_000;
export const DEFAULT_READY_TIMEOUT_MS = 15_000;
export const DEFAULT_COMMAND_TIMEOUT_MS = 5_000;

export interface SupervisorLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface WorkerSupervisorComponents {
  /**
   * Start worker `index` (a new thread each call: at start and at every restart). `first` is
   * worker 0's `ready` message once it has one (undefined when starting worker 0 the first time).
   */
  spawn(index: number, first: ReadyMessage | undefined): Worker;
  clock: Clock;
  logger: SupervisorLogger;
  /** A worker exited and will be started again. */
  restarted?(index: number): void;
  /** A request from worker `index`; what it resolves with is the reply's value. */
  onRequest?(index: number, request: WorkerRequest): Promise<unknown>;
  /** A worker's report of its counters. */
  onReport?(index: number, report: WorkerReport): void;
  /** Worker `index` (started or restarted) is ready. */
  onReady?(index: number, ready: ReadyMessage): void;
}

export interface WorkerSupervisorOptions {
  count: number;
  restart?: { initialMs?: number; maxMs?: number; resetAfterMs?: number };
  readyTimeoutMs?: number;
  commandTimeoutMs?: number;
}

/** One worker's answer to a command fanned out to all. */
export type CommandOutcome =
  | { worker: number; ok: true; value: unknown }
  | { worker: number; ok: false; code: string; message: string };

interface Pending {
  resolve(value: unknown): void;
  reject(err: Error): void;
  timer: TimerHandle;
}

interface Slot {
  index: number;
  worker: Worker | undefined;
  ready: ReadyMessage | undefined;
  startedAt: number;
  /** Consecutive exits without `resetAfterMs` of uptime between them. */
  failures: number;
  restarts: number;
  restartTimer: TimerHandle | undefined;
  readyTimer: TimerHandle | undefined;
  /** The last error the thread emitted before its exit. */
  lastError: unknown;
  pending: Map<number, Pending>;
  /** Settles the first start of this slot (start()). */
  onFirst: ((err?: Error) => void) | undefined;
}

export class WorkerSupervisor {
  readonly #c: WorkerSupervisorComponents;
  readonly #count: number;
  readonly #initialMs: number;
  readonly #maxMs: number;
  readonly #resetAfterMs: number;
  readonly #readyTimeoutMs: number;
  readonly #commandTimeoutMs: number;
  readonly #slots: Slot[] = [];
  #nextId = 1;
  #state: 'new' | 'starting' | 'running' | 'stopping' | 'stopped' = 'new';
  #first: ReadyMessage | undefined;

  constructor(components: WorkerSupervisorComponents, options: WorkerSupervisorOptions) {
    if (!Number.isInteger(options.count) || options.count < 1) {
      throw new WorkerError('CORAL_ERR_WORKER_START', `count must be ≥ 1, got ${options.count}`);
    }
    this.#c = components;
    this.#count = options.count;
    this.#initialMs = options.restart?.initialMs ?? DEFAULT_RESTART_INITIAL_MS;
    this.#maxMs = options.restart?.maxMs ?? DEFAULT_RESTART_MAX_MS;
    this.#resetAfterMs = options.restart?.resetAfterMs ?? DEFAULT_RESTART_RESET_AFTER_MS;
    this.#readyTimeoutMs = options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS;
    this.#commandTimeoutMs = options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    for (let index = 0; index < this.#count; index++) {
      this.#slots.push({
        index,
        worker: undefined,
        ready: undefined,
        startedAt: 0,
        failures: 0,
        restarts: 0,
        restartTimer: undefined,
        readyTimer: undefined,
        lastError: undefined,
        pending: new Map(),
        onFirst: undefined,
      });
    }
  }

  get count(): number {
    return this.#count;
  }

  /** Worker 0's `ready` (where it listens), once it has started. */
  get first(): ReadyMessage | undefined {
    return this.#first;
  }

  /** Per worker: whether it is ready, its restarts so far, its thread id. */
  workers(): { worker: number; ready: boolean; restarts: number; threadId: number | undefined }[] {
    return this.#slots.map((s) => ({
      worker: s.index,
      ready: s.ready !== undefined,
      restarts: s.restarts,
      threadId: s.worker?.threadId,
    }));
  }

  /** Start every worker; resolves when all are ready (see the module comment). */
  async start(): Promise<void> {
    if (this.#state !== 'new') throw new WorkerError('CORAL_ERR_WORKER_START', 'started twice');
    this.#state = 'starting';
    try {
      await this.#firstStart(this.#slots[0]!);
      await Promise.all(this.#slots.slice(1).map((s) => this.#firstStart(s)));
    } catch (err) {
      await this.stop(0);
      throw err;
    }
    this.#state = 'running';
  }

  #firstStart(slot: Slot): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      slot.onFirst = (err) => {
        slot.onFirst = undefined;
        if (err) reject(err);
        else resolve();
      };
      this.#spawn(slot);
    });
  }

  #spawn(slot: Slot): void {
    slot.restartTimer = undefined;
    let worker: Worker;
    try {
      worker = this.#c.spawn(slot.index, this.#first);
    } catch (err) {
      slot.lastError = err;
      this.#exited(slot, undefined, -1);
      return;
    }
    slot.worker = worker;
    slot.ready = undefined;
    slot.lastError = undefined;
    slot.startedAt = this.#c.clock.now();
    slot.readyTimer = this.#c.clock.setTimeout(() => {
      slot.readyTimer = undefined;
      if (slot.worker !== worker || slot.ready) return;
      slot.lastError = new WorkerError(
        'CORAL_ERR_WORKER_START',
        `worker ${slot.index} not ready after ${this.#readyTimeoutMs} ms`,
      );
      void worker.terminate();
    }, this.#readyTimeoutMs);
    worker.on('message', (m: unknown) => this.#onMessage(slot, worker, m));
    worker.on('error', (err: unknown) => {
      if (slot.worker === worker) slot.lastError = err;
    });
    worker.on('exit', (code: number) => this.#exited(slot, worker, code));
  }

  #onMessage(slot: Slot, worker: Worker, raw: unknown): void {
    if (slot.worker !== worker) return;
    let m: ToOwner;
    try {
      m = decodeToOwner(raw);
    } catch (err) {
      this.#c.logger.error(
        { worker: slot.index, err },
        'dropped a malformed message from a worker',
      );
      return;
    }
    switch (m.type) {
      case 'ready': {
        slot.readyTimer?.cancel();
        slot.readyTimer = undefined;
        slot.ready = m;
        if (slot.index === 0 && !this.#first) this.#first = m;
        this.#c.logger.info(
          { worker: slot.index, threadId: worker.threadId, dns: m.dns, restarts: slot.restarts },
          'worker ready',
        );
        this.#c.onReady?.(slot.index, m);
        slot.onFirst?.();
        return;
      }
      case 'done': {
        const p = slot.pending.get(m.id);
        if (!p) return;
        slot.pending.delete(m.id);
        p.timer.cancel();
        if (m.ok) p.resolve(m.value);
        else p.reject(new CoralNodeError(m.code, m.message));
        return;
      }
      case 'request':
        void this.#answer(slot, worker, m);
        return;
      case 'report':
        this.#c.onReport?.(slot.index, m);
        return;
    }
  }

  async #answer(slot: Slot, worker: Worker, req: WorkerRequest): Promise<void> {
    let reply: ToWorker;
    try {
      if (!this.#c.onRequest) {
        throw new WorkerError('CORAL_ERR_WORKER_UNAVAILABLE', `no handler for ${req.op}`);
      }
      reply = {
        type: 'reply',
        id: req.id,
        ok: true,
        value: await this.#c.onRequest(slot.index, req),
      };
    } catch (err) {
      reply = { type: 'reply', id: req.id, ok: false, code: codeOf(err), message: messageOf(err) };
    }
    if (slot.worker === worker) this.#post(slot, reply);
  }

  #exited(slot: Slot, worker: Worker | undefined, code: number): void {
    if (worker && slot.worker !== worker) return;
    slot.readyTimer?.cancel();
    slot.readyTimer = undefined;
    const wasReady = slot.ready !== undefined;
    slot.worker = undefined;
    slot.ready = undefined;
    for (const p of slot.pending.values()) {
      p.timer.cancel();
      p.reject(new WorkerError('CORAL_ERR_WORKER_UNAVAILABLE', `worker ${slot.index} exited`));
    }
    slot.pending.clear();
    const err = slot.lastError;
    if (this.#state === 'stopping' || this.#state === 'stopped') return;
    if (slot.onFirst) {
      slot.onFirst(
        new WorkerError(
          'CORAL_ERR_WORKER_START',
          `worker ${slot.index} exited with code ${code} before it was ready` +
            (err ? `: ${messageOf(err)}` : ''),
          { cause: err },
        ),
      );
      return;
    }
    const now = this.#c.clock.now();
    if (now - slot.startedAt >= this.#resetAfterMs) slot.failures = 0;
    const delay = Math.min(this.#initialMs * 2 ** slot.failures, this.#maxMs);
    slot.failures++;
    slot.restarts++;
    this.#c.restarted?.(slot.index);
    this.#c.logger.error(
      {
        worker: slot.index,
        exitCode: code,
        err,
        wasReady,
        restartInMs: delay,
        restarts: slot.restarts,
      },
      'worker exited; starting it again',
    );
    slot.restartTimer = this.#c.clock.setTimeout(() => this.#spawn(slot), delay);
  }

  #post(slot: Slot, m: ToWorker): boolean {
    const w = slot.worker;
    if (!w) return false;
    try {
      w.postMessage(m);
      return true;
    } catch (err) {
      this.#c.logger.warn({ worker: slot.index, err }, 'cannot post to a worker');
      return false;
    }
  }

  /** Send `m` to every started worker (a worker starting later gets the state in its workerData). */
  broadcast(m: ToWorker): void {
    for (const s of this.#slots) this.#post(s, m);
  }

  /** Send a command to one worker and wait for its answer. */
  command(
    index: number,
    command: CommandBody,
    timeoutMs = this.#commandTimeoutMs,
  ): Promise<unknown> {
    const slot = this.#slots[index];
    if (!slot?.worker || !slot.ready) {
      return Promise.reject(
        new WorkerError('CORAL_ERR_WORKER_UNAVAILABLE', `worker ${index} is not running`),
      );
    }
    const id = this.#nextId++;
    return new Promise<unknown>((resolve, reject) => {
      const timer = this.#c.clock.setTimeout(() => {
        slot.pending.delete(id);
        reject(
          new WorkerError(
            'CORAL_ERR_WORKER_UNAVAILABLE',
            `worker ${index} did not answer ${command.command} within ${timeoutMs} ms`,
          ),
        );
      }, timeoutMs);
      slot.pending.set(id, { resolve, reject, timer });
      if (!this.#post(slot, { ...command, id })) {
        slot.pending.delete(id);
        timer.cancel();
        reject(new WorkerError('CORAL_ERR_WORKER_UNAVAILABLE', `worker ${index} is not running`));
      }
    });
  }

  /** A command to every worker, each answer or error in worker order. */
  async fanOut(
    command: CommandBody,
    timeoutMs = this.#commandTimeoutMs,
  ): Promise<CommandOutcome[]> {
    return Promise.all(
      this.#slots.map((s) =>
        this.command(s.index, command, timeoutMs).then(
          (value): CommandOutcome => ({ worker: s.index, ok: true, value }),
          (err: unknown): CommandOutcome => ({
            worker: s.index,
            ok: false,
            code: codeOf(err),
            message: messageOf(err),
          }),
        ),
      ),
    );
  }

  /**
   * End worker `index`'s thread as a crash would (`worker.terminate()`): it is logged, counted and
   * started again like any exit. Resolves once the thread has ended.
   */
  async kill(index: number): Promise<void> {
    const slot = this.#slots[index];
    const w = slot?.worker;
    if (!slot || !w) {
      throw new WorkerError('CORAL_ERR_WORKER_UNAVAILABLE', `worker ${index} is not running`);
    }
    slot.lastError = new Error(`worker ${index} ended by kill()`);
    await w.terminate();
  }

  /** SIGHUP: every worker reloads; logged with the workers that failed. */
  async reload(): Promise<CommandOutcome[]> {
    const out = await this.fanOut({ type: 'command', command: 'reload' });
    const failed = out.filter((o) => !o.ok);
    if (failed.length === 0) this.#c.logger.info({ workers: out.length }, 'every worker reloaded');
    else this.#c.logger.warn({ failed }, 'workers that did not reload keep their old state');
    return out;
  }

  /**
   * Drain and end every worker: `drain` to each (it stops accepting and finishes what it has, up to
   * `graceMs`), then the threads end. Resolves with each worker's answer to `drain`.
   */
  async stop(graceMs: number): Promise<CommandOutcome[]> {
    if (this.#state === 'stopped') return [];
    const wasStarting = this.#state === 'starting' || this.#state === 'new';
    this.#state = 'stopping';
    for (const s of this.#slots) {
      s.restartTimer?.cancel();
      s.restartTimer = undefined;
    }
    const out = wasStarting
      ? []
      : await this.fanOut({ type: 'command', command: 'drain', graceMs }, graceMs + 1_000);
    await Promise.all(
      this.#slots.map(async (s) => {
        const w = s.worker;
        if (!w) return;
        await w.terminate();
      }),
    );
    this.#state = 'stopped';
    return out;
  }
}

/** The stable code of an error, for a reply (a code-less error is the worker being unavailable). */
export function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[A-Z][A-Z0-9_]{0,63}$/.test(code)
    ? code
    : 'CORAL_ERR_WORKER_UNAVAILABLE';
}

/** The message of an error, for a reply or a log line. */
export function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  return typeof err === 'string' ? err : String(JSON.stringify(err));
}
