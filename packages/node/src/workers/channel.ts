/**
 * A worker's end of the protocol (protocol.ts) over its `parentPort`: incoming messages are
 * checked and dispatched (a malformed one is logged and dropped), commands are answered with
 * `done`, and `request()` asks the owner and awaits its reply (bounded by `timeoutMs`).
 */
import type { MessagePort } from 'node:worker_threads';
import type { Clock, TimerHandle } from '@coral/runtime';
import { CoralNodeError, WorkerError } from '../errors.js';
import {
  decodeToWorker,
  type ChallengeEntry,
  type ToOwner,
  type ToWorker,
  type WorkerCommand,
  type WorkerRequest,
} from './protocol.js';
import type { DirectorySnapshot } from '@coral/dnssrv';
import { codeOf, messageOf, type SupervisorLogger } from './supervisor.js';

export const DEFAULT_REQUEST_TIMEOUT_MS = 5_000;

export interface WorkerChannelHandlers {
  directory(seq: number, snapshot: DirectorySnapshot): void;
  challenges(entries: ChallengeEntry[]): void;
  /** Answer a command; what it resolves with is the `done` value. */
  command(c: WorkerCommand): Promise<unknown>;
}

export class WorkerChannel {
  readonly #port: MessagePort;
  readonly #clock: Clock;
  readonly #logger: SupervisorLogger;
  readonly #timeoutMs: number;
  readonly #pending = new Map<
    number,
    { resolve(v: unknown): void; reject(e: Error): void; timer: TimerHandle }
  >();
  #handlers: WorkerChannelHandlers | undefined;
  #nextId = 1;

  constructor(
    components: { port: MessagePort; clock: Clock; logger: SupervisorLogger },
    options: { timeoutMs?: number } = {},
  ) {
    this.#port = components.port;
    this.#clock = components.clock;
    this.#logger = components.logger;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.#port.on('message', (m: unknown) => this.#onMessage(m));
  }

  /**
   * Start dispatching. Call it in the same turn of the event loop as the constructor: messages
   * are delivered from the next turn on, and one that arrives with no handlers is dropped.
   */
  handle(handlers: WorkerChannelHandlers): void {
    this.#handlers = handlers;
  }

  send(m: ToOwner): void {
    this.#port.postMessage(m);
  }

  /** Ask the owner; rejects with its error, or `CORAL_ERR_WORKER_UNAVAILABLE` after the timeout. */
  request(body: Omit<WorkerRequest, 'type' | 'id'>): Promise<unknown> {
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      const timer = this.#clock.setTimeout(() => {
        this.#pending.delete(id);
        reject(
          new WorkerError(
            'CORAL_ERR_WORKER_UNAVAILABLE',
            `the owner did not answer ${body.op} within ${this.#timeoutMs} ms`,
          ),
        );
      }, this.#timeoutMs);
      this.#pending.set(id, { resolve, reject, timer });
      this.send({ type: 'request', id, ...body });
    });
  }

  /** Stop listening: the thread can end once nothing else holds it. */
  close(): void {
    for (const p of this.#pending.values()) {
      p.timer.cancel();
      p.reject(new WorkerError('CORAL_ERR_WORKER_UNAVAILABLE', 'the worker is stopping'));
    }
    this.#pending.clear();
    this.#port.removeAllListeners('message');
    this.#port.unref();
  }

  #onMessage(raw: unknown): void {
    let m: ToWorker;
    try {
      m = decodeToWorker(raw);
    } catch (err) {
      this.#logger.error({ err }, 'dropped a malformed message from the owner');
      return;
    }
    const h = this.#handlers;
    switch (m.type) {
      case 'reply': {
        const p = this.#pending.get(m.id);
        if (!p) return;
        this.#pending.delete(m.id);
        p.timer.cancel();
        if (m.ok) p.resolve(m.value);
        else p.reject(new CoralNodeError(m.code, m.message));
        return;
      }
      case 'directory':
        h?.directory(m.seq, m.snapshot);
        return;
      case 'challenges':
        h?.challenges(m.entries);
        return;
      case 'command':
        void this.#command(m);
        return;
    }
  }

  async #command(c: WorkerCommand): Promise<void> {
    let done: ToOwner;
    try {
      if (!this.#handlers) throw new WorkerError('CORAL_ERR_WORKER_UNAVAILABLE', 'not started');
      done = { type: 'done', id: c.id, ok: true, value: await this.#handlers.command(c) };
    } catch (err) {
      done = { type: 'done', id: c.id, ok: false, code: codeOf(err), message: messageOf(err) };
    }
    this.send(done);
  }
}
