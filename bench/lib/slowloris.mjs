// A slowloris crowd (bench:soak): `connections` TCP connections to one HTTP listener, spread over
// a few source addresses, each sending a request line, a Host header, then one more header line
// every `intervalMs`, never the blank line that ends the headers. A connection the server closes
// (or refuses) is opened again after `reconnectMs` (5 × that after a refused connect), as an
// attacker keeps the crowd at strength: what the server shows is how long it holds each
// connection, how it ends it (a status line, a reset, a silent close) and what the crowd costs it
// in descriptors. Bounded: at most `connections` sockets at a time, at most one new connect per
// slot per `reconnectMs`.
import { connect } from 'node:net';

export class SlowlorisCrowd {
  #slots = new Set();
  #timers = new Set();
  #trickle;
  #stopped = false;
  #options;
  /** Counters since start; `take()` returns and resets the per-period part. */
  totals = { opened: 0, closedByServer: 0, connectFailed: 0, ends: {} };
  #period = { opened: 0, closed: 0, lifetimesMs: [], connectFailed: 0 };

  /**
   * @param {{ ip: string, port: number, host: string, path: string, connections: number,
   *   sources: string[], intervalMs: number, reconnectMs?: number }} options
   */
  constructor(options) {
    this.#options = { reconnectMs: 1_000, ...options };
  }

  /** Connections open now (connected, headers still trickling). */
  get open() {
    let n = 0;
    for (const s of this.#slots) if (s.connected) n++;
    return n;
  }

  start() {
    const { connections, intervalMs } = this.#options;
    // Ramp up over about a second, not in one burst.
    for (let k = 0; k < connections; k++)
      this.#later(() => this.#open(k), (k * 1000) / connections);
    this.#trickle = setInterval(() => {
      for (const s of this.#slots) {
        if (!s.connected) continue;
        s.lines++;
        s.socket.write(`X-Trickle-${s.lines}: ${s.lines}\r\n`);
      }
    }, intervalMs);
  }

  /** This period's figures (opened, closed by the server, their lifetimes, refused), then reset. */
  take() {
    const p = this.#period;
    this.#period = { opened: 0, closed: 0, lifetimesMs: [], connectFailed: 0 };
    return { ...p, open: this.open };
  }

  stop() {
    this.#stopped = true;
    clearInterval(this.#trickle);
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    for (const s of this.#slots) s.socket.destroy();
    this.#slots.clear();
  }

  #later(fn, ms) {
    const t = setTimeout(() => {
      this.#timers.delete(t);
      fn();
    }, ms);
    this.#timers.add(t);
  }

  #open(k) {
    if (this.#stopped) return;
    const { ip, port, host, path, sources } = this.#options;
    const socket = connect({ host: ip, port, localAddress: sources[k % sources.length] });
    const slot = { socket, connected: false, openedAt: 0, lines: 0, head: '', error: undefined };
    this.#slots.add(slot);
    socket.setNoDelay(true);
    socket.on('connect', () => {
      slot.connected = true;
      slot.openedAt = Date.now();
      this.totals.opened++;
      this.#period.opened++;
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nUser-Agent: soak-slowloris\r\n`);
    });
    socket.on('data', (d) => {
      if (slot.head.length < 64) slot.head += d.toString('latin1');
    });
    socket.on('error', (err) => {
      slot.error ??= err.code ?? err.message;
    });
    socket.on('close', () => {
      this.#slots.delete(slot);
      if (this.#stopped) return;
      const { reconnectMs } = this.#options;
      if (!slot.connected) {
        this.totals.connectFailed++;
        this.#period.connectFailed++;
        this.#count(`connect ${slot.error ?? 'failed'}`);
        this.#later(() => this.#open(k), 5 * reconnectMs);
        return;
      }
      this.totals.closedByServer++;
      this.#period.closed++;
      this.#period.lifetimesMs.push(Date.now() - slot.openedAt);
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(slot.head)?.[1];
      this.#count(status ? `status ${status}` : (slot.error ?? 'closed'));
      this.#later(() => this.#open(k), reconnectMs);
    });
  }

  #count(how) {
    this.totals.ends[how] = (this.totals.ends[how] ?? 0) + 1;
  }
}
