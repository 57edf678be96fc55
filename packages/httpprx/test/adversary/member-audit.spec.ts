/**
 * Adversary: a lying member caught by the sampled audit and quarantined fleet-wide (issue 31,
 * item 3; src/audit/). A three-member keyed fleet on loopback: proxies A (127.0.0.1) and B
 * (127.0.0.4), and the liar L (127.0.0.5), an HTTP server holding the fleet key (its answers are
 * what a member's are) that serves wrong bytes under invented validators and a day's freshness
 * for every URL. A's quarantine is reported to B as the node package does (B's
 * `memberReported`; the signed transport is tested in @coral/node). Each case fails without
 * its mechanism: without the audit A keeps serving and asking L; without B's own check of the
 * report B keeps asking L; without the bounds the audits and reports reach the origin unbounded.
 */
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { createServer } from 'node:http';
import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import type { MemberReport } from '../../src/audit/quarantine.js';
import { urlKey } from '../../src/mapping/coral-name.js';
import { InMemoryFleetMembers } from '../../src/peer/memory-members.js';
import { topMember } from '../../src/peer/rendezvous.js';
import type { ProxyMetrics, ProxyOptions } from '../../src/proxy/types.js';
import {
  NODE_A as A,
  NODE_B as B,
  T0,
  closer,
  get,
  startOrigin,
  startProxy,
  until,
} from '../helpers/harness.js';
import type { Origin, ProxyHarness } from '../helpers/harness.js';
import { HmacPeerAuth } from '../helpers/peer-auth.js';

const L = 'cc'.repeat(20);
const KEY = '5a'.repeat(32);
const PAGE = Buffer.from('the origin page\n'.repeat(64));
const SHA = createHash('sha256').update(PAGE).digest('hex');
const LIE = Buffer.from('the member says so\n'.repeat(50));

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Liar {
  port: number;
  asked: string[];
}

async function startLiar(answer: (res: ServerResponse) => void): Promise<Liar> {
  const state: Liar = { port: 0, asked: [] };
  const server = createServer((req, res) => {
    state.asked.push(req.url ?? '');
    answer(res);
  });
  cleanups.push(closer(server));
  await new Promise<void>((r) => server.listen(0, '127.0.0.5', r));
  state.port = (server.address() as AddressInfo).port;
  return state;
}

/** Wrong bytes, invented validators, a day's freshness. */
const lie = (res: ServerResponse) => {
  res.writeHead(200, {
    'cache-control': 'max-age=86400',
    etag: '"made-up"',
    'last-modified': 'Mon, 01 Jan 2024 00:00:00 GMT',
    'content-length': String(LIE.length),
  });
  res.end(LIE);
};

interface Fleet {
  origin: Origin;
  liar: Liar;
  a: ProxyHarness;
  b: ProxyHarness;
  members: InMemoryFleetMembers;
  reports: MemberReport[];
  outcomes: { a: string[]; b: string[]; reportsB: string[] };
  /** A's origin fetches as its metrics saw them: for clients, and the audit's own. */
  fetchesA: { origin: number; audit: number };
  /** Paths whose designated fetcher, fleet-wide, is `who`. */
  paths(who: string, n: number, prefix?: string): string[];
  fetch(px: ProxyHarness, path: string): ReturnType<typeof get>;
}

