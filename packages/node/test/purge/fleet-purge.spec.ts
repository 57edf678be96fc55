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
import {
  PEER_NO_ADMIN_RECORD,
  PeerRequests,
  bodyDigest,
  fixedAdminPort,
  type AdminPortOf,
} from '../../src/peer/requests.js';
import { FleetPurge, PURGE_SKEW_MS, RECENT_PURGES_MS } from '../../src/purge/fleet-purge.js';
import type { PurgeCandidate } from '../../src/purge/match.js';
import { PurgeLog } from '../../src/purge/purge-log.js';
import { tmpDir, waitFor } from '../helpers.js';

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
  peers: PeerRequests;
}

async function fleetOf(
  names: string[],
  opts: {
    open?: boolean;
    maxEntries?: number;
    replaced?: string[];
    adminPorts?: AdminPortOf;
    cutOff?: () => string | undefined;
  } = {},
) {
  const clock = new ManualClock(1_000);
  const key = Keyring.generateKey();
  const down = new Set<string>();
  /** Answers made up by whatever else listens at an address (or a member's bad answer). */
  const impostors = new Map<string, (path: string, init?: RequestInit) => Promise<Response>>();
  const apis = new Map<string, AdminApi>();
  const members: Member[] = [];
  const fetchVia: typeof fetch = async (input, init) => {
    const u = new URL(input instanceof Request ? input.url : input);
    const api = apis.get(u.hostname);
    const impostor = impostors.get(u.hostname);
    if (impostor) return impostor(u.pathname + u.search, init);
    if (!api || down.has(u.hostname)) {
      throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
    }
    const r = await api.handle({
      method: init?.method ?? 'GET',
      url: u.pathname + u.search,
      headers: { host: u.host, ...(init?.headers as Record<string, string>) },
      remoteAddress: '127.0.0.1',
      ...(typeof init?.body === 'string' ? { body: init.body } : {}), // FleetPurge sends JSON text
    });
    return new Response(r.body, { status: r.status, headers: r.headers });
  };
  for (const [i, name] of names.entries()) {
    const ip = `127.0.0.${i + 1}`;
    const log = new PurgeLog({
      dir: join(tmpDir('fleet-purge'), name),
      ...(opts.maxEntries ? { maxEntries: opts.maxEntries } : {}),
    });
    await log.open(clock.now(), { replaced: opts.replaced?.includes(name) ?? false });
    const store = new MemStore();
    const ring = Keyring.parse([key]);
    const peers = new PeerRequests({
      ...(opts.open
        ? {}
        : {
            peerAuth: new HttpPeerSigner({ keyring: ring, clock }),
            answerAuth: new PeerAnswerAuth(ring),
          }),
      self: () => [`${ip}:8092`],
      members: () => members.filter((m) => m.ip !== ip).map((m) => ({ nodeId: m.id, ip: m.ip })),
      adminPorts: opts.adminPorts ?? fixedAdminPort(8092),
      fetch: fetchVia,
    });
    const id = String(i + 1).repeat(40);
    const cutOff = opts.cutOff;
    const purges = new FleetPurge(
      { store, log, peers, clock, ...(cutOff ? { cutOff } : {}) },
      { nodeId: id },
    );
    apis.set(
      ip,
      new AdminApi({
        backend: {} as AdminBackend,
        purges,
        ...(opts.open ? {} : { peerAnswers: new PeerAnswerAuth(ring) }),
      }),
    );
    members.push({ ip, id, store, purges, log, peers });
  }
  return { clock, down, members, key, impostors, apis };
}

