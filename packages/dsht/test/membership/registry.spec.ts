import { ManualClock } from '@coral/testkit';
import { describe, expect, it } from 'vitest';
import type { Contact } from '../../src/contact.js';
import { nodeIdFor, toHex } from '../../src/id/id.js';
import { PeerRegistry } from '../../src/membership/registry.js';

const c = (ip: string, port: number, httpPort?: number): Contact => ({
  id: nodeIdFor(ip, port),
  ip,
  port,
  ...(httpPort ? { httpPort } : {}),
});

describe('PeerRegistry', () => {
  it('keeps at most maxIdsPerIp live ids per IP; a dead one is replaced', async () => {
    const clock = new ManualClock(0);
    const evicted: string[] = [];
    const r = new PeerRegistry(
      { clock, onEvict: (rec) => evicted.push(rec.contact.ip + ':' + rec.contact.port) },
      { liveWindowMs: 1000 },
    );
    expect(r.admit(c('10.0.0.1', 1))).toBeDefined();
    for (let p = 2; p < 100; p++) expect(r.admit(c('10.0.0.1', p))).toBeUndefined();
    expect(r.refused).toBe(98);
    expect(r.admit(c('10.0.0.2', 1))).toBeDefined();
    // The first id falls silent; a restarted node on another port takes its place.
    await clock.advance(1001);
    r.admit(c('10.0.0.2', 1));
    expect(r.admit(c('10.0.0.1', 7))).toBeDefined();
    expect(evicted).toEqual(['10.0.0.1:1']);
    expect(r.size).toBe(2);
    // A failed RPC makes a member not live, so it can be replaced at once.
    r.noteFailure(r.admit(c('10.0.0.2', 1))!.hex);
    expect(r.admit(c('10.0.0.2', 2))).toBeDefined();
  });

  it('with failure detection running, its verdict alone decides who is live', async () => {
    const clock = new ManualClock(0);
    const down = new Set<string>();
    const r = new PeerRegistry({ clock, isDown: (hex) => down.has(hex) }, { liveWindowMs: 1000 });
    const rec = r.admit(c('10.0.0.1', 1))!;
    // A request that timed out on a busy member, or a long silence, is not a death.
    r.noteFailure(rec.hex);
    await clock.advance(5_000);
    expect(r.isLive(rec)).toBe(true);
    expect(r.admit(c('10.0.0.1', 2))).toBeUndefined(); // its IP stays taken
    down.add(rec.hex);
    expect(r.isLive(rec)).toBe(false);
    expect(r.admit(c('10.0.0.1', 2))).toBeDefined();
    // Without it, the failed RPC and the live window decide.
    const plain = new PeerRegistry({ clock }, { liveWindowMs: 1000 });
    const other = plain.admit(c('10.0.0.3', 1))!;
    expect(plain.isLive(other)).toBe(true);
    plain.noteFailure(other.hex);
    expect(plain.isLive(other)).toBe(false);
  });

  it('counts identities per source IP (behind a NAT the advertised IP is not what counts)', () => {
    const clock = new ManualClock(0);
    const r = new PeerRegistry({ clock });
    expect(r.admit(c('10.0.0.1', 1), undefined, '198.51.100.7')).toBeDefined();
    expect(r.admit(c('10.0.0.2', 1), undefined, '198.51.100.7')).toBeUndefined();
    expect(r.admit(c('10.0.0.3', 1), undefined, '198.51.100.8')).toBeDefined();
  });

  it('allows more ids per IP when configured, keeps the fuller contact, and stays bounded', () => {
    const clock = new ManualClock(0);
    const r = new PeerRegistry({ clock }, { maxIdsPerIp: 3, capacity: 10 });
    for (let p = 1; p <= 5; p++) r.admit(c('10.0.0.1', p));
    expect(r.size).toBe(3);
    const full = c('10.0.0.9', 1, 8090);
    r.admit(full);
    // A minimal sender (a trimmed answer) keeps what was known.
    expect(r.admit(c('10.0.0.9', 1))!.contact.httpPort).toBe(8090);
    for (let i = 0; i < 50; i++) r.admit(c(`10.1.0.${i}`, 1));
    expect(r.size).toBe(10);
  });

  it('beyond capacity drops the least recently heard member, whatever the order they came in', async () => {
    const clock = new ManualClock(0);
    const evicted: string[] = [];
    const r = new PeerRegistry(
      { clock, onEvict: (rec) => evicted.push(rec.contact.ip) },
      { capacity: 3 },
    );
    r.admit(c('10.0.0.1', 1));
    await clock.advance(10);
    r.admit(c('10.0.0.2', 1));
    await clock.advance(10);
    r.admit(c('10.0.0.3', 1));
    await clock.advance(10);
    r.admit(c('10.0.0.1', 1)); // the first one heard again: now the freshest
    r.admit(c('10.0.0.4', 1));
    expect(evicted).toEqual(['10.0.0.2']);
    await clock.advance(10);
    r.admit(c('10.0.0.3', 1));
    r.admit(c('10.0.0.5', 1));
    expect(evicted).toEqual(['10.0.0.2', '10.0.0.1']);
    expect([...r.all()].map((m) => m.contact.ip).sort()).toEqual([
      '10.0.0.3',
      '10.0.0.4',
      '10.0.0.5',
    ]);
  });

  it('beyond capacity keeps the members `keep` holds on to (routing-table contacts) while others remain', async () => {
    const clock = new ManualClock(0);
    const inTable = new Set(['10.9.0.1', '10.9.0.2']);
    const evicted: string[] = [];
    const r = new PeerRegistry(
      {
        clock,
        keep: (ct) => inTable.has(ct.ip),
        onEvict: (rec) => evicted.push(rec.contact.ip),
      },
      { capacity: 128 },
    );
    for (const ip of inTable) r.admit(c(ip, 1));
    await clock.advance(1_000);
    for (let i = 0; i < 1_000; i++) {
      r.admit(c(`10.1.${i >> 8}.${i & 255}`, 1));
      await clock.advance(1);
      expect(r.size).toBeLessThanOrEqual(128);
    }
    // The quiet table contacts stay; strangers went oldest first, two at a time (128 / 64).
    for (const ip of inTable) expect(r.get(toHex(nodeIdFor(ip, 1)))).toBeDefined();
    expect([...r.all()].filter((m) => inTable.has(m.contact.ip))).toHaveLength(2);
    expect(evicted.slice(0, 4)).toEqual(['10.1.0.0', '10.1.0.1', '10.1.0.2', '10.1.0.3']);
    expect(evicted.some((ip) => inTable.has(ip))).toBe(false);
    // When only kept members are left beyond the bound, they go too (the bound holds).
    const small = new PeerRegistry({ clock, keep: () => true }, { capacity: 2 });
    for (let i = 0; i < 5; i++) small.admit(c(`10.2.0.${i}`, 1));
    expect(small.size).toBe(2);
  });
});