async function fleet(
  liarAnswer: (res: ServerResponse) => void,
  options: Partial<ProxyOptions> = {},
  relay = true,
): Promise<Fleet> {
  const origin = await startOrigin((_req, res) => {
    res.writeHead(200, {
      'cache-control': 'max-age=600',
      etag: '"real"',
      'content-length': String(PAGE.length),
    });
    res.end(PAGE);
  });
  cleanups.push(() => origin.close());
  const liar = await startLiar(liarAnswer);
  const clock = new ManualClock(T0);
  const members = new InMemoryFleetMembers({ recordsAuthenticated: true, rendezvous: true });
  const reports: MemberReport[] = [];
  const outcomes = { a: [] as string[], b: [] as string[], reportsB: [] as string[] };
  const fetchesA = { origin: 0, audit: 0 };
  const metrics = (
    audits: string[],
    reportsSeen: string[] = [],
    fetches = { origin: 0, audit: 0 },
  ): ProxyMetrics => ({
    request() {},
    originFetch: () => void fetches.origin++,
    peerFetch() {},
    auditFetch: () => void fetches.audit++,
    rateLimited() {},
    audit: (o) => audits.push(o),
    memberReport: (o) => reportsSeen.push(o),
  });
  const holder: { b?: ProxyHarness } = {};
  const opts = { auditFraction: 1, ...options };
  const a = await startProxy(
    { self: { nodeId: A, ip: '127.0.0.1', httpPort: 0 }, ...opts },
    {
      clock,
      members,
      peerAuth: new HmacPeerAuth(KEY, clock),
      metrics: metrics(outcomes.a, [], fetchesA),
      onQuarantine: (report) => {
        reports.push(report);
        // What the node package does with a signed peer request to every member.
        if (relay) holder.b?.proxy.memberReported(JSON.parse(JSON.stringify(report)), A);
      },
    },
    '127.0.0.1',
  );
  cleanups.push(() => a.close());
  const b = await startProxy(
    { self: { nodeId: B, ip: '127.0.0.4', httpPort: 0 }, ...opts },
    {
      clock,
      members,
      peerAuth: new HmacPeerAuth(KEY, clock),
      metrics: metrics(outcomes.b, outcomes.reportsB),
    },
    '127.0.0.4',
  );
  cleanups.push(() => b.close());
  holder.b = b;
  members.set(A, { ip: '127.0.0.1', httpPort: a.port });
  members.set(B, { ip: '127.0.0.4', httpPort: b.port });
  members.set(L, { ip: '127.0.0.5', httpPort: liar.port });
  const live = (id: string) => ({ nodeId: id, ip: '127.0.0.9', httpPort: 1, near: true });
  return {
    origin,
    liar,
    a,
    b,
    members,
    reports,
    outcomes,
    fetchesA,
    paths(who, n, prefix = '/p') {
      const out: string[] = [];
      for (let i = 0; out.length < n; i++) {
        const path = `${prefix}${i}`;
        const key = urlKey(`http://origin.test:${origin.port}${path}`);
        const others = [A, B, L].filter((id) => id !== who).map(live);
        if (topMember(who, key, others) === undefined) out.push(path);
      }
      return out;
    },
    fetch: (px, path) =>
      get(px.port, origin.coralHost, path, {}, 'GET', px === a ? '127.0.0.1' : '127.0.0.4'),
  };
}

const quarantinedHere = (px: ProxyHarness) =>
  px.proxy.quarantine().quarantined.map((e) => e.nodeId);

