/**
 * FleetPurge in process, on a ManualClock: three members whose admin APIs (the real routes) are
 * reached through an injected fetch, signed with a real fleet key. A member down during a purge
 * applies it on its next catch-up only to what it stored before the purge; a member away longer
 * than the others' logs reach back drops everything stored before what they vouch for; ids are
 * idempotent; a body that is not the signed one is refused; open mode sends nothing.
 */
import { describe, expect, it } from 'vitest';
import { HttpPeerSigner, Keyring } from '@coral/keyring';
import { ManualClock } from '@coral/testkit';
import { join } from 'node:path';
import { AdminApi } from '../../src/admin/server.js';
import type { AdminBackend } from '../../src/admin/backend.js';
import { PeerAnswerAuth } from '../../src/peer/answers.js';
import { PeerRequests, bodyDigest } from '../../src/peer/requests.js';
import { FleetPurge, PURGE_SKEW_MS } from '../../src/purge/fleet-purge.js';
import type { PurgeCandidate } from '../../src/purge/match.js';
import { PurgeLog } from '../../src/purge/purge-log.js';
import { tmpDir } from '../helpers.js';

class MemStore {
  objects: PurgeCandidate[] = [];
  add(url: string, tags: string, storedAt: number): void {
    this.objects.push({ url, headers: { 'surrogate-key': tags }, storedAt });
  }
  urls(): string[] {
    return this.objects.map((o) => o.url).sort();
  }
  async purgeWhere(match: (m: PurgeCandidate) => boolean): Promise<number> {
    const before = this.objects.length;
    this.objects = this.objects.filter((m) => !match(m));
    return before - this.objects.length;
  }
}

interface Member {
  ip: string;
  id: string;
  store: MemStore;
  purges: FleetPurge;
  log: PurgeLog;
}

async function fleetOf(
  names: string[],
  opts: { open?: boolean; retentionMs?: number; replaced?: string[] } = {},
) {
  const clock = new ManualClock(1_000);
  const key = Keyring.generateKey();
  const down = new Set<string>();
  const apis = new Map<string, AdminApi>();
  const members: Member[] = [];
  const fetchVia: typeof fetch = async (input, init) => {
    const u = new URL(String(input));
    const api = apis.get(u.hostname);
    if (!api || down.has(u.hostname)) {
      throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
    }
    const r = await api.handle({
      method: init?.method ?? 'GET',
      url: u.pathname + u.search,
      headers: { host: u.host, ...(init?.headers as Record<string, string>) },
      remoteAddress: '127.0.0.1',
      ...(init?.body !== undefined ? { body: String(init.body) } : {}),
    });
    return new Response(r.body, { status: r.status, headers: r.headers });
  };
  for (const [i, name] of names.entries()) {
    const ip = `127.0.0.${i + 1}`;
    const log = new PurgeLog({
      dir: join(tmpDir('fleet-purge'), name),
      retentionMs: opts.retentionMs,
    });
    await log.open(clock.now(), { replaced: opts.replaced?.includes(name) ?? false });
    const store = new MemStore();
    const ring = Keyring.parse([key]);
    const peers = new PeerRequests(
      {
        ...(opts.open
          ? {}
          : {
              peerAuth: new HttpPeerSigner({ keyring: ring, clock }),
              answerAuth: new PeerAnswerAuth(ring),
            }),
        self: () => [`${ip}:8092`],
        members: () => members.filter((m) => m.ip !== ip).map((m) => ({ nodeId: m.id, ip: m.ip })),
        fetch: fetchVia,
      },
      { adminPort: 8092 },
    );
    const id = String(i + 1).repeat(40);
    const purges = new FleetPurge({ store, log, peers, clock }, { nodeId: id });
    apis.set(
      ip,
      new AdminApi({
        backend: {} as AdminBackend,
        purges,
        ...(opts.open ? {} : { peerAnswers: new PeerAnswerAuth(ring) }),
      }),
    );
    members.push({ ip, id, store, purges, log });
  }
  return { clock, down, members, key };
}

