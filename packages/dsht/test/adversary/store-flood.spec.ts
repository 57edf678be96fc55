/**
 * Store flooding over real UDP: one source (with a round trip, and in keyed mode the fleet key)
 * sends thousands of STOREs to distinct keys. It holds at most its quota (1/16 of the store); the
 * store, its bytes and the process's memory stay bounded; a legitimate put still succeeds; the
 * junk does not outgrow its quota across a restart. With the default rate limits the flood is
 * mostly refused before it reaches the store; a keyed node gives a stranger nothing but a few
 * 13-byte key notices.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '@coral/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import {
  MAX_BYTES_PER_SOURCE,
  MAX_VALUES_PER_SOURCE,
  STORE_ENTRY_OVERHEAD,
} from '../../src/constants.js';
import type { Dsht } from '../../src/dsht.js';
import { keyFromName, toHex } from '../../src/id/id.js';
import { StoreStatus } from '../../src/wire/messages.js';
import {
  addrOf,
  barrier,
  MODES,
  onlyKeyNotices,
  Peer,
  startNode,
  stateOf,
  Wire,
  type Mode,
} from './harness.js';

const dirs: string[] = [];
const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const VALUE = 512;
const QUOTA = Math.min(
  MAX_VALUES_PER_SOURCE,
  Math.floor(MAX_BYTES_PER_SOURCE / (VALUE + STORE_ENTRY_OVERHEAD)),
);

/**
 * Send `count` STOREs to distinct keys, `window` at a time, waiting for every answer (windows stay
 * well inside a socket's receive buffer, so loopback drops nothing).
 */
async function flood(
  attacker: Peer,
  node: Dsht,
  token: Uint8Array,
  count: number,
  window = 64,
): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  const value = new Uint8Array(VALUE).fill(0xee);
  for (let sent = 0; sent < count; sent += window) {
    const batch = Math.min(window, count - sent);
    const start = attacker.received.length;
    for (let i = 0; i < batch; i++) {
      const key = keyFromName(`junk-${sent + i}`);
      const msg = attacker.request({ type: 'STORE', level: 0, key, value, ttl: 86_400 }, { token });
      await attacker.send(attacker.wire.frame(msg), node.contact);
    }
    await waitFor(() => attacker.received.length - start >= batch, {
      what: 'answers to a batch of STOREs',
    });
    for (const r of attacker.received.slice(start)) {
      const body = r.msg?.body;
      const status = body?.type === 'STORE_RESULT' ? body.status : -1;
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  }
  return statuses;
}

