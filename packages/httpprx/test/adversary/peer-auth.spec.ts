/**
 * Adversary: peer requests (the `x-coral-peer` marker) from someone without the fleet key, over
 * real TCP on loopback. With `peerAuth` set, a peer request whose `Coral-Peer-Auth` does not
 * verify gets 403 `CORAL_PEER_UNAUTHORIZED` and is counted by reason; a proxy with the key gets
 * through; a proxy without `peerAuth` keeps serving peer requests as before.
 */
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { InMemoryFleetMembers } from '../../src/peer/memory-members.js';
import type { PeerAuth } from '../../src/peer/auth.js';
import { T0, get, startPair } from '../helpers/harness.js';
import type { Pair } from '../helpers/harness.js';
import { HmacPeerAuth, testKey } from '../helpers/peer-auth.js';
import { rawRequest } from './attacker.js';

const BODY = Buffer.from('held by A\n'.repeat(50));
const SHA = createHash('sha256').update(BODY).digest('hex');

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Wraps a PeerAuth and keeps every verdict, and the headers that verified. */
class Spy implements PeerAuth {
  readonly verdicts: string[] = [];
  readonly good: string[] = [];
  constructor(readonly inner: PeerAuth) {}
  sign(req: { method: string; authority: string; path: string }): string {
    return this.inner.sign(req);
  }
  verify(req: { method: string; authority: string; path: string; header: string | undefined }) {
    const v = this.inner.verify(req);
    this.verdicts.push(v);
    if (v === 'ok' && req.header) this.good.push(req.header);
    return v;
  }
}

interface Setup extends Pair {
  authA: Spy | undefined;
  rejected: string[];
}

async function pair(keyA: string | undefined, keyB: string | undefined): Promise<Setup> {
  const clock = new ManualClock(T0);
  const authA = keyA ? new Spy(new HmacPeerAuth(keyA, clock)) : undefined;
  const p = await startPair({
    body: BODY,
    members: new InMemoryFleetMembers({ recordsAuthenticated: true }),
    a: authA ? { peerAuth: authA } : {},
    b: keyB ? { peerAuth: new HmacPeerAuth(keyB, clock) } : {},
    clock,
  });
  cleanups.push(() => p.close());
  // A holds the object.
  const r = await get(p.a.port, p.origin.coralHost, '/obj');
  expect(r.body.equals(BODY)).toBe(true);
  return { ...p, authA, rejected: p.metricsA.peerRejected };
}

/** A peer request as an attacker sends it, from its own address. */
function peerRequest(
  p: Pair,
  auth?: string,
  path = '/obj',
): Promise<Awaited<ReturnType<typeof rawRequest>>> {
  const lines = [
    `GET ${path} HTTP/1.1`,
    `host: ${p.origin.coralHost}`,
    `x-coral-peer: ${'99'.repeat(20)}`,
    'cache-control: only-if-cached',
    ...(auth === undefined ? [] : [`coral-peer-auth: ${auth}`]),
    'connection: close',
  ];
  return rawRequest(p.a.port, lines.join('\r\n') + '\r\n\r\n', '127.0.0.77');
}

describe('incoming peer requests with peerAuth set', () => {
  const K = testKey(1);

  it('unauthenticated, malformed, wrong-key, wrong-path, stale and replayed: 403 CORAL_PEER_UNAUTHORIZED, counted by reason', async () => {
    const p = await pair(K, K);
    const signer = new HmacPeerAuth(K, p.clock);
    const stranger = new HmacPeerAuth(testKey(2), p.clock);
    const host = p.origin.coralHost;

    // A fleet member fetches from A: this signature is good once.
    const rb = await get(p.b.port, host, '/obj', {}, 'GET', '127.0.0.4');
    expect(rb.headers['cache-status']).toMatch(/fwd=peer/);
    expect(p.authA!.good).toHaveLength(1);
    const captured = p.authA!.good[0]!;

    const stale = signer.sign({ method: 'GET', authority: host, path: '/obj' });
    const attempts: Array<[string | undefined, string]> = [
      [undefined, 'missing'],
      ['garbage', 'malformed'],
      [stranger.sign({ method: 'GET', authority: host, path: '/obj' }), 'unknown-key'],
      [signer.sign({ method: 'GET', authority: host, path: '/other' }), 'bad-mac'],
      [captured, 'replayed'],
    ];
    for (const [auth, reason] of attempts) {
      const r = await peerRequest(p, auth);
      expect(r.status, reason).toBe(403);
      expect(r.headers['x-coral-error']).toBe('CORAL_PEER_UNAUTHORIZED');
      expect(r.body.includes(BODY)).toBe(false);
      expect(r.headers['x-coral-sha256']).toBeUndefined();
    }
    await p.clock.advance(60_000);
    const late = await peerRequest(p, stale);
    expect(late.status).toBe(403);
    expect(p.rejected).toEqual([
      'missing',
      'malformed',
      'unknown-key',
      'bad-mac',
      'replayed',
      'stale',
    ]);
  });

  it('control: a correctly signed peer request is served (with x-coral-sha256)', async () => {
    const p = await pair(K, K);
    const auth = new HmacPeerAuth(K, p.clock).sign({
      method: 'GET',
      authority: p.origin.coralHost,
      path: '/obj',
    });
    const r = await peerRequest(p, auth);
    expect(r.status).toBe(200);
    expect(r.headers['x-coral-sha256']).toBe(SHA);
    expect(r.body.equals(BODY)).toBe(true);
    expect(p.rejected).toEqual([]);
  });

  it('ordinary client requests need no peer authentication', async () => {
    const p = await pair(K, K);
    const r = await get(p.a.port, p.origin.coralHost, '/obj');
    expect(r.status).toBe(200);
    expect(r.headers['cache-status']).toMatch(/^Coral; hit/);
  });

  it('a fleet member with another key is refused and falls back to the origin', async () => {
    const p = await pair(K, testKey(3));
    const rb = await get(p.b.port, p.origin.coralHost, '/obj', {}, 'GET', '127.0.0.4');
    expect(rb.body.equals(BODY)).toBe(true);
    expect(rb.headers['cache-status']).toMatch(/fwd=uri-miss/);
    expect(p.rejected).toEqual(['unknown-key']);
    expect(p.origin.hits).toHaveLength(2);
  });
});

describe('without peerAuth', () => {
  it('peer requests are served as before (no header needed, none checked)', async () => {
    const p = await pair(undefined, undefined);
    const r = await peerRequest(p);
    expect(r.status).toBe(200);
    expect(r.body.equals(BODY)).toBe(true);
    const rb = await get(p.b.port, p.origin.coralHost, '/obj', {}, 'GET', '127.0.0.4');
    expect(rb.headers['cache-status']).toMatch(/fwd=peer/);
    expect(p.origin.hits).toHaveLength(1);
  });
});
