/**
 * Adversary: forged holder records (issue 10, item 1). Anyone who can write a value under a URL
 * key can name any address as a holder, with a size and sha256 that match the bytes it will serve.
 * Over real TCP on loopback, with private origins allowed (so the address policy alone would let
 * the proxy reach 127.x), in keyed mode (records authenticated) and open mode:
 * - a record naming a node that is not a verified member is skipped and counted; no connection
 *   reaches the address it names;
 * - a record naming a real member but the attacker's address reaches the member at its verified
 *   address, never the attacker's;
 * - the forged bytes are never served, stored or announced.
 */
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { urlKey } from '../../src/mapping/coral-name.js';
import { InMemoryFleetMembers } from '../../src/peer/memory-members.js';
import { NODE_A as A, NODE_B as B, get, startPair } from '../helpers/harness.js';
import type { Pair } from '../helpers/harness.js';
import { FORGED, FORGED_SHA, startTrap } from './attacker.js';
import type { Trap } from './attacker.js';

const BODY = Buffer.from('the victim page\n'.repeat(100));
const SHA = createHash('sha256').update(BODY).digest('hex');
const STRANGER = 'ee'.repeat(20);

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Setup extends Pair {
  trap: Trap;
  internal: Trap;
  skipped: string[];
}

async function setup(members: InMemoryFleetMembers | undefined): Promise<Setup> {
  const trap = await startTrap('127.0.0.66');
  const internal = await startTrap('127.0.0.67'); // an internal service, e.g. an admin API
  const p = await startPair({ body: BODY, members });
  cleanups.push(
    () => trap.close(),
    () => internal.close(),
    () => p.close(),
  );
  return { ...p, trap, internal, skipped: p.metricsB.holderSkipped };
}

const fromB = (s: Setup) =>
  get(s.b.port, s.origin.coralHost, '/index.html', {}, 'GET', '127.0.0.4');

function forge(s: Setup, nodeId: string, at: Trap): void {
  s.index.set(urlKey(s.url('/index.html')), {
    nodeId,
    ip: at.ip,
    httpPort: at.port,
    state: 'complete',
    size: FORGED.length,
    sha256: FORGED_SHA,
  });
}

async function expectNothingForged(s: Setup): Promise<void> {
  expect(s.trap.connections).toEqual([]);
  expect(s.internal.connections).toEqual([]);
  const list = await s.b.proxy.cacheList();
  expect(list.map((e) => e.sha256)).toEqual([SHA]);
  // B announced only the origin's bytes.
  const fromBAnnounced = s.index.log.filter((e) => e.op === 'announce' && e.holder?.nodeId === B);
  expect(
    fromBAnnounced.filter((e) => e.holder!.state === 'complete').map((e) => e.holder!.sha256),
  ).toEqual([SHA]);
}

for (const mode of ['keyed', 'open'] as const) {
  describe(`forged holder records (${mode} mode)`, () => {
    const members = () => new InMemoryFleetMembers({ recordsAuthenticated: mode === 'keyed' });

    it('a non-member naming the attacker and an internal service: skipped, counted, never contacted', async () => {
      const s = await setup(members());
      forge(s, STRANGER, s.trap);
      forge(s, 'ef'.repeat(20), s.internal);
      const r = await fromB(s);
      expect(r.status).toBe(200);
      expect(r.body.equals(BODY)).toBe(true);
      expect(r.headers['cache-status']).toMatch(
        /fwd=uri-miss; fwd-status=200; stored; detail=not-member-holders-2$/,
      );
      expect(s.skipped).toEqual(['not-member', 'not-member']);
      expect(s.origin.hits).toHaveLength(1);
      await expectNothingForged(s);
      // Served from B's cache afterwards: still the origin's bytes.
      const again = await fromB(s);
      expect(again.headers['cache-status']).toMatch(/^Coral; hit/);
      expect(again.body.equals(BODY)).toBe(true);
    });

    it("a record with a member's id at the attacker's address: the member is asked at its verified address", async () => {
      const s = await setup(members());
      forge(s, A, s.trap);
      const r = await fromB(s);
      expect(r.body.equals(BODY)).toBe(true);
      // A was asked (it does not hold the object: 504), then the origin.
      expect(r.headers['cache-status']).toMatch(/fwd=uri-miss/);
      expect(s.origin.hits).toHaveLength(1);
      expect(s.skipped).toEqual([]);
      await expectNothingForged(s);
    });

    it("a forged size and sha256 for a real member's copy: the member's bytes fail the check, the origin's are served", async () => {
      const s = await setup(members());
      // A really holds the object...
      const ra = await get(s.a.port, s.origin.coralHost, '/index.html');
      expect(ra.body.equals(BODY)).toBe(true);
      // ...but the first record for A claims the attacker's bytes.
      s.index.set(urlKey(s.url('/index.html')), {
        nodeId: A,
        ip: s.trap.ip,
        httpPort: s.trap.port,
        state: 'complete',
        size: FORGED.length,
        sha256: FORGED_SHA,
      });
      const r = await fromB(s);
      expect(r.body.equals(BODY)).toBe(true);
      expect(s.trap.connections).toEqual([]);
      expect((await s.b.proxy.cacheList()).every((e) => e.sha256 === SHA)).toBe(true);
    });
  });
}

describe('no members configured', () => {
  it('no index lookup, no peer fetch: a forged record costs nothing and reaches nobody', async () => {
    const s = await setup(undefined);
    forge(s, A, s.trap);
    forge(s, STRANGER, s.internal);
    const lookups = () => s.index.log.filter((e) => e.op === 'lookup').length;
    const r = await fromB(s);
    expect(r.body.equals(BODY)).toBe(true);
    expect(lookups()).toBe(0);
    await expectNothingForged(s);
  });
});
