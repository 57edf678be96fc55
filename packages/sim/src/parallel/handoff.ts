/** What the coordinator and a worker thread share (see worker.ts). */
import { receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import type { ShardConfig, ShardQuery, StepMessage } from './shard.js';

/** What the coordinator sends: a step, a query tagged `type: 'query'`, or the end. */
export type WorkerRequest = StepMessage | ({ type: 'query' } & ShardQuery) | { type: 'close' };

/** Flags in the shared Int32Array: a request is waiting, an answer is waiting. */
export const REQUEST = 0;
export const ANSWER = 1;

/** A worker's `workerData`. */
export interface WorkerData {
  config: ShardConfig;
  port: MessagePort;
  flags: SharedArrayBuffer;
}

/**
 * Wait until `flags[index]` is no longer 0: spin for up to `spinUs` microseconds (a window's two
 * halves usually finish within a fraction of a millisecond of each other, and a thread that
 * blocks may lose its core to other processes for much longer), then block with Atomics.wait for
 * up to `timeoutMs`. Returns false when it timed out.
 */
export function awaitFlag(
  flags: Int32Array,
  index: number,
  spinUs: number,
  timeoutMs?: number,
): boolean {
  if (Atomics.load(flags, index) !== 0) return true;
  if (spinUs > 0) {
    const until = performance.now() + spinUs / 1000;
    do {
      for (let i = 0; i < 64; i++) if (Atomics.load(flags, index) !== 0) return true;
    } while (performance.now() < until);
  }
  return Atomics.wait(flags, index, 0, timeoutMs) !== 'timed-out';
}

/** Microseconds a waiting side spins before it blocks (CORAL_SIM_SPIN_US overrides, for measuring). */
export const SPIN_US = Number(process.env.CORAL_SIM_SPIN_US ?? 300);

/**
 * Take the message the other side raised the flag for. A message posted before the flag was
 * raised is normally on the port already; should it not be yet, try again for up to a second.
 */
export function takeMessage(port: MessagePort): unknown {
  const until = performance.now() + 1000;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    const m = receiveMessageOnPort(port);
    if (m) return m.message;
    if (performance.now() > until) throw new Error('flag raised without a message');
    Atomics.wait(pause, 0, 0, 0.05);
  }
}