describe('a member serving wrong bytes, wrong validators and a long freshness', () => {
  it('is caught by the audit, quarantined, reported; the other member checks and stops asking it', async () => {
    const f = await fleet(lie);
    const [p1, p2, p3] = f.paths(L, 3);
    // A's miss goes to L (designated): the client gets the lie — the audit runs behind it.
    const first = await f.fetch(f.a, p1!);
    expect(first.body.equals(LIE)).toBe(true);
    expect(first.headers['cache-status']).toMatch(/fwd=peer/);
    await until(() => quarantinedHere(f.a).includes(L), 'A quarantines L');
    const [entry] = f.a.proxy.quarantine().quarantined;
    expect(entry!.evidence.disagreements.sort()).toEqual(['bytes', 'freshness', 'validators']);
    expect(entry!.evidence.member).toMatchObject({ size: LIE.length, etag: '"made-up"' });
    expect(entry!.evidence.origin).toMatchObject({ size: PAGE.length, sha256: SHA });
    expect(f.outcomes.a).toEqual(['lied']);
    // The lie is gone from A: replaced by the audit's own origin copy.
    await until(async () => (await f.a.proxy.cacheList()).every((e) => e.sha256 === SHA));
    const again = await f.fetch(f.a, p1!);
    expect(again.body.equals(PAGE)).toBe(true);
    // A no longer asks L.
    const asked = f.liar.asked.length;
    expect((await f.fetch(f.a, p2!)).body.equals(PAGE)).toBe(true);
    expect(f.liar.asked).toHaveLength(asked);
    // The report reached B, which asked L for the object itself, and found the lie.
    expect(f.reports.map((r) => [r.member, r.path])).toEqual([[L, p1]]);
    await until(() => quarantinedHere(f.b).includes(L), 'B quarantines L on its own check');
    expect(f.outcomes.reportsB).toEqual(['confirmed']);
    expect(f.b.proxy.quarantine().quarantined[0]!.found).toBe('report');
    const before = f.liar.asked.length;
    expect((await f.fetch(f.b, p3!)).body.equals(PAGE)).toBe(true);
    expect(f.liar.asked).toHaveLength(before);
  });

  it('without the report, the other member keeps asking the liar', async () => {
    const f = await fleet(lie, {}, false);
    const [p1, p2] = f.paths(L, 2);
    await f.fetch(f.a, p1!);
    await until(() => quarantinedHere(f.a).includes(L));
    const before = f.liar.asked.length;
    const r = await f.fetch(f.b, p2!);
    expect(r.body.equals(LIE)).toBe(true); // until B's own audit catches it
    expect(f.liar.asked).toHaveLength(before + 1);
  });

  it('a quarantine ends; a second one lasts twice as long', async () => {
    const f = await fleet(lie, { quarantineSeconds: 100 });
    const [p1, p2] = f.paths(L, 2);
    await f.fetch(f.a, p1!);
    await until(() => quarantinedHere(f.a).includes(L));
    const [first] = f.a.proxy.quarantine().quarantined;
    expect(first!.until - first!.since).toBe(100_000);
    await f.a.clock.advance(100_000);
    expect(quarantinedHere(f.a)).toEqual([]);
    await f.fetch(f.a, p2!); // asked again, lies again
    await until(() => quarantinedHere(f.a).includes(L));
    const [second] = f.a.proxy.quarantine().quarantined;
    expect(second!.until - second!.since).toBe(200_000);
  });
});