describe('FleetPurge', () => {
  it('admits: a response whose fetch a matching purge overtook is not kept, whichever way the purge came', async () => {
    const { clock, members } = await fleetOf(['a', 'b']);
    const [a, b] = members as [Member, Member];
    const fetchStartedAt = clock.now();
    const tagged = { url: 'http://o.test/t', headers: { 'cache-tag': 'p1' }, fetchStartedAt };
    const other = { url: 'http://o.test/u', headers: {}, fetchStartedAt };
    await clock.advance(1_000);
    // Taken on a, sent to b: both refuse the fetch that started before, keep what does not match.
    await a.purges.purge({ kind: 'tag', value: 'p1' });
    for (const m of [a, b]) {
      expect(m.purges.admits(tagged)).toBe(false);
      expect(m.purges.admits(other)).toBe(true);
      // A fetch that started after the purge was applied is the new content.
      expect(m.purges.admits({ ...tagged, fetchStartedAt: clock.now() + 1 })).toBe(true);
    }
    await a.purges.purge({ kind: 'prefix', value: 'http://o.test/u' });
    expect(a.purges.admits(other)).toBe(false);
    // Remembered for an hour, not longer.
    await clock.advance(RECENT_PURGES_MS + 1);
    expect(a.purges.admits(tagged)).toBe(true);
  });

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
    const { clock, down, members } = await fleetOf(['a', 'b'], { maxEntries: 2 });
    const [a, b] = members as [Member, Member];
    await a.purges.purge({ kind: 'url', value: 'http://o.test/first' });
    expect(await b.purges.sync()).toMatchObject({ answered: 1, applied: 0 }); // sent to b already
    expect(b.log.cursor(a.id)).toEqual({ log: a.log.id, seq: 1 });
    b.store.add('http://o.test/old', 'z', 900);
    down.add(b.ip);
    await clock.advance(200_000);
    // Three purges while b is away: a's log keeps two, so b's cursor (1) is behind its first (3).
    for (const v of ['x', 'y', 'w']) await a.purges.purge({ kind: 'tag', value: v });
    expect(a.log.firstSeq).toBe(3);
    const floor = a.log.floor;
    await clock.advance(PURGE_SKEW_MS + 1);
    b.store.add('http://o.test/new', 'z', clock.now()); // after what a vouches for: kept
    down.delete(b.ip);
    const sync = await b.purges.sync();
    expect(sync.gap).toEqual({ before: new Date(floor + PURGE_SKEW_MS).toISOString(), dropped: 1 });
    expect(b.store.urls()).toEqual(['http://o.test/new']);
    expect(b.log.cursor(a.id)).toEqual({ log: a.log.id, seq: 4 });
    // Read up to the end: the next round finds no gap.
    expect((await b.purges.sync()).gap).toBeUndefined();
  });

  it('a new member does not make an old one drop its cache (its log is new, not a gap)', async () => {
    const { clock, down, members, apis, key } = await fleetOf(['a', 'b', 'n']);
    const [a, b, n] = members as [Member, Member, Member];
    down.add(n.ip); // n is not running yet
    await b.purges.sync(); // b reads a's log: b has a cursor on a
    b.store.add('http://o.test/kept', 'k', clock.now());
    await clock.advance(600_000);
    // n joins with a log created now; a is unreachable: n is all b can reach.
    await n.log.close();
    const fresh = new PurgeLog({ dir: join(tmpDir('fleet-purge'), 'n2') });
    await fresh.open(clock.now());
    n.log = fresh;
    n.purges = new FleetPurge(
      { store: n.store, log: fresh, peers: n.peers, clock },
      { nodeId: n.id },
    );
    apis.set(
      n.ip,
      new AdminApi({
        backend: {} as AdminBackend,
        purges: n.purges,
        peerAnswers: new PeerAnswerAuth(Keyring.parse([key])),
      }),
    );
    expect(n.purges.completeSince()).toBe(clock.now());
    down.delete(n.ip);
    down.add(a.ip);
    const sync = await b.purges.sync();
    expect(sync).toMatchObject({ asked: 2, answered: 1 });
    expect(sync.gap).toBeUndefined();
    expect(b.store.urls()).toEqual(['http://o.test/kept']);
  });

  it('never loses a purge that reaches a log late (taken on a node cut off for minutes)', async () => {
    const { clock, down, members } = await fleetOf(['a', 'b', 'x']);
    const [a, b, x] = members as [Member, Member, Member];
    for (const m of members) m.store.add('http://o.test/late', 'late', 500);
    await b.purges.sync();
    // x is cut off from everyone: its purge reaches nobody.
    down.add(x.ip);
    const cutOff = new Set([a.ip, b.ip]);
    for (const ip of cutOff) down.add(ip);
    const r = await x.purges.purge({ kind: 'tag', value: 'late' });
    expect(r.propagation.complete).toBe(false);
    for (const ip of cutOff) down.delete(ip);
    await clock.advance(120_000);
    await b.purges.sync(); // b is up to date with a (x is still unreachable to b)
    down.delete(x.ip);
    down.add(b.ip);
    // a reaches x first and records x's purge, taken two minutes ago.
    expect(await a.purges.sync()).toMatchObject({ applied: 1 });
    down.delete(b.ip);
    down.add(x.ip); // x is gone again: b learns of it from a's log only
    expect(await b.purges.sync()).toMatchObject({ applied: 1, dropped: 1 });
    expect(b.store.urls()).toEqual([]);
  });

  it('keeps its cursor where a pull failed and resumes from there', async () => {
    const { clock, members, impostors, apis } = await fleetOf(['a', 'b']);
    const [a, b] = members as [Member, Member];
    const entries = Array.from({ length: 1_001 }, (_v, i) => ({
      id: (i + 1).toString(16).padStart(32, '0'),
      at: clock.now(),
      kind: 'tag' as const,
      value: `t${i}`,
      origin: a.id,
    }));
    await a.log.appendAll(entries, clock.now());
    b.store.add('http://o.test/last', 't1000', 500);
    // a answers the first page, then its connection breaks.
    let pages = 0;
    impostors.set(a.ip, async (path, init) => {
      if (++pages > 1)
        throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } });
      const r = await apis.get(a.ip)!.handle({
        method: 'GET',
        url: path,
        headers: { host: `${a.ip}:8092`, ...(init?.headers as Record<string, string>) },
        remoteAddress: '127.0.0.1',
      });
      return new Response(r.body, { status: r.status, headers: r.headers });
    });
    expect(await b.purges.sync()).toMatchObject({ answered: 0, applied: 1_000 });
    expect(b.log.cursor(a.id)?.seq).toBe(1_000);
    expect(b.purges.synced).toBe(false);
    impostors.delete(a.ip);
    expect(await b.purges.sync()).toMatchObject({ answered: 1, applied: 1, dropped: 1 });
    expect(b.log.cursor(a.id)?.seq).toBe(1_001);
    expect(b.purges.synced).toBe(true);
  });

  it('believes no answer it cannot authenticate, and no purge or floor from the future', async () => {
    const { clock, members, impostors, key } = await fleetOf(['a', 'b']);
    const [a, b] = members as [Member, Member];
    await b.purges.sync();
    b.store.add('http://o.test/kept', 'k', clock.now());
    await clock.advance(1_000);
    const forged = (body: object, seal: boolean) => async (_p: string, init?: RequestInit) => {
      const text = JSON.stringify(body);
      const auth = (init?.headers as Record<string, string>)['coral-peer-auth']!;
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (seal)
        headers['coral-peer-answer'] = new PeerAnswerAuth(Keyring.parse([key])).seal(
          auth,
          200,
          text,
        );
      return new Response(text, { status: 200, headers });
    };
    const now = clock.now();
    const page = (over: object) => ({
      log: a.log.id,
      first: 1,
      last: 1,
      floor: 0,
      completeSince: 0,
      more: false,
      entries: [
        {
          seq: 1,
          id: 'f'.repeat(32),
          at: now,
          kind: 'prefix',
          value: 'http://o.test/',
          origin: a.id,
        },
      ],
      ...over,
    });
    // Whatever listens at a's address without the fleet's keys: a gap and a purge of everything.
    impostors.set(a.ip, forged(page({ first: 50, floor: now }), false));
    expect(await b.purges.sync()).toMatchObject({ answered: 0, applied: 0, dropped: 0 });
    // Sealed, but from the future (a member with a wild clock): refused all the same.
    const future = now + PURGE_SKEW_MS + 1;
    for (const over of [
      { floor: future, first: 50 },
      { completeSince: future },
      {
        entries: [
          {
            seq: 1,
            id: 'f'.repeat(32),
            at: future,
            kind: 'prefix',
            value: 'http://o.test/',
            origin: a.id,
          },
        ],
      },
    ]) {
      impostors.set(a.ip, forged(page(over), true));
      expect(await b.purges.sync()).toMatchObject({ answered: 0, applied: 0, dropped: 0 });
    }
    expect(b.store.urls()).toEqual(['http://o.test/kept']);
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
    expect(sync.gap).toEqual({
      before: new Date(1_000 + PURGE_SKEW_MS).toISOString(),
      dropped: 1,
    });
    expect(c.store.urls()).toEqual([]);
    expect(a.log.replaced).toBe(false);
    expect(c.log.replaced).toBe(false); // once: the next round drops nothing
    c.store.add('http://o.test/after', 'k', clock.now());
    expect((await c.purges.sync()).gap).toBeUndefined();
  });

  it('asks the members while its own store is still being scanned', async () => {
    const { members } = await fleetOf(['a', 'b']);
    const [a, b] = members as [Member, Member];
    b.store.add('http://o.test/1', 'x', 1);
    let release!: () => void;
    const scanning = new Promise<void>((r) => (release = r));
    const scan = a.store.purgeWhere.bind(a.store);
    a.store.purgeWhere = async (match) => {
      await scanning; // a slow scan of a large store
      return scan(match);
    };
    const taken = a.purges.purge({ kind: 'tag', value: 'x' });
    await waitFor(() => b.store.urls().length === 0, 5_000, 'b purged during a’s scan');
    release();
    expect((await taken).propagation.members).toMatchObject([{ ok: true, count: 1 }]);
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

  it('a node alone in its keyed fleet has purged the whole fleet (issue 29: exit 1 with no other member)', async () => {
    const { members } = await fleetOf(['alone']);
    const [a] = members as [Member];
    a.store.add('http://o.test/p/1', 'x', 1);
    const r = await a.purges.purge({ kind: 'prefix', value: 'http://o.test/p/' });
    expect(r.local.count).toBe(1);
    expect(r.propagation).toEqual({
      mode: 'sent',
      complete: true,
      members: [],
      reason: 'no other live member',
    });
  });

  it('a node cut off from its fleet (isolated, not joined) has not: no member is not "every member"', async () => {
    const { members } = await fleetOf(['cut'], { cutOff: () => 'this node is isolated' });
    const r = await members[0]!.purges.purge({ kind: 'tag', value: 'x' });
    expect(r.propagation).toMatchObject({
      complete: false,
      members: [],
      reason: 'this node is isolated',
    });
  });

  it('a member whose admin port is not known is not reached, and the admin API answers 502', async () => {
    // b's admin record is not found: nothing is sent to it, and nothing counts it done.
    const { members, apis } = await fleetOf(['a', 'b', 'c'], {
      adminPorts: async (m) => (m.ip === '127.0.0.2' ? undefined : 8092),
    });
    const [a, b, c] = members as [Member, Member, Member];
    for (const m of members) m.store.add('http://o.test/1', 'x', 1);
    const res = await apis.get(a.ip)!.handle({
      method: 'POST',
      url: '/v1/purge',
      headers: { host: `${a.ip}:8092`, 'content-type': 'application/json' },
      remoteAddress: '127.0.0.1',
      body: JSON.stringify({ tag: 'x' }),
    });
    expect(res.status).toBe(502);
    const body = JSON.parse(String(res.body)) as {
      error: { code: string; message: string };
      propagation: { complete: boolean; members: unknown[] };
    };
    expect(body.error.code).toBe('CORAL_ERR_FLEET_INCOMPLETE');
    expect(body.error.message).toContain(`${b.ip} ${PEER_NO_ADMIN_RECORD}`);
    expect(body.propagation.complete).toBe(false);
    expect(body.propagation.members).toEqual([
      { nodeId: b.id, address: b.ip, ok: false, error: PEER_NO_ADMIN_RECORD },
      { nodeId: c.id, address: `${c.ip}:8092`, ok: true, status: 200, count: 1 },
    ]);
    expect(b.store.urls()).toEqual(['http://o.test/1']);
    expect(c.store.urls()).toEqual([]);
  });
});
