/**
 * The DSHT as the DNS server's `NodeDirectory`. Which proxies exist comes from the DSHT's traffic
 * (every verified sender advertises its HTTP port, region and clusters) and from locality hints:
 * each node puts its own record at level 0 under the keys of its /24 and /16 network
 * (`net:a.b.c.0/24`) and of its region (`region:<label>`), refreshing it while it runs. Liveness
 * is "heard from within `liveWindowMs`": DSHT traffic counts, and a health check pings known
 * proxies that have been quiet, so a node that died drops out of DNS answers within the window.
 */
import { isIP } from 'node:net';
import type { HintResult, NodeDirectory, NodeInfo } from '@coral/dnssrv';
import {
  shuffle,
  systemClock,
  systemRandom,
  type Clock,
  type Random,
  type TimerHandle,
} from '@coral/testkit';
import type { Logger } from 'pino';
import { decodeHolder, encodeHolder } from './holder-codec.js';
import type { DshtValueStore } from './content-index.js';
import { parseKey } from '../admin/keys.js';

/** A DSHT contact as the directory reads it. */
export interface DirectoryContact {
  id: Uint8Array;
  ip: string;
  port: number;
  httpPort?: number;
  region?: string;
  clusters?: { level: number; clusterId: Uint8Array }[];
}

/** The part of the DSHT the directory uses. */
export interface DirectorySource extends DshtValueStore {
  readonly levels: number;
  routes(level?: number): DirectoryContact[];
  ping(to: { ip: string; port: number }, opts?: { signal?: AbortSignal }): Promise<number>;
  on(event: 'contact', listener: (peer: DirectoryContact) => void): unknown;
  off(event: 'contact', listener: (peer: DirectoryContact) => void): unknown;
}

export interface DshtNodeDirectoryOptions {
  self: NodeInfo;
  /** A node is live when heard from within this window (default {@link DEFAULT_LIVE_WINDOW_MS}). */
  liveWindowMs?: number;
  /** Health-check period (default {@link DEFAULT_HEALTH_INTERVAL_MS}); 0 disables the timer. */
  healthIntervalMs?: number;
  /** Proxies pinged per health round at most (default {@link DEFAULT_HEALTH_PINGS}). */
  healthPings?: number;
  /** TTL of this node's hint records (default {@link DEFAULT_HINT_TTL_SECONDS}); refreshed at half. */
  hintTtlSeconds?: number;
  levelThresholdsMs?: readonly number[];
}

export const DEFAULT_LIVE_WINDOW_MS = 60_000;
export const DEFAULT_HEALTH_INTERVAL_MS = 10_000;
export const DEFAULT_HEALTH_PINGS = 16;
export const DEFAULT_HINT_TTL_SECONDS = 600;

interface Known {
  info: NodeInfo;
  address: { ip: string; port: number };
  lastSeen: number;
}

/** `net:a.b.c.0/24` and `net:a.b.0.0/16` for an IPv4 address (IPv6: /48 and /32). */
export function hintNames(ip: string): { prefix: 24 | 16; name: string }[] {
  if (isIP(ip) === 4) {
    const [a, b, c] = ip.split('.');
    return [
      { prefix: 24, name: `net:${a}.${b}.${c}.0/24` },
      { prefix: 16, name: `net:${a}.${b}.0.0/16` },
    ];
  }
  return [];
}

export class DshtNodeDirectory implements NodeDirectory {
  readonly levelThresholdsMs: readonly number[];
  readonly #dsht: DirectorySource;
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #logger: Pick<Logger, 'debug' | 'warn'> | undefined;
  readonly #self: NodeInfo;
  readonly #liveWindow: number;
  readonly #healthInterval: number;
  readonly #healthPings: number;
  readonly #hintTtl: number;
  readonly #known = new Map<string, Known>();
  readonly #onContact = (peer: DirectoryContact) => this.#heard(peer, true);
  #timers: TimerHandle[] = [];
  #running = false;

  constructor(
    components: {
      dsht: DirectorySource;
      clock?: Clock;
      random?: Random;
      logger?: Pick<Logger, 'debug' | 'warn'>;
    },
    options: DshtNodeDirectoryOptions,
  ) {
    this.#dsht = components.dsht;
    this.#clock = components.clock ?? systemClock;
    this.#random = components.random ?? systemRandom;
    this.#logger = components.logger;
    this.#self = options.self;
    this.#liveWindow = options.liveWindowMs ?? DEFAULT_LIVE_WINDOW_MS;
    this.#healthInterval = options.healthIntervalMs ?? DEFAULT_HEALTH_INTERVAL_MS;
    this.#healthPings = options.healthPings ?? DEFAULT_HEALTH_PINGS;
    this.#hintTtl = options.hintTtlSeconds ?? DEFAULT_HINT_TTL_SECONDS;
    this.levelThresholdsMs = options.levelThresholdsMs ?? [Infinity, 60, 20];
  }

