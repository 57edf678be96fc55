// Part 3 of bench/workers-design.mjs: what "one cache" over several workers costs on each channel
// Node.js 24 offers between them. This process plays a worker that misses; the peer
// (bench/lib/workers-ipc-peer.mjs, a forked process or a worker thread) plays the owner of the
// cache's metadata and bodies. Two kinds of call:
//   meta: a ~200-byte request (the URL key and the request's Vary inputs) answered by a ~200-byte
//         metadata record (META_REQUEST, META_REPLY below) — the price of asking the owner on a miss;
//   body: a small request answered by a body of 64 KiB or 1 MiB — the price of moving a body
//         between workers (a hot object held by another worker, a coalesced fetch's bytes).
// Channels, each request/response matched by id so several can be in flight:
//   ipc advanced   child_process.fork with serialization 'advanced' (process.send: what cluster
//                  and child_process give, structured clone over a pipe);
//   ipc json       the same with the default JSON serialization (meta only: a Buffer in JSON is an
//                  array of numbers);
//   port clone     a MessageChannel port to a worker_thread, the reply structured-cloned;
//   port transfer  the same, the body's ArrayBuffer transferred (the owner copies the body into a
//                  fresh ArrayBuffer and gives it away: no copy on the way, one at the source);
//   uds frame      a Unix domain socket, frames [u32 length][u32 id][u8 op][payload], the metadata
//                  msgpackr-encoded (as the DSHT's codec), the body raw;
//   http loopback  node:http over a keep-alive loopback TCP connection (GET /meta, GET /body/N):
//                  the "worker-private port and the existing peer protocol" option.
// Baselines in this process: reading a SharedArrayBuffer — a view of it (what a worker serving a
// body from shared memory writes to its socket), a copy out of it, and a msgpackr decode of a
// 200-byte record in it (a lookup in a replicated index held there) — and a round trip between two
// threads over Atomics.wait/notify on a SharedArrayBuffer (no event loop on either side).
//
// Each (channel, size): round-trip latency of calls one after the other (p50, p99), then
// throughput with `window` calls in flight (calls/s, MB/s of payload) and the CPU of both sides per
// call (this process's and the peer's process.cpuUsage(); for a worker thread, this process's
// whole CPU, both threads).
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { MessageChannel, Worker } from 'node:worker_threads';
import { pack, unpack } from 'msgpackr';

/** The metadata request of a miss: the URL's key and what the variants depend on (~200 bytes). */
export const META_REQUEST = {
  op: 'meta',
  key: '3f786850e387550fdab836ed7e6dc881de23001b',
  url: 'http://www.example.com/assets/img/hero-1920x1080.jpg',
  vary: { 'accept-encoding': 'gzip, deflate, br' },
  at: 1764547200000,
};

/** What the owner knows of a committed object (~200 bytes). */
export const META_REPLY = {
  state: 'complete',
  size: 104857,
  sha256: 'b5bb9d8014a0f9b1d61e21e796d78dccdf1352f23cd32812f4850b878ae4944c',
  etag: '"100k-v1"',
  lastModified: 1764547200000,
  expires: 1764550800000,
  file: 'bodies/3f/786850e387550fdab836ed7e6dc881de23001b',
  encoding: 'identity',
};

/** Body sizes measured, by row name. */
export const BODY_SIZES = { '64k': 64 * 1024, '1m': 1024 * 1024 };

const PEER = new URL('./workers-ipc-peer.mjs', import.meta.url);

/** Frame ops on the Unix socket. */
export const OP_META = 1;
export const OP_BODY = 2;
/** Frame header: u32 length of what follows, u32 id, u8 op. */
export const HEADER = 9;

/** Split a byte stream into frames: `onFrame(id, op, payload)` for each complete one. */
export function frameReader(onFrame) {
  let chunks = [];
  let have = 0;
  let need = HEADER; // bytes of the next header, then of its frame
  let header;
  const take = (n) => {
    const all = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, have);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    chunks = rest.length > 0 ? [rest] : [];
    have = rest.length;
    return out;
  };
  return (chunk) => {
    chunks.push(chunk);
    have += chunk.length;
    while (have >= need) {
      if (!header) {
        const h = take(HEADER);
        header = { length: h.readUInt32BE(0), id: h.readUInt32BE(4), op: h[8] };
        need = header.length - 5;
      } else {
        const payload = take(need);
        const { id, op } = header;
        header = undefined;
        need = HEADER;
        onFrame(id, op, payload);
      }
    }
  };
}

/** Write one frame (the header and the payload in one writev). */
export function writeFrame(socket, id, op, payload) {
  const h = Buffer.allocUnsafe(HEADER);
  h.writeUInt32BE(payload.length + 5, 0);
  h.writeUInt32BE(id, 4);
  h[8] = op;
  socket.cork();
  socket.write(h);
  socket.write(payload);
  socket.uncork();
}

