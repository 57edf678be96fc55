/** What the coordinator and a worker thread share (see worker.ts). */
import type { MessagePort } from 'node:worker_threads';
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
