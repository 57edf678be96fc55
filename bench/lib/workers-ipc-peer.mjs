// The owner side of bench/lib/workers-ipc.mjs: answers metadata and body requests.
//   forked (child_process, advanced or JSON serialization): over process.send, and in the same
//     process on a Unix domain socket (the path in the first message) and on a loopback HTTP port;
//     it answers { httpPort } when all three are up, and { cpu } (its process.cpuUsage()) to
//     { op: 'cpu' };
//   a worker thread, workerData { mode: 'port' }: over the MessagePort it is sent;
//   a worker thread, workerData { mode: 'atomics', ctl }: over the SharedArrayBuffer `ctl`, by
//     Atomics.wait/notify (Int32 0: the state, 1 request, 2 reply, 3 stop; Int32 1: the length of
//     the message in the bytes from offset 8).
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { pack, unpack } from 'msgpackr';
import { bodyFor } from './bodies.mjs';
import { META_REPLY, OP_BODY, OP_META, frameReader, writeFrame } from './workers-ipc.mjs';

/** The bodies the owner holds, by size (made on first use). */
const bodies = new Map();
const bodyOf = (size) => {
  let b = bodies.get(size);
  if (!b) bodies.set(size, (b = bodyFor(size)));
  return b;
};

if (isMainThread) {
  process.once('disconnect', () => process.exit(0));
  const [{ socketPath }] = await once(process, 'message');
  process.on('message', (m) => {
    if (m.op === 'meta') process.send({ id: m.id, meta: { ...META_REPLY, key: m.key } });
    else if (m.op === 'body') process.send({ id: m.id, body: bodyOf(m.size) });
    else if (m.op === 'cpu') process.send({ cpu: process.cpuUsage() });
  });

  rmSync(socketPath, { force: true });
  process.on('exit', () => rmSync(socketPath, { force: true }));
  const uds = createNetServer((socket) => {
    socket.setNoDelay(true);
    socket.on(
      'data',
      frameReader((id, op, payload) => {
        if (op === OP_META) {
          const req = unpack(payload);
          writeFrame(socket, id, OP_META, pack({ ...META_REPLY, key: req.key }));
        } else if (op === OP_BODY) {
          writeFrame(socket, id, OP_BODY, bodyOf(payload.readUInt32BE(0)));
        }
      }),
    );
    socket.on('error', () => socket.destroy());
  });
  uds.listen(socketPath);
  await once(uds, 'listening');

  const http = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    const url = new URL(req.url, 'http://peer');
    const body = url.pathname.startsWith('/body/')
      ? bodyOf(Number(url.pathname.slice('/body/'.length)))
      : pack({ ...META_REPLY, key: url.searchParams.get('key') });
    res.writeHead(200, {
      'content-type': 'application/octet-stream',
      'content-length': String(body.length),
    });
    res.end(body);
  });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  process.send({ httpPort: http.address().port });
} else if (workerData.mode === 'port') {
  const [{ port }] = await once(parentPort, 'message');
  port.on('message', (m) => {
    if (m.op === 'meta') port.postMessage({ id: m.id, meta: { ...META_REPLY, key: m.key } });
    else if (m.op === 'body' && m.transfer) {
      // The owner's copy stays; the receiver gets its own, moved rather than cloned.
      const ab = new ArrayBuffer(m.size);
      new Uint8Array(ab).set(bodyOf(m.size));
      port.postMessage({ id: m.id, body: ab }, [ab]);
    } else if (m.op === 'body') port.postMessage({ id: m.id, body: bodyOf(m.size) });
  });
  port.postMessage('ready');
} else if (workerData.mode === 'atomics') {
  const i32 = new Int32Array(workerData.ctl, 0, 2);
  const slot = new Uint8Array(workerData.ctl, 8, 512);
  parentPort.postMessage('ready');
  for (;;) {
    Atomics.wait(i32, 0, 0);
    const state = Atomics.load(i32, 0);
    if (state === 3) break;
    if (state !== 1) continue;
    const req = unpack(Buffer.from(slot.buffer, slot.byteOffset, Atomics.load(i32, 1)));
    const reply = pack({ ...META_REPLY, key: req.key });
    slot.set(reply, 0);
    Atomics.store(i32, 1, reply.length);
    Atomics.store(i32, 0, 2);
    Atomics.notify(i32, 0);
  }
  process.exit(0);
}