/** Calls matched by id: `call(send)` sends with a fresh id and resolves on `settle(id, value)`. */
function pendingCalls() {
  let nextId = 1;
  const pending = new Map();
  return {
    call(send) {
      const id = nextId++ >>> 0;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        send(id);
      });
    },
    settle(id, value) {
      const p = pending.get(id);
      pending.delete(id);
      p?.resolve(value);
    },
  };
}

/** A body reply must have the size asked for (a channel that lost bytes would measure nothing). */
function checked(size, body) {
  const n = body.byteLength;
  if (n !== size) throw new Error(`body of ${n} bytes, ${size} asked`);
  return body;
}

/** The forked owner: ipc (advanced or json), and in the same process a UDS and an HTTP server. */
async function startProcessPeer(serialization, socketPath) {
  const child = fork(PEER, [], { serialization, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  child.send({ socketPath });
  const [ready] = await once(child, 'message');
  const calls = pendingCalls();
  let cpuWaiter;
  child.on('message', (m) => {
    if (m.cpu) cpuWaiter?.(m.cpu);
    else calls.settle(m.id, m);
  });
  return {
    child,
    ready,
    async peerCpu() {
      const got = new Promise((r) => (cpuWaiter = r));
      child.send({ op: 'cpu' });
      const c = await got;
      return c.user + c.system;
    },
    meta: () => calls.call((id) => child.send({ ...META_REQUEST, id })),
    body: (size) =>
      calls.call((id) => child.send({ id, op: 'body', size })).then((m) => checked(size, m.body)),
    async close() {
      child.kill();
      await once(child, 'exit');
    },
  };
}

async function startThreadPeer() {
  const worker = new Worker(PEER, { workerData: { mode: 'port' } });
  const { port1, port2 } = new MessageChannel();
  worker.postMessage({ port: port2 }, [port2]);
  await once(port1, 'message');
  const calls = pendingCalls();
  port1.on('message', (m) => calls.settle(m.id, m));
  return {
    meta: () => calls.call((id) => port1.postMessage({ ...META_REQUEST, id })),
    body: (size, transfer) =>
      calls
        .call((id) => port1.postMessage({ id, op: 'body', size, transfer }))
        .then((m) => checked(size, m.body)),
    async close() {
      port1.close();
      await worker.terminate();
    },
  };
}

async function connectUds(path) {
  const socket = connect(path);
  await once(socket, 'connect');
  socket.setNoDelay(true);
  const calls = pendingCalls();
  socket.on(
    'data',
    frameReader((id, op, payload) => calls.settle(id, { op, payload })),
  );
  const meta = pack(META_REQUEST);
  return {
    meta: () =>
      calls.call((id) => writeFrame(socket, id, OP_META, meta)).then((r) => unpack(r.payload)),
    body: (size) => {
      const p = Buffer.allocUnsafe(4);
      p.writeUInt32BE(size, 0);
      return calls
        .call((id) => writeFrame(socket, id, OP_BODY, p))
        .then((r) => checked(size, r.payload));
    },
    close: () => socket.destroy(),
  };
}

function httpChannel(port, window) {
  const agent = new Agent({ keepAlive: true, maxSockets: window });
  const get = (path) =>
    new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve(Buffer.concat(chunks)));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });
  return {
    meta: () => get(`/meta?key=${META_REQUEST.key}`).then((b) => unpack(b)),
    body: (size) => get(`/body/${size}`).then((b) => checked(size, b)),
    close: () => agent.destroy(),
  };
}

const pct = (sorted, p) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** Calls one after the other for `seconds`: round-trip p50 and p99 in µs. */
async function latency(call, seconds) {
  for (let i = 0; i < 200; i++) await call(); // warm-up
  const lat = [];
  const until = performance.now() + seconds * 1000;
  while (performance.now() < until && lat.length < 1_000_000) {
    const t = performance.now();
    await call();
    lat.push((performance.now() - t) * 1000);
  }
  lat.sort((a, b) => a - b);
  return { calls: lat.length, p50Us: pct(lat, 50), p99Us: pct(lat, 99) };
}

/** `window` calls in flight for `seconds`: calls/s and CPU µs per call of both sides. */
async function throughput(call, seconds, window, peerCpu) {
  const cpu0 = process.cpuUsage();
  const peer0 = await peerCpu();
  const t0 = performance.now();
  const until = t0 + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: window }, async () => {
      while (performance.now() < until) {
        await call();
        done++;
      }
    }),
  );
  const wallS = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const peer = (await peerCpu()) - peer0;
  return { callsPerS: done / wallS, cpuUsPerCall: (cpu.user + cpu.system + peer) / done };
}

