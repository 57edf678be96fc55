import { ManualClock } from '@coral/testkit';
import dns from 'node:dns';
import {
  DnsServer,
  type DnsServerComponents,
  type DnsServerOptions,
  type InMemoryNodeDirectory,
  type Prober,
} from '../../src/index.js';
import { fleet } from '../helpers.js';

/** A prober whose answers the test hands out: every call waits until `settle()`. */
export class ControlledProber implements Prober {
  readonly calls: string[] = [];
  readonly #waiting: ((rtt: number | null) => void)[] = [];
  probe(ip: string): Promise<number | null> {
    this.calls.push(ip);
    return new Promise((resolve) => this.#waiting.push(resolve));
  }
  settle(rtt: number | null): void {
    for (const r of this.#waiting.splice(0)) r(rtt);
  }
  get waiting(): number {
    return this.#waiting.length;
  }
}

export interface Started {
  server: DnsServer;
  port: number;
  dir: InMemoryNodeDirectory;
  clock: ManualClock;
  prober: ControlledProber;
}

export async function start(
  options: DnsServerOptions = {},
  dir: InMemoryNodeDirectory = fleet(),
  extra: Pick<DnsServerComponents, 'metrics' | 'logger' | 'random'> = {},
): Promise<Started> {
  const clock = new ManualClock(1_000_000);
  const prober = new ControlledProber();
  const server = new DnsServer(
    { directory: dir, clock, prober, ...extra },
    {
      nameservers: [{ name: 'ns1.nyud.net', ipv4: '192.0.2.53', ipv6: '2001:db8::53' }],
      // Tests ask the same names many times from 127.0.0.1 on a clock that does not move: rate
      // limiting is off unless a test asks for it (`rrl: {}` = the production defaults).
      rrl: { responsesPerSecond: 0 },
      ...options,
    },
  );
  const { port } = await server.listen({ port: 0, host: '127.0.0.1' });
  return { server, port, dir, clock, prober };
}

/** Node's own stub resolver (c-ares) pointed at the server: a fresh one per call (no caching). */
export function resolver(port: number): dns.promises.Resolver {
  const r = new dns.promises.Resolver({ timeout: 3000, tries: 2 });
  r.setServers([`127.0.0.1:${port}`]);
  return r;
}

export function lastDecision(s: DnsServer) {
  const all = s.recentDecisions();
  return all[all.length - 1]!;
}

/**
 * Hold every hint walk of `dir` until the returned `release()`: a query that needs hints stays
 * pending (owed an answer) as long as the test wants.
 */
export function gateHints(dir: InMemoryNodeDirectory): () => void {
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => (release = r));
  const hinted = dir.hinted.bind(dir);
  dir.hinted = async (t, c) => {
    await gate;
    return hinted(t, c);
  };
  return () => release();
}
