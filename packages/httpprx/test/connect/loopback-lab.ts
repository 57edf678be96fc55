/**
 * Real loopback origins for the connector tests, all on ONE port P so that several 127.0.0.x
 * addresses of one name can be raced:
 * - `accept(addr)`: a net.Server on addr:P that accepts and holds connections;
 * - `stall(addr)`: a listener on addr:P whose accept queue is full, so a new SYN is dropped by the
 *   kernel and the client's handshake stalls (the client retransmits the SYN and never connects);
 * - nothing at all on addr:P: the kernel refuses (RST → ECONNREFUSED).
 *
 * How `stall` is made (verified on Linux): Node accepts every connection as soon as its event loop
 * runs, so the listener lives in a worker thread that, once listening with backlog 1, blocks its
 * own event loop in `Atomics.wait`. Nothing ever calls accept(2) on it. We then open "filler"
 * connections until the kernel's accept queue is full (Linux: full when its length exceeds the
 * backlog), and check that in /proc/net/tcp (for a LISTEN socket, `rx_queue` is the accept queue
 * length) instead of hoping. From then on Linux drops every SYN to that address:port.
 */
import fs from 'node:fs';
import net from 'node:net';
import { Worker } from 'node:worker_threads';

import { netDial } from '../../src/connect/index.js';
import type { Dial, DialTarget } from '../../src/connect/index.js';

export const canStall = process.platform === 'linux' && fs.existsSync('/proc/net/tcp');

const STALL_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const net = require('node:net');
const server = net.createServer();
server.once('error', (e) => { parentPort.postMessage({ error: e.code || String(e) }); });
server.listen({ host: workerData.host, port: workerData.port, backlog: 1 }, () => {
  parentPort.postMessage({ listening: true });
  Atomics.wait(new Int32Array(workerData.sab), 0, 0); // never returns until released
  server.close();
  parentPort.close();
});
`;

function once<T>(emitter: NodeJS.EventEmitter, event: string): Promise<T> {
  return new Promise((resolve) => emitter.once(event, resolve as (v: unknown) => void));
}

/** Accept-queue length of the LISTEN socket on 127.x.y.z:port, from /proc/net/tcp. */
export function acceptQueueLength(address: string, port: number): number | undefined {
  const hex = address
    .split('.')
    .map((o) => Number(o).toString(16).toUpperCase().padStart(2, '0'))
    .reverse()
    .join('');
  const local = `${hex}:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  for (const line of fs.readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[1] === local && f[3] === '0A') return Number.parseInt(f[4]!.split(':')[1]!, 16);
  }
  return undefined;
}

class Stalled {
  readonly fillers: net.Socket[] = [];
  constructor(
    readonly worker: Worker,
    readonly sab: SharedArrayBuffer,
  ) {}

  async close(): Promise<void> {
    for (const s of this.fillers) s.destroy();
    const flag = new Int32Array(this.sab);
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
    const exited = once(this.worker, 'exit');
    const guard = setTimeout(() => void this.worker.terminate(), 2_000);
    await exited;
    clearTimeout(guard);
  }
}

export class LoopbackLab {
  readonly #servers = new Map<string, { server: net.Server; sockets: Set<net.Socket> }>();
  readonly #stalled = new Map<string, Stalled>();
  /** Connections each accepting address has received. */
  readonly accepted = new Map<string, number>();

  private constructor(readonly port: number) {}

  /** A lab on a port that was free on 127.0.0.2 a moment ago. */
  static async create(): Promise<LoopbackLab> {
    const probe = net.createServer();
    probe.listen({ host: '127.0.0.2', port: 0 });
    await once(probe, 'listening');
    const port = (probe.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    return new LoopbackLab(port);
  }

  async accept(address: string): Promise<void> {
    const sockets = new Set<net.Socket>();
    const server = net.createServer((s) => {
      sockets.add(s);
      this.accepted.set(address, (this.accepted.get(address) ?? 0) + 1);
      s.on('error', () => {});
      s.on('close', () => sockets.delete(s));
    });
    server.listen({ host: address, port: this.port });
    await once(server, 'listening');
    this.#servers.set(address, { server, sockets });
  }

  /** Stop accepting on `address`: afterwards it refuses (or can be made to stall). */
  async unaccept(address: string): Promise<void> {
    const entry = this.#servers.get(address);
    if (!entry) return;
    this.#servers.delete(address);
    for (const s of entry.sockets) s.destroy();
    await new Promise<void>((resolve) => entry.server.close(() => resolve()));
  }

  async stall(address: string): Promise<void> {
    if (!canStall) throw new Error('stalling listeners need Linux /proc/net/tcp');
    const sab = new SharedArrayBuffer(4);
    const worker = new Worker(STALL_WORKER, {
      eval: true,
      workerData: { host: address, port: this.port, sab },
    });
    const msg = await once<{ listening?: boolean; error?: string }>(worker, 'message');
    if (!msg.listening) {
      await worker.terminate();
      throw new Error(`stall listener on ${address}:${this.port} failed: ${msg.error}`);
    }
    const stalled = new Stalled(worker, sab);
    this.#stalled.set(address, stalled);
    for (let i = 0; i < 8; i++) {
      const queued = acceptQueueLength(address, this.port);
      if (queued === undefined) throw new Error(`no LISTEN socket for ${address}:${this.port}`);
      if (queued > 1) return; // full: Linux drops SYNs once the queue length exceeds backlog (1)
      const filler = net.connect({ host: address, port: this.port });
      filler.on('error', () => {});
      stalled.fillers.push(filler);
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error('filler did not connect')), 5_000);
        filler.once('connect', () => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    throw new Error(`could not fill the accept queue of ${address}:${this.port}`);
  }

  async close(): Promise<void> {
    for (const a of [...this.#servers.keys()]) await this.unaccept(a);
    for (const s of this.#stalled.values()) await s.close();
    this.#stalled.clear();
  }
}

/** 'pending', 'connected', 'aborted', or the code of the error the attempt ended with. */
export type DialOutcome = string;

/** A dial that records every target and how its attempt ended, around a real (or given) dial. */
export function recordingDial(inner: Dial = netDial): {
  dial: Dial;
  calls: DialTarget[];
  outcomes: Map<string, DialOutcome>;
} {
  const calls: DialTarget[] = [];
  const outcomes = new Map<string, DialOutcome>();
  const dial: Dial = async (target, signal) => {
    calls.push({ ...target });
    outcomes.set(target.address, 'pending');
    try {
      const s = await inner(target, signal);
      outcomes.set(target.address, 'connected');
      return s;
    } catch (err) {
      outcomes.set(
        target.address,
        signal.aborted ? 'aborted' : ((err as { code?: string }).code ?? String(err)),
      );
      throw err;
    }
  };
  return { dial, calls, outcomes };
}