/** The Atomics round trip and the SharedArrayBuffer reads (this process, no event loop). */
async function sharedMemoryBaselines(seconds) {
  const rows = [];
  const sab = new SharedArrayBuffer(1024 * 1024 + 4096);
  const bytes = new Uint8Array(sab);
  for (let i = 0; i < bytes.length; i++) bytes[i] = i * 31;
  const record = pack(META_REPLY);
  bytes.set(record, 0);
  const timeOps = (fn) => {
    for (let i = 0; i < 1000; i++) fn();
    let n = 0;
    const t0 = performance.now();
    const until = t0 + seconds * 1000;
    while (performance.now() < until) {
      for (let i = 0; i < 100; i++) fn();
      n += 100;
    }
    return ((performance.now() - t0) * 1e3) / n; // µs per op
  };
  rows.push({
    channel: 'sab decode',
    size: '200',
    us: timeOps(() => unpack(Buffer.from(sab, 0, record.length))),
  });
  // A view is what a worker serving from shared memory would write to its socket; a copy (into a
  // buffer allocated once) is what keeping its own copy costs, allocation aside.
  const dst = Buffer.allocUnsafe(bytes.length);
  for (const [size, n] of Object.entries({ 200: 200, ...BODY_SIZES })) {
    rows.push({ channel: 'sab view', size, us: timeOps(() => Buffer.from(sab, 0, n)) });
    rows.push({ channel: 'sab copy', size, us: timeOps(() => dst.set(bytes.subarray(0, n))) });
  }
  // Two threads, one request/response slot: Int32 0 the state (0 idle, 1 request, 2 reply, 3
  // stop), Int32 1 the message's length, the message from byte 8.
  const ctl = new SharedArrayBuffer(8 + 512);
  const i32 = new Int32Array(ctl, 0, 2);
  const worker = new Worker(PEER, { workerData: { mode: 'atomics', ctl } });
  await once(worker, 'message');
  const slot = new Uint8Array(ctl, 8, 512);
  const request = pack(META_REQUEST);
  const roundTrip = () => {
    slot.set(request, 0);
    Atomics.store(i32, 1, request.length);
    Atomics.store(i32, 0, 1);
    Atomics.notify(i32, 0);
    while (Atomics.load(i32, 0) !== 2) Atomics.wait(i32, 0, 1, 1000);
    const reply = unpack(Buffer.from(ctl, 8, Atomics.load(i32, 1)));
    Atomics.store(i32, 0, 0);
    return reply;
  };
  for (let i = 0; i < 1000; i++) roundTrip();
  const lat = [];
  const until = performance.now() + seconds * 1000;
  while (performance.now() < until && lat.length < 1_000_000) {
    const t = performance.now();
    roundTrip();
    lat.push((performance.now() - t) * 1000);
  }
  lat.sort((a, b) => a - b);
  Atomics.store(i32, 0, 3);
  Atomics.notify(i32, 0);
  await once(worker, 'exit');
  rows.push({ channel: 'atomics rtt', size: '200', p50Us: pct(lat, 50), p99Us: pct(lat, 99) });
  return rows;
}

/**
 * Measure every channel: `seconds` per latency and per throughput phase, `window` calls in flight.
 * Resolves to { rows, baselines, metaBytes } (metaBytes: the two metadata messages' sizes under
 * each encoding, to tell what "200 bytes" is).
 */
export async function ipcBench({ seconds, window, socketPath }) {
  const rows = [];
  const sizes = { 200: 0, ...BODY_SIZES };
  const measure = async (channel, peerCpu, fn, only) => {
    for (const [size, n] of Object.entries(sizes)) {
      if (only && !only.includes(size)) continue;
      const call = n === 0 ? () => fn.meta() : () => fn.body(n);
      const l = await latency(call, seconds);
      const t = await throughput(call, seconds, window, peerCpu);
      const mbPerS = n === 0 ? NaN : (t.callsPerS * n) / 1e6;
      rows.push({ channel, size, ...l, ...t, mbPerS });
    }
  };
  const none = async () => 0;

  const adv = await startProcessPeer('advanced', socketPath);
  await measure('ipc advanced', () => adv.peerCpu(), adv);
  const uds = await connectUds(socketPath);
  await measure('uds frame', () => adv.peerCpu(), uds);
  uds.close();
  const http = httpChannel(adv.ready.httpPort, window);
  await measure('http loopback', () => adv.peerCpu(), http);
  http.close();
  await adv.close();

  const json = await startProcessPeer('json', `${socketPath}.json`);
  await measure('ipc json', () => json.peerCpu(), json, ['200']);
  await json.close();

  const thread = await startThreadPeer();
  await measure('port clone', none, { meta: thread.meta, body: (n) => thread.body(n, false) });
  await measure('port transfer', none, { meta: thread.meta, body: (n) => thread.body(n, true) }, [
    '64k',
    '1m',
  ]);
  await thread.close();

  const { serialize } = await import('node:v8');
  const metaBytes = {
    structuredClone: [serialize(META_REQUEST).length, serialize(META_REPLY).length],
    json: [JSON.stringify(META_REQUEST).length, JSON.stringify(META_REPLY).length],
    msgpackr: [pack(META_REQUEST).length, pack(META_REPLY).length],
  };
  return { rows, baselines: await sharedMemoryBaselines(seconds), metaBytes };
}