describe('an honest member and a lying reporter', () => {
  it("an honest member's copies agree: nothing is quarantined", async () => {
    const f = await fleet((res) => {
      res.writeHead(200, {
        'cache-control': 'max-age=600',
        etag: '"real"',
        'content-length': String(PAGE.length),
      });
      res.end(PAGE);
    });
    const [p1] = f.paths(L, 1);
    expect((await f.fetch(f.a, p1!)).headers['cache-status']).toMatch(/fwd=peer/);
    await until(() => f.outcomes.a.length === 1);
    expect(f.outcomes.a).toEqual(['agree']);
    expect(quarantinedHere(f.a)).toEqual([]);
    // The audit's refetch is the origin's one request, counted apart from fetches for clients
    // (bench:soak's origin fetches per object leave it out by this counter).
    expect(f.origin.hits).toHaveLength(1);
    expect(f.fetchesA).toEqual({ origin: 0, audit: 1 });
    // A's own miss of a URL it is designated for is a fetch for a client, not the audit's.
    const [own] = f.paths(A, 1);
    expect((await f.fetch(f.a, own!)).body.equals(PAGE)).toBe(true);
    expect(f.origin.hits).toHaveLength(2);
    expect(f.fetchesA).toEqual({ origin: 1, audit: 1 });
  });

  it("an honest member's coded copy (compression stored once) is audited by its identity form: it agrees", async () => {
    const coded = gzipSync(PAGE);
    const f = await fleet((res) => {
      res.writeHead(200, {
        'cache-control': 'max-age=600',
        etag: '"real"',
        'content-encoding': 'gzip',
        'coral-coded': `gzip; length=${PAGE.length}; sha256=${SHA}`,
        'content-length': String(coded.length),
      });
      res.end(coded);
    });
    const [p1] = f.paths(L, 1);
    const r = await f.fetch(f.a, p1!);
    expect(r.headers['cache-status']).toMatch(/fwd=peer/);
    expect(r.body.equals(PAGE)).toBe(true); // decoded for a client that sent no Accept-Encoding
    await until(() => f.outcomes.a.length === 1);
    expect(f.outcomes.a).toEqual(['agree']);
    expect(quarantinedHere(f.a)).toEqual([]);
  });

  it('a report against an honest member is checked, not obeyed: it stays asked', async () => {
    const f = await fleet(lie);
    // A holds an honest copy of p1 (from the origin: A is its designated fetcher).
    const [p1] = f.paths(A, 1);
    expect((await f.fetch(f.a, p1!)).body.equals(PAGE)).toBe(true);
    // L reports A to B, with made-up evidence.
    const report: MemberReport = {
      member: A,
      host: f.origin.coralHost,
      path: p1!,
      url: `http://origin.test:${f.origin.port}${p1}`,
      evidence: {
        url: `http://origin.test:${f.origin.port}${p1}`,
        disagreements: ['bytes'],
        proof: true,
        member: { size: 1, sha256: 'ab'.repeat(32), lifetime: 600 },
        origin: { size: PAGE.length, sha256: SHA, lifetime: 600 },
      },
    };
    f.b.proxy.memberReported(report, L);
    await until(() => f.outcomes.reportsB.length === 1);
    expect(f.outcomes.reportsB).toEqual(['unconfirmed']);
    expect(quarantinedHere(f.b)).toEqual([]);
    expect(f.b.proxy.quarantine().suspects.map((s) => s.nodeId)).toEqual([A]);
    // B still asks A for what A is designated for.
    const [p2] = f.paths(A, 2).slice(1);
    const r = await f.fetch(f.b, p2!);
    expect(r.headers['cache-status']).toMatch(/fwd=peer/);
  });

  it('a flood of reports costs at most the report budget in origin fetches', async () => {
    const f = await fleet(lie, { reportsPerMinute: 3 });
    const [p1] = f.paths(A, 1);
    await f.fetch(f.a, p1!);
    const hits = f.origin.hits.length;
    const url = `http://origin.test:${f.origin.port}${p1}`;
    for (let i = 0; i < 50; i++) {
      f.b.proxy.memberReported(
        {
          member: A,
          host: f.origin.coralHost,
          path: p1!,
          url,
          evidence: {
            url,
            disagreements: ['bytes'],
            proof: false,
            member: { size: 1, sha256: 'ab'.repeat(32), lifetime: 1 },
            origin: { size: 1, sha256: 'cd'.repeat(32), lifetime: 1 },
          },
        },
        L,
      );
    }
    await until(() => f.outcomes.reportsB.filter((o) => o === 'unconfirmed').length === 3);
    expect(f.outcomes.reportsB.filter((o) => o === 'unchecked')).toHaveLength(47);
    expect(f.origin.hits.length - hits).toBe(3);
    expect(quarantinedHere(f.b)).toEqual([]);
  });
});

describe('the audit is bounded', () => {
  it('at most auditsPerMinute audits start in a minute; the rest are skipped and counted', async () => {
    const f = await fleet(lie, { auditsPerMinute: 0 });
    const [p1] = f.paths(L, 1);
    await f.fetch(f.a, p1!);
    await until(() => f.outcomes.a.length === 1);
    expect(f.outcomes.a).toEqual(['skipped']);
    expect(f.origin.hits).toHaveLength(0);
    expect(quarantinedHere(f.a)).toEqual([]);
  });

  it('auditFraction 0 audits nothing', async () => {
    const f = await fleet(lie, { auditFraction: 0 });
    const [p1] = f.paths(L, 1);
    await f.fetch(f.a, p1!);
    expect((await f.fetch(f.a, p1!)).body.equals(LIE)).toBe(true);
    expect(f.outcomes.a).toEqual([]);
    expect(f.origin.hits).toHaveLength(0);
  });
});