  /** Listen to DSHT traffic, learn the current routing tables, publish hints, start health checks. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#dsht.on('contact', this.#onContact);
    for (let level = 0; level < this.#dsht.levels; level++) {
      for (const c of this.#dsht.routes(level)) this.#heard(c, false);
    }
    void this.publishHints();
    if (this.#healthInterval > 0) this.#schedule(() => this.#healthRound(), this.#healthInterval);
    this.#schedule(() => void this.publishHints(), (this.#hintTtl * 1000) / 2);
  }

  stop(): void {
    this.#running = false;
    this.#dsht.off('contact', this.#onContact);
    for (const t of this.#timers) t.cancel();
    this.#timers = [];
  }

  self(): NodeInfo {
    return this.#self;
  }

  isLive(id: string): boolean {
    if (id === this.#self.id) return true;
    const k = this.#known.get(id);
    return k !== undefined && this.#clock.now() - k.lastSeen <= this.#liveWindow;
  }

  get(id: string): NodeInfo | undefined {
    if (id === this.#self.id) return this.#self;
    return this.isLive(id) ? this.#known.get(id)?.info : undefined;
  }

  /** Every live proxy this node knows, itself first. */
  live(): NodeInfo[] {
    const out = [this.#self];
    for (const [id, k] of this.#known) if (this.isLive(id)) out.push(k.info);
    return out;
  }

  async near(
    target: { ip: string; subnet?: string },
    count: number,
    opts?: { signal?: AbortSignal },
  ): Promise<NodeInfo[]> {
    const picked = new Map<string, NodeInfo>();
    for (const n of (await this.hinted(target, count, opts)).nodes) picked.set(n.id, n);
    for (const n of this.random(count)) {
      if (picked.size >= count) break;
      picked.set(n.id, n);
    }
    return [...picked.values()].slice(0, count);
  }

  cluster(level: number, count: number): NodeInfo[] {
    const out = [this.#self];
    if (level < 0 || level >= this.#dsht.levels) return out.slice(0, count);
    for (const c of this.#dsht.routes(level)) {
      const id = Buffer.from(c.id).toString('hex');
      const info = this.get(id);
      if (info && id !== this.#self.id) out.push(info);
      if (out.length >= count) break;
    }
    return out.slice(0, count);
  }

  async hinted(
    target: { ip: string; subnet?: string },
    count: number,
    opts?: { signal?: AbortSignal },
  ): Promise<HintResult> {
    for (const { prefix, name } of hintNames(target.ip)) {
      let values: Uint8Array[];
      try {
        values = (await this.#dsht.get(parseKey(name), opts)).values;
      } catch (err) {
        this.#logger?.debug({ err, name }, 'hint lookup failed');
        continue;
      }
      const nodes: NodeInfo[] = [];
      for (const v of values) {
        try {
          const r = decodeHolder(v);
          const info = r.nodeId === this.#self.id ? this.#self : this.get(r.nodeId);
          if (info && !nodes.some((n) => n.id === info.id)) nodes.push(info);
        } catch {
          // not a hint record of ours
        }
      }
      if (nodes.length > 0) return { nodes: nodes.slice(0, count), prefix };
    }
    return { nodes: [], prefix: null };
  }

  random(count: number): NodeInfo[] {
    return shuffle(this.live(), this.#random).slice(0, count);
  }

  inRegion(region: string, count: number): NodeInfo[] {
    return shuffle(
      this.live().filter((n) => n.region === region),
      this.#random,
    ).slice(0, count);
  }

  /** Put this node's record under its network and region keys (best effort). */
  async publishHints(): Promise<void> {
    const ip = this.#self.ipv4 ?? this.#self.ipv6;
    if (!ip) return;
    const value = encodeHolder({
      nodeId: this.#self.id,
      ip,
      httpPort: this.#self.httpPort,
      state: 'complete',
      at: this.#clock.now(),
    });
    const names = hintNames(ip).map((h) => h.name);
    if (this.#self.region) names.push(`region:${this.#self.region}`);
    await Promise.all(
      names.map((name) =>
        this.#dsht.put(parseKey(name), value, this.#hintTtl).catch((err: unknown) => {
          this.#logger?.debug({ err, name }, 'hint put failed');
        }),
      ),
    );
  }

  #heard(peer: DirectoryContact, verified: boolean): void {
    if (!peer.httpPort) return;
    const id = Buffer.from(peer.id).toString('hex');
    if (id === this.#self.id) return;
    const info: NodeInfo = { id, httpPort: peer.httpPort };
    if (isIP(peer.ip) === 6) info.ipv6 = peer.ip;
    else info.ipv4 = peer.ip;
    if (peer.region) info.region = peer.region;
    const prev = this.#known.get(id);
    this.#known.set(id, {
      info,
      address: { ip: peer.ip, port: peer.port },
      lastSeen: verified ? this.#clock.now() : (prev?.lastSeen ?? -Infinity),
    });
  }

  async #healthRound(): Promise<void> {
    const now = this.#clock.now();
    const quiet = [...this.#known.values()].filter((k) => now - k.lastSeen > this.#healthInterval);
    for (const k of shuffle(quiet, this.#random).slice(0, this.#healthPings)) {
      // A successful ping is a verified round trip: the 'contact' event refreshes lastSeen.
      void this.#dsht.ping(k.address).catch(() => undefined);
    }
  }

  #schedule(fn: () => unknown, everyMs: number): void {
    const slot = this.#timers.length;
    const tick = () => {
      if (!this.#running) return;
      void fn();
      this.#timers[slot] = this.#clock.setTimeout(tick, everyMs);
    };
    this.#timers[slot] = this.#clock.setTimeout(tick, everyMs);
  }
}