describe('FleetPurge', () => {
  it('a member down during a purge applies it on return, only to what it stored before', async () => {
    const { clock, down, members } = await fleetOf(['a', 'b', 'c']);
    const [a, b, c] = members as [Member, Member, Member];
    for (const m of members) {
      m.store.add('http://o.test/1', 'x', 500);
      m.store.add('http://o.test/2', 'y', 500);
    }
    await clock.advance(9_000); // t = 10,000
    down.add(c.ip);
    const r = await a.purges.purge({ kind: 'tag', value: 'x' });
    expect(r.local.count).toBe(1);
    expect(r.propagation.complete).toBe(false);
    expect(r.propagation.members).toEqual([
      { nodeId: b.id, address: `${b.ip}:8092`, ok: true, status: 200, count: 1 },
      { nodeId: c.id, address: `${c.ip}:8092`, ok: false, error: 'ECONNREFUSED' },
    ]);
    expect(b.store.urls()).toEqual(['http://o.test/2']);
    expect(c.store.urls()).toEqual(['http://o.test/1', 'http://o.test/2']);

    // Back: it also fetched /3 (tagged x) after the purge, beyond the skew allowance.
    down.delete(c.ip);
    await clock.advance(PURGE_SKEW_MS + 1);
    c.store.add('http://o.test/3', 'x', clock.now());
    const sync = await c.purges.sync();
    expect(sync).toMatchObject({ asked: 2, answered: 2, applied: 1, dropped: 1 });
    expect(sync.gap).toBeUndefined();
    expect(c.store.urls()).toEqual(['http://o.test/2', 'http://o.test/3']);
    expect(await c.log.has(r.id)).toBe(true);
    expect(c.purges.synced).toBe(true);
    // Idempotent: the next round applies nothing, and a resent purge is a duplicate.
    expect(await c.purges.sync()).toMatchObject({ applied: 0, dropped: 0 });
    const entry = JSON.stringify({ id: r.id, at: 10_000, kind: 'tag', value: 'x', origin: a.id });
    expect(await b.purges.applyPeer(entry, bodyDigest(entry))).toEqual({
      id: r.id,
      count: 0,
      duplicate: true,
    });
    await expect(b.purges.applyPeer(entry, bodyDigest('other'))).rejects.toMatchObject({
      code: 'CORAL_ERR_PURGE_INVALID',
    });
    await expect(b.purges.purge({ kind: 'prefix', value: 'mailto:x' })).rejects.toMatchObject({
      code: 'CORAL_ERR_PURGE_INVALID',
    });
  });

  it('a member away longer than the logs reach back drops what it stored before them', async () => {
    const { clock, down, members } = await fleetOf(['a', 'b'], { retentionMs: 60_000 });
    const [a, b] = members as [Member, Member];
    expect(await b.purges.sync()).toMatchObject({ answered: 1 });
    expect(b.log.watermark).toBe(1_000);
    b.store.add('http://o.test/old', 'z', 900);
    down.add(b.ip);
    await clock.advance(200_000); // b away for 200 s; a's log keeps 60 s
    await a.purges.purge({ kind: 'url', value: 'http://o.test/nothing' });
    b.store.add('http://o.test/new', 'z', clock.now() - 30_000); // within what a vouches for
    down.delete(b.ip);
    const sync = await b.purges.sync();
    expect(sync.gap).toEqual({ before: new Date(clock.now() - 60_000).toISOString(), dropped: 1 });
    expect(b.store.urls()).toEqual(['http://o.test/new']);
    // b now vouches only from there itself.
    expect(b.log.completeSince(clock.now())).toBe(clock.now() - 60_000);
  });

  it('a node whose purge log was lost treats what it stored before the fleet’s logs as stale', async () => {
    const { clock, members } = await fleetOf(['a', 'b', 'c'], { replaced: ['c'] });
    const [a, b, c] = members as [Member, Member, Member];
    for (const m of [b, c]) m.store.add('http://o.test/kept-before', 'k', 500);
    await clock.advance(1_000);
    // b: a new log (a new node, or the first start with purges): nothing to be behind on.
    expect((await b.purges.sync()).gap).toBeUndefined();
    expect(b.store.urls()).toEqual(['http://o.test/kept-before']);
    // c: its log replaced a lost one: everything before a's and b's logs is stale.
    const sync = await c.purges.sync();
    expect(sync.gap).toEqual({ before: new Date(1_000).toISOString(), dropped: 1 });
    expect(c.store.urls()).toEqual([]);
    expect(a.log.replaced).toBe(false);
  });

  it('open mode: applies here only and says why nothing was sent', async () => {
    const { members } = await fleetOf(['a', 'b'], { open: true });
    const [a, b] = members as [Member, Member];
    a.store.add('http://o.test/1', 'x', 1);
    b.store.add('http://o.test/1', 'x', 1);
    const r = await a.purges.purge({ kind: 'url', value: 'http://o.test/1' });
    expect(r.local.count).toBe(1);
    expect(r.propagation).toEqual({
      mode: 'off',
      complete: false,
      members: [],
      reason: expect.stringMatching(/no fleet keys/),
    });
    expect(b.store.urls()).toEqual(['http://o.test/1']);
    expect(await b.purges.sync()).toMatchObject({ asked: 0, answered: 0 });
  });
});
