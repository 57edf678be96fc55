/**
 * A member that failed a request while it went away is asked again as soon as the membership
 * sees it back (src/peer/penalties.ts, `FleetMembers.generation`) — the soak's finding: a node
 * skipped a restarted member for a minute and fetched from the origin what the member had. Not
 * twice within the lift window (a flapping member serves its penalty), and never for a lie.
 * Real sockets on loopback: the member is an HTTP server on 127.0.0.5 that is stopped and started
 * again; the asker is a keyed proxy on 127.0.0.4.
 */
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { urlKey } from '../../src/mapping/coral-name.js';
import { InMemoryFleetMembers } from '../../src/peer/memory-members.js';
import { topMember } from '../../src/peer/rendezvous.js';
import { NODE_B as B, T0, closer, get, startOrigin, startProxy } from '../helpers/harness.js';
import type { Origin, ProxyHarness } from '../helpers/harness.js';
import { HmacPeerAuth } from '../helpers/peer-auth.js';

const M = 'cc'.repeat(20);
const KEY = '5a'.repeat(32);
const PAGE = Buffer.from('the page\n'.repeat(100));
const SHA = createHash('sha256').update(PAGE).digest('hex');

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Member {
  port: number;
  asked: string[];
  stop(): Promise<void>;
}

/** The member: serves PAGE for every path (`lie`: under another SHA-256). */
async function startMember(lie = false): Promise<Member> {
  const asked: string[] = [];
  const server: Server = createServer((req, res: ServerResponse) => {
    asked.push(req.url ?? '');
    res.writeHead(200, {
      'cache-control': 'max-age=600',
      'content-length': String(PAGE.length),
      'x-coral-sha256': lie ? 'ab'.repeat(32) : SHA,
    });
    res.end(PAGE);
  });
  const close = closer(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.5', r));
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await close();
  };
  cleanups.push(stop);
  return { port: (server.address() as AddressInfo).port, asked, stop };
}

interface Setup {
  origin: Origin;
  px: ProxyHarness;
  members: InMemoryFleetMembers;
  /** The n-th path (from `from`) whose designated fetcher, for B, is M. */
  path(n: number): string;
}

async function setup(member: Member): Promise<Setup> {
  const origin = await startOrigin((_req, res) => {
    res.writeHead(200, { 'cache-control': 'max-age=600', 'content-length': String(PAGE.length) });
    res.end(PAGE);
  });
  cleanups.push(() => origin.close());
  const clock = new ManualClock(T0);
  const members = new InMemoryFleetMembers({ recordsAuthenticated: true, rendezvous: true });
  const px = await startProxy(
    { self: { nodeId: B, ip: '127.0.0.4', httpPort: 0 } },
    { clock, members, peerAuth: new HmacPeerAuth(KEY, clock) },
    '127.0.0.4',
  );
  cleanups.push(() => px.close());
  members.set(B, { ip: '127.0.0.4', httpPort: px.port });
  members.set(M, { ip: '127.0.0.5', httpPort: member.port });
  const live = [{ nodeId: M, ip: '127.0.0.5', httpPort: 1, near: true }];
  const paths: string[] = [];
  for (let i = 0; paths.length < 8; i++) {
    const p = `/p${i}`;
    if (topMember(B, urlKey(`http://origin.test:${origin.port}${p}`), live)?.nodeId === M)
      paths.push(p);
  }
  return { origin, px, members, path: (n) => paths[n]! };
}

const fetch = (s: Setup, path: string) =>
  get(s.px.port, s.origin.coralHost, path, {}, 'GET', '127.0.0.4');

describe('a member that failed while it went away is asked again once it is back', () => {
  it('a restarted member is asked at once, not after the penalty', async () => {
    const before = await startMember();
    const s = await setup(before);
    await before.stop(); // shutting down: the ask is refused
    const first = await fetch(s, s.path(0));
    expect(first.body.equals(PAGE)).toBe(true);
    expect(s.origin.hits).toHaveLength(1);

    const after = await startMember(); // back, at a new port: a new life
    s.members.rejoin(M, { ip: '127.0.0.5', httpPort: after.port });
    const second = await fetch(s, s.path(1));
    expect(second.headers['cache-status']).toMatch(/fwd=peer/);
    expect(after.asked).toEqual([s.path(1)]);
    expect(s.origin.hits).toHaveLength(1);
  });

  it('still skipped while it has not come back', async () => {
    const before = await startMember();
    const s = await setup(before);
    await before.stop();
    await fetch(s, s.path(0));
    const after = await startMember();
    s.members.set(M, { ip: '127.0.0.5', httpPort: after.port }); // listed, but no new generation
    await fetch(s, s.path(1));
    expect(after.asked).toEqual([]);
    expect(s.origin.hits).toHaveLength(2);
  });

  it('a member that flaps is forgiven once in the lift window', async () => {
    const first = await startMember();
    const s = await setup(first);
    await first.stop();
    await fetch(s, s.path(0));
    const second = await startMember();
    s.members.rejoin(M, { ip: '127.0.0.5', httpPort: second.port });
    await second.stop(); // gone again before anyone asked
    await fetch(s, s.path(1)); // lifted, asked, refused: penalized again
    const third = await startMember();
    s.members.rejoin(M, { ip: '127.0.0.5', httpPort: third.port });
    await fetch(s, s.path(2));
    expect(third.asked).toEqual([]);
    expect(s.origin.hits).toHaveLength(3);
  });

  it('a member that lied is not forgiven by a restart', async () => {
    const liar = await startMember(true);
    const s = await setup(liar);
    const first = await fetch(s, s.path(0));
    expect(first.body.equals(PAGE)).toBe(true); // the origin's, after the check failed
    expect(liar.asked).toHaveLength(1);
    await liar.stop();
    const back = await startMember();
    s.members.rejoin(M, { ip: '127.0.0.5', httpPort: back.port });
    await fetch(s, s.path(1));
    expect(back.asked).toEqual([]);
    expect(s.origin.hits).toHaveLength(2);
  });
});
