import type net from 'node:net';

import { ManualClock } from '@coral/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import {
  DEFAULT_CACHE_SIZE,
  DEFAULT_CACHE_TTL_MS,
  SmartConnector,
  netDial,
} from '../../src/connect/index.js';
import type { Dial } from '../../src/connect/index.js';
import { TableResolver, until } from './helpers.js';
import { LoopbackLab, canStall, recordingDial } from './loopback-lab.js';

const ACCEPT = '127.0.0.2';
const REFUSE = '127.0.0.3';
const STALL = '127.0.0.4';
const ACCEPT2 = '127.0.0.5';

describe.skipIf(!canStall)('SmartConnector against real loopback origins', () => {
  let lab: LoopbackLab;
  let clock: ManualClock;
  const open: net.Socket[] = [];

  beforeEach(async () => {
    lab = await LoopbackLab.create();
    clock = new ManualClock(1_000_000);
  });
  afterEach(async () => {
    for (const s of open.splice(0)) s.destroy();
    await lab.close();
  });

  const keep = (s: net.Socket): net.Socket => {
    open.push(s);
    return s;
  };

  it('races accepting, refusing and stalled addresses: the accepting one wins and is cached', async () => {
    await lab.accept(ACCEPT);
    await lab.stall(STALL);
    // The winner is listed last, so order alone cannot make it win.
    const resolver = new TableResolver({ 'origin.test': [REFUSE, STALL, ACCEPT] });
    const rec = recordingDial();
    const c = new SmartConnector({ clock, resolver, dial: rec.dial }, { allowPrivate: true });

    const sock = keep(await c.connect('origin.test', lab.port));
    expect(sock.remoteAddress).toBe(ACCEPT);
    expect(sock.remotePort).toBe(lab.port);
    // All three were dialled at once, from one resolution.
    expect(rec.calls.map((t) => t.address).sort()).toEqual([ACCEPT, REFUSE, STALL].sort());
    expect(resolver.count('origin.test')).toBe(1);
    // The stalled handshake never completed; it was aborted when the winner connected.
    await until(() => rec.outcomes.get(STALL) !== 'pending');
    expect(rec.outcomes.get(STALL)).toBe('aborted');
    await until(() => rec.outcomes.get(REFUSE) !== 'pending');
    expect(['ECONNREFUSED', 'aborted']).toContain(rec.outcomes.get(REFUSE));
    expect(lab.accepted.get(ACCEPT)).toBe(1);

    expect(c.cacheSnapshot()).toEqual([
      { key: `origin.test:${lab.port}`, address: ACCEPT, family: 4, connectMs: 0, ageMs: 0 },
    ]);
  });

  it('a cached address is tried alone, without resolving again', async () => {
    await lab.accept(ACCEPT);
    await lab.stall(STALL);
    const resolver = new TableResolver({ 'origin.test': [STALL, ACCEPT] });
    const rec = recordingDial();
    const c = new SmartConnector({ clock, resolver, dial: rec.dial }, { allowPrivate: true });
    keep(await c.connect('origin.test', lab.port));
    await until(() => rec.outcomes.get(STALL) !== 'pending');
    rec.calls.length = 0;

    const again = keep(await c.connect('ORIGIN.test.', lab.port)); // same key after normalising
    expect(again.remoteAddress).toBe(ACCEPT);
    expect(rec.calls.map((t) => t.address)).toEqual([ACCEPT]);
    expect(resolver.count('origin.test')).toBe(1);
    expect(lab.accepted.get(ACCEPT)).toBe(2);
    expect(c.stats()).toMatchObject({
      connects: 2,
      cacheHits: 1,
      cacheWins: 1,
      races: 1,
      dials: 3,
    });
  });

  it('a cached address that stops answering gets a full race after twice its connect time', async () => {
    await lab.accept(ACCEPT);
    const resolver = new TableResolver({ 'origin.test': [ACCEPT] });
    // First connection: the dial lets 40 ms of clock time pass, so 40 ms is recorded.
    let slow = 40;
    const timed: Dial = async (t, signal) => {
      if (slow > 0) await clock.advance(slow);
      return netDial(t, signal);
    };
    const rec = recordingDial(timed);
    const c = new SmartConnector(
      { clock, resolver, dial: rec.dial },
      { allowPrivate: true, floorMs: 10 },
    );
    keep(await c.connect('origin.test', lab.port));
    expect(c.cacheSnapshot()[0]).toMatchObject({ address: ACCEPT, connectMs: 40 });
    slow = 0;

    // The cached address stops answering (its accept queue is full: SYNs dropped); the name now
    // also has a second, working address.
    await lab.unaccept(ACCEPT);
    await lab.stall(ACCEPT);
    await lab.accept(ACCEPT2);
    resolver.table['origin.test'] = [ACCEPT, ACCEPT2];
    rec.calls.length = 0;

    let result: net.Socket | undefined;
    const p = c.connect('origin.test', lab.port).then((s) => (result = keep(s)));
    await until(() => rec.calls.length === 1);
    // Patience is 2 × 40 ms = 80 ms: at 79 ms the cached address is still alone.
    await clock.advance(79);
    expect(rec.calls.map((t) => t.address)).toEqual([ACCEPT]);
    expect(resolver.count('origin.test')).toBe(1);
    expect(result).toBeUndefined();
    await clock.advance(1);
    await p;
    expect(resolver.count('origin.test')).toBe(2);
    // The race re-resolved and dialled only the new address (the cached one was still pending).
    expect(rec.calls.map((t) => t.address)).toEqual([ACCEPT, ACCEPT2]);
    expect(result!.remoteAddress).toBe(ACCEPT2);
    await until(() => rec.outcomes.get(ACCEPT) !== 'pending');
    expect(rec.outcomes.get(ACCEPT)).toBe('aborted');
    expect(c.cacheSnapshot()).toEqual([
      { key: `origin.test:${lab.port}`, address: ACCEPT2, family: 4, connectMs: 0, ageMs: 0 },
    ]);
    expect(c.stats()).toMatchObject({ cacheHits: 1, cacheWins: 0, races: 2, slowCacheRaces: 1 });
  });

  it('uses the floor when the recorded connect time is tiny', async () => {
    await lab.accept(ACCEPT);
    const resolver = new TableResolver({ 'origin.test': [ACCEPT] });
    const rec = recordingDial();
    const c = new SmartConnector(
      { clock, resolver, dial: rec.dial },
      { allowPrivate: true, floorMs: 250 },
    );
    keep(await c.connect('origin.test', lab.port)); // connectMs 0 on the manual clock
    await lab.unaccept(ACCEPT);
    await lab.stall(ACCEPT);
    await lab.accept(ACCEPT2);
    resolver.table['origin.test'] = [ACCEPT2];
    const p = c.connect('origin.test', lab.port);
    await until(() => rec.calls.length === 2);
    await clock.advance(249);
    expect(resolver.count('origin.test')).toBe(1);
    await clock.advance(1);
    const s = keep(await p);
    expect(s.remoteAddress).toBe(ACCEPT2);
  });

  it('a cached address that refuses is evicted and a race starts at once', async () => {
    await lab.accept(ACCEPT);
    const resolver = new TableResolver({ 'origin.test': [ACCEPT] });
    const rec = recordingDial();
    const c = new SmartConnector({ clock, resolver, dial: rec.dial }, { allowPrivate: true });
    keep(await c.connect('origin.test', lab.port));
    await lab.unaccept(ACCEPT); // now refuses
    await lab.accept(ACCEPT2);
    resolver.table['origin.test'] = [ACCEPT, ACCEPT2];
    rec.calls.length = 0;

    const s = keep(await c.connect('origin.test', lab.port)); // no clock advance needed
    expect(s.remoteAddress).toBe(ACCEPT2);
    expect(rec.outcomes.get(ACCEPT)).toBe('ECONNREFUSED');
    // The refused address was not dialled a second time by the race.
    expect(rec.calls.map((t) => t.address)).toEqual([ACCEPT, ACCEPT2]);
    expect(c.cacheSnapshot().map((e) => e.address)).toEqual([ACCEPT2]);
    expect(c.stats()).toMatchObject({ cacheHits: 1, evictions: 1, races: 2, slowCacheRaces: 0 });
  });

  it('a cached address that fails with no other address evicts its entry and reports every failure', async () => {
    await lab.accept(ACCEPT);
    const resolver = new TableResolver({ 'origin.test': [ACCEPT] });
    const c = new SmartConnector({ clock, resolver }, { allowPrivate: true });
    keep(await c.connect('origin.test', lab.port));
    await lab.unaccept(ACCEPT);
    await expect(c.connect('origin.test', lab.port)).rejects.toMatchObject({
      code: 'CORAL_ORIGIN_UNREACHABLE',
      status: 502,
    });
    expect(c.cacheSnapshot()).toEqual([]);
  });

  it('fails with ECONNREFUSED causes under CORAL_ORIGIN_UNREACHABLE when every address refuses', async () => {
    const resolver = new TableResolver({ 'origin.test': [REFUSE, '127.0.0.6'] });
    const c = new SmartConnector({ clock, resolver }, { allowPrivate: true });
    const err = await c.connect('origin.test', lab.port).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'CORAL_ORIGIN_UNREACHABLE', status: 502 });
    const causes = (err as { causes: Array<{ address: string; error: { code: string } }> }).causes;
    expect(causes.map((x) => [x.address, x.error.code]).sort()).toEqual([
      [REFUSE, 'ECONNREFUSED'],
      ['127.0.0.6', 'ECONNREFUSED'],
    ]);
    expect(c.cacheSnapshot()).toEqual([]);
  });

  it('bounded variant: ETIMEDOUT when nothing connects in time, and the stalled attempt is destroyed', async () => {
    await lab.stall(STALL);
    const resolver = new TableResolver({ 'origin.test': [STALL, REFUSE] });
    const rec = recordingDial();
    const c = new SmartConnector(
      { clock, resolver, dial: rec.dial },
      { allowPrivate: true, timeoutMs: 1_000 },
    );
    let error: unknown;
    const p = c.connect('origin.test', lab.port).catch((e: unknown) => (error = e));
    await until(() => rec.outcomes.get(REFUSE) === 'ECONNREFUSED');
    await clock.advance(999);
    expect(error).toBeUndefined();
    expect(rec.outcomes.get(STALL)).toBe('pending');
    await clock.advance(1);
    await p;
    expect(error).toMatchObject({ code: 'ETIMEDOUT', status: 504, timeoutMs: 1_000 });
    await until(() => rec.outcomes.get(STALL) !== 'pending');
    expect(rec.outcomes.get(STALL)).toBe('aborted');
  });

  it('per-call timeoutMs overrides the unbounded default; an AbortSignal aborts with ABORT_ERR', async () => {
    await lab.stall(STALL);
    const resolver = new TableResolver({ 'origin.test': [STALL] });
    const rec = recordingDial();
    const c = new SmartConnector({ clock, resolver, dial: rec.dial }, { allowPrivate: true });
    const p1 = c.connect('origin.test', lab.port, { timeoutMs: 50 });
    const settled1 = expect(p1).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    await until(() => rec.calls.length === 1);
    await clock.advance(50);
    await settled1;

    const ac = new AbortController();
    const p2 = c.connect('origin.test', lab.port, { signal: ac.signal });
    const settled2 = expect(p2).rejects.toMatchObject({ code: 'ABORT_ERR', name: 'AbortError' });
    await until(() => rec.calls.length === 2);
    await clock.advance(DEFAULT_CACHE_TTL_MS); // unbounded: time alone does not end it
    ac.abort();
    await settled2;
    await until(() => rec.outcomes.get(STALL) === 'aborted');
    // An already-aborted signal fails before anything happens.
    await expect(c.connect('origin.test', lab.port, { signal: ac.signal })).rejects.toMatchObject({
      code: 'ABORT_ERR',
    });
    expect(rec.calls.length).toBe(2);
  });

  it('cache holds 16 entries, displacing the oldest first', async () => {
    await lab.accept(ACCEPT);
    expect(DEFAULT_CACHE_SIZE).toBe(16);
    const names = Array.from({ length: 17 }, (_, i) => `o${i}.test`);
    const resolver = new TableResolver(Object.fromEntries(names.map((n) => [n, [ACCEPT]])));
    const c = new SmartConnector({ clock, resolver }, { allowPrivate: true });
    for (const n of names.slice(0, 16)) {
      keep(await c.connect(n, lab.port));
      await clock.advance(1_000);
    }
    expect(c.cacheSnapshot().map((e) => e.key)).toEqual(
      names.slice(0, 16).map((n) => `${n}:${lab.port}`),
    );
    expect(c.cacheSnapshot()[0]!.ageMs).toBe(16_000);
    keep(await c.connect(names[16]!, lab.port));
    const keys = c.cacheSnapshot().map((e) => e.key);
    expect(keys).toHaveLength(16);
    expect(keys[0]).toBe(`o1.test:${lab.port}`);
    expect(keys).not.toContain(`o0.test:${lab.port}`);
    // o0 was displaced: connecting again resolves it again; o1 is still cached.
    keep(await c.connect('o1.test', lab.port));
    expect(resolver.count('o1.test')).toBe(1);
    keep(await c.connect('o0.test', lab.port));
    expect(resolver.count('o0.test')).toBe(2);
  });

  it('cache entries age out after 600 s (a cache hit does not renew them); size 0 disables it', async () => {
    await lab.accept(ACCEPT);
    expect(DEFAULT_CACHE_TTL_MS).toBe(600_000);
    const resolver = new TableResolver({ 'origin.test': [ACCEPT] });
    const c = new SmartConnector({ clock, resolver }, { allowPrivate: true });
    keep(await c.connect('origin.test', lab.port));
    await clock.advance(599_999);
    keep(await c.connect('origin.test', lab.port));
    expect(resolver.count('origin.test')).toBe(1);
    expect(c.cacheSnapshot()[0]!.ageMs).toBe(599_999);
    await clock.advance(1);
    expect(c.cacheSnapshot()).toEqual([]);
    keep(await c.connect('origin.test', lab.port));
    expect(resolver.count('origin.test')).toBe(2);
    expect(c.cacheSnapshot()[0]!.ageMs).toBe(0);

    const off = new SmartConnector({ clock, resolver }, { allowPrivate: true, cacheSize: 0 });
    keep(await off.connect('origin.test', lab.port));
    keep(await off.connect('origin.test', lab.port));
    expect(resolver.count('origin.test')).toBe(4);
    expect(off.cacheSnapshot()).toEqual([]);
  });

  it('cacheSize and cacheTtlMs are configurable', async () => {
    await lab.accept(ACCEPT);
    const resolver = new TableResolver({
      'a.test': [ACCEPT],
      'b.test': [ACCEPT],
      'c.test': [ACCEPT],
    });
    const c = new SmartConnector(
      { clock, resolver },
      { allowPrivate: true, cacheSize: 2, cacheTtlMs: 10 },
    );
    for (const n of ['a.test', 'b.test', 'c.test']) keep(await c.connect(n, lab.port));
    expect(c.cacheSnapshot().map((e) => e.key)).toEqual([
      `b.test:${lab.port}`,
      `c.test:${lab.port}`,
    ]);
    await clock.advance(10);
    expect(c.cacheSnapshot()).toEqual([]);
  });

  it('remembers failures for negativeTtlMs when asked to', async () => {
    const resolver = new TableResolver({ 'origin.test': [REFUSE] });
    const rec = recordingDial();
    const c = new SmartConnector(
      { clock, resolver, dial: rec.dial },
      { allowPrivate: true, negativeTtlMs: 5_000 },
    );
    await expect(c.connect('origin.test', lab.port)).rejects.toMatchObject({
      code: 'CORAL_ORIGIN_UNREACHABLE',
    });
    const again = await c.connect('origin.test', lab.port).catch((e: unknown) => e);
    expect(again).toMatchObject({
      code: 'CORAL_ORIGIN_NEGATIVE_CACHED',
      status: 502,
      retryAfterMs: 5_000,
    });
    expect((again as Error).cause).toMatchObject({ code: 'CORAL_ORIGIN_UNREACHABLE' });
    expect(rec.calls).toHaveLength(1);
    await clock.advance(5_000);
    await lab.accept(REFUSE); // the origin came back
    keep(await c.connect('origin.test', lab.port));
    expect(rec.calls).toHaveLength(2);
  });
});