describe.each(MODES)('store flood (%s mode)', (mode: Mode) => {
  const net = mode === 'open' ? 1 : 2;
  const ip = (h: number) => `127.16.${net}.${h}`;

  it('one source holds at most its quota; a legitimate put succeeds; memory stays bounded; a restart keeps the bound', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'dsht-flood-'));
    dirs.push(dataDir);
    // Rate limits out of the way, so the quota is what holds (the next test keeps the defaults).
    const options = { dataDir, rateLimits: { STORE: { perSecond: 1e6, burst: 1e6 } } };
    let victim = await startNode(ip(1), mode, options);
    const publisher = await startNode(ip(2), mode, {}, [addrOf(victim)]);
    const attacker = await Peer.bind(ip(66), new Wire(mode));
    // It answers like a live node (its STOREs with a token made it a member the fleet will ask).
    attacker.serve(() => ({ type: 'NODES', contacts: [] }));
    cleanup.push(
      () => publisher.stop(),
      () => attacker.close(),
    );

    const rss = process.memoryUsage().rss;
    const token = await attacker.token(victim.contact);
    const statuses = await flood(attacker, victim, token, QUOTA + 1_500);
    const accepted = statuses.get(StoreStatus.ACCEPTED) ?? 0;
    expect(accepted).toBe(QUOTA);
    expect(statuses.get(StoreStatus.LIMIT)).toBe(1_500);
    const usage = victim.store.usage(attacker.address.ip);
    expect(usage.values).toBe(QUOTA);
    expect(usage.bytes).toBeLessThanOrEqual(MAX_BYTES_PER_SOURCE);
    expect(victim.store.bytes).toBeLessThanOrEqual(MAX_BYTES_PER_SOURCE + 4096);
    expect(victim.authState().counters.quotaRefused).toBe(1_500);
    // ~7,300 values of 512 bytes: a few MB of data; the process grows by far less than 100 MB.
    expect(process.memoryUsage().rss - rss).toBeLessThan(100 * 1024 * 1024);

    // A legitimate store at the flooded node, and a put through the fleet, still succeed.
    const key = keyFromName('url:http://legit.example/');
    const value = new TextEncoder().encode('complete at 127.16.x.2');
    const r = await publisher.rpc.request(victim.contact, {
      type: 'STORE',
      level: 0,
      key,
      value,
      ttl: 600,
    });
    expect(r.body).toEqual({ type: 'STORE_RESULT', status: StoreStatus.ACCEPTED });
    const put = await publisher.put(keyFromName('url:http://legit.example/2'), value, 600);
    expect(put.stored.length).toBe(1);

    // Restart from the database: the junk comes back within its quota, the legit value too.
    const port = victim.contact.port;
    await victim.stop();
    victim = await startNode(ip(1), mode, { dataDir, port });
    cleanup.push(() => victim.stop());
    expect(victim.store.usage(attacker.address.ip).values).toBeLessThanOrEqual(QUOTA);
    expect(victim.store.usage(attacker.address.ip).values).toBeGreaterThan(0);
    expect(victim.localGet(key).map((v) => new TextDecoder().decode(v))).toEqual([
      'complete at 127.16.x.2',
    ]);
  });

  it('with the default rate limits most of a flood never reaches the store', async () => {
    const victim = await startNode(ip(3), mode);
    const attacker = await Peer.bind(ip(67), new Wire(mode));
    const canary = await Peer.bind(ip(99), new Wire(mode));
    cleanup.push(
      () => victim.stop(),
      () => attacker.close(),
      () => canary.close(),
    );
    const token = await attacker.token(victim.contact);
    const value = new Uint8Array(VALUE);
    const started = Date.now();
    for (let i = 0; i < 2_000; i++) {
      const msg = attacker.request(
        { type: 'STORE', level: 0, key: keyFromName(`rl-${i}`), value, ttl: 600 },
        { token },
      );
      await attacker.send(attacker.wire.frame(msg), victim.contact);
      if (i % 64 === 63) await barrier(victim, canary); // stay inside the socket buffers
    }
    await barrier(victim, canary);
    const seconds = (Date.now() - started) / 1000;
    const stored = victim.store.usage(attacker.address.ip).values;
    // A bucket of 100, refilled at 50 per second while the flood lasted.
    expect(stored).toBeLessThanOrEqual(100 + Math.ceil(50 * (seconds + 1)));
    expect(stored).toBeLessThan(2_000);
    expect(victim.authState().counters.rateLimited).toBe(2_000 - stored);
  });
});

describe('store flood (keyed mode, outsider)', () => {
  it('a stranger without the fleet key stores nothing and gets no answer', async () => {
    const victim = await startNode('127.16.3.1', 'keyed');
    const outsider = await Peer.bind('127.16.3.66', new Wire('outsider'));
    const canary = await Peer.bind('127.16.3.99', new Wire('keyed'));
    cleanup.push(
      () => victim.stop(),
      () => outsider.close(),
      () => canary.close(),
    );
    await barrier(victim, canary);
    const before = stateOf(victim);
    for (let i = 0; i < 2_000; i++) {
      const msg = outsider.request({
        type: 'STORE',
        level: 0,
        key: keyFromName(`x-${i}`),
        value: new Uint8Array(VALUE),
        ttl: 600,
      });
      await outsider.send(outsider.wire.frame(msg), victim.contact);
      if (i % 64 === 63) await barrier(victim, canary);
    }
    await barrier(victim, canary);
    onlyKeyNotices(outsider);
    expect(stateOf(victim)).toEqual(before);
    expect(victim.authState().counters.unknownKey).toBe(2_000);
    expect(toHex(victim.id)).toHaveLength(40);
  });
});
