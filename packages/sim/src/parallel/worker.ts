/**
 * A parallel fleet's worker thread: one `Shard`, built from `workerData`, answering the
 * coordinator's steps and queries one at a time.
 *
 * Handing over is cheap on purpose (a window lasts about a millisecond): the request and the
 * answer travel on a MessagePort (the datagram batches transferred, not copied), but neither side
 * waits on its event loop for them — the sender raises a flag in a SharedArrayBuffer and notifies,
 * the receiver blocks on the flag with `Atomics.wait`, then takes the message off the port with
 * `receiveMessageOnPort`.
 */
import { workerData } from 'node:worker_threads';
import { Shard } from './shard.js';
import {
  ANSWER,
  awaitFlag,
  REQUEST,
  SPIN_US,
  takeMessage,
  type WorkerData,
  type WorkerRequest,
} from './handoff.js';

const { config, port, flags: shared } = workerData as WorkerData;
const flags = new Int32Array(shared);
const shard = new Shard(config);

function answer(message: unknown, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
  Atomics.store(flags, ANSWER, 1);
  Atomics.notify(flags, ANSWER);
}

for (;;) {
  awaitFlag(flags, REQUEST, SPIN_US);
  Atomics.store(flags, REQUEST, 0);
  const m = takeMessage(port) as WorkerRequest;
  if (m.type === 'close') break;
  try {
    if (m.type === 'step') {
      const r = await shard.step(m);
      answer(
        { ok: r },
        r.outbox.filter((b): b is ArrayBuffer => b !== undefined),
      );
    } else {
      answer({ ok: shard.query(m) });
    }
  } catch (err) {
    answer({ error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  }
}
port.close();
