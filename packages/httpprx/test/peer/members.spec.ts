import { describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import type { Holder } from '../../src/content-index.js';
import { chooseHolders } from '../../src/peer/members.js';
import { InMemoryFleetMembers } from '../../src/peer/memory-members.js';
import { PeerConnector } from '../../src/peer/connector.js';

const self = { nodeId: '00'.repeat(20), ip: '10.0.0.1', httpPort: 8090 };
const holder = (nodeId: string, ip = '6.6.6.6', httpPort = 6666): Holder => ({
  nodeId,
  ip,
  httpPort,
  state: 'complete',
});

describe('chooseHolders', () => {
  const members = new InMemoryFleetMembers()
    .set('aa'.repeat(20), { ip: '10.0.0.2', httpPort: 8090 })
    .set('bb'.repeat(20), { ip: '10.0.0.3', httpPort: 8090 })
    .set('cc'.repeat(20), { ip: '10.0.0.3', httpPort: 8090 }) // same address as bb
    .set('dd'.repeat(20), { ip: '10.0.0.1', httpPort: 8090 }); // our own address

  it('uses the member address, never the record address, and keeps the index order', () => {
    const c = chooseHolders(
      [holder('bb'.repeat(20), '127.0.0.1', 22), holder('aa'.repeat(20), '169.254.169.254', 80)],
      members,
      self,
    );
    expect(c.targets.map((t) => [t.holder.nodeId.slice(0, 2), t.ip, t.httpPort])).toEqual([
      ['bb', '10.0.0.3', 8090],
      ['aa', '10.0.0.2', 8090],
    ]);
    expect(c.notMembers).toBe(0);
  });

  it('skips and counts non-members; drops self, repeats and shared addresses without counting', () => {
    const c = chooseHolders(
      [
        holder('ee'.repeat(20)),
        holder(self.nodeId),
        holder('AA'.repeat(20)),
        holder('aa'.repeat(20)),
        holder('bb'.repeat(20)),
        holder('cc'.repeat(20)),
        holder('dd'.repeat(20)),
        holder('not hex at all'),
      ],
      members,
      self,
    );
    expect(c.targets.map((t) => t.holder.nodeId.slice(0, 2).toLowerCase())).toEqual(['aa', 'bb']);
    expect(c.notMembers).toBe(2);
  });

  it('no members: every holder is a non-member', () => {
    const c = chooseHolders(
      [holder('aa'.repeat(20)), holder('bb'.repeat(20))],
      new InMemoryFleetMembers(),
      self,
    );
    expect(c).toEqual({ targets: [], notMembers: 2 });
  });
});

describe('PeerConnector policy', () => {
  it('refuses private and loopback addresses and names unless a member there is being asked', () => {
    const c = new PeerConnector(
      { clock: new ManualClock() },
      { allowPrivate: false, timeoutMs: 1000 },
    );
    expect(c.allows('127.0.0.1', 8090)).toBe(false);
    expect(c.allows('169.254.169.254', 80)).toBe(false);
    expect(c.allows('8.8.8.8', 80)).toBe(true);
    expect(c.allows('origin.example', 80)).toBe(false);
    const r1 = c.sanction('127.0.0.1', 8090);
    const r2 = c.sanction('127.0.0.1', 8090);
    expect(c.allows('127.0.0.1', 8090)).toBe(true);
    expect(c.allows('127.0.0.1', 8091)).toBe(false);
    r1();
    r1();
    expect(c.allows('127.0.0.1', 8090)).toBe(true);
    r2();
    expect(c.allows('127.0.0.1', 8090)).toBe(false);
  });

  it('refuses a connection outside the policy through undici without dialing', async () => {
    const dials: string[] = [];
    const c = new PeerConnector(
      {
        clock: new ManualClock(),
        dial: (t) => {
          dials.push(t.address);
          return Promise.reject(new Error('not reached'));
        },
      },
      { allowPrivate: false, timeoutMs: 1000 },
    );
    const err = await new Promise<Error | null>((resolve) =>
      c.undiciConnect()(
        { hostname: '127.0.0.66', host: '127.0.0.66:80', protocol: 'http:', port: '80' },
        (...args) => resolve(args[0]),
      ),
    );
    expect((err as { code?: string }).code).toBe('CORAL_ORIGIN_FORBIDDEN');
    expect(dials).toEqual([]);
    expect(c.refused).toBe(1);
  });
});
