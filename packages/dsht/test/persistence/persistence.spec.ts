import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Level } from 'level';
import { ManualClock } from '@coral/testkit';
import { keyFromName, toHex } from '../../src/id/id.js';
import { LEGACY_SOURCE, Persistence, type KeyValueDb } from '../../src/persistence/persistence.js';
import { ValueStore, type StoredValue } from '../../src/store/value-store.js';
import { restoreState, writeThrough } from '../../src/persistence/node-state.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function openDb(dir: string): Promise<KeyValueDb> {
  const db = new Level<string, string>(dir, { valueEncoding: 'utf8' });
  await db.open();
  return db;
}

describe('persisted values', () => {
  it('keep their source and copy marks; records written before sources load as legacy', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsht-persist-src-'));
    dirs.push(dir);
    const db = await openDb(dir);
    const p = new Persistence({ db });
    const key = keyFromName('k');
    const base = { level: 0, key, value: new Uint8Array([1]), expiresAt: 9e12, storedAt: 1 };
    const own = { ...base, publisher: keyFromName('me') };
    const theirs = { ...base, publisher: keyFromName('them'), source: '10.0.0.7' };
    const copy = {
      ...base,
      level: 1,
      publisher: keyFromName('them'),
      copy: true,
      storedBy: keyFromName('copier'),
      source: '10.0.0.8',
    };
    for (const v of [own, theirs, copy]) p.putValue(v);
    // A record of the earlier layout: no `src` field.
    await db.batch([
      {
        type: 'put',
        key: `v!0!${toHex(key)}!${toHex(keyFromName('old'))}`,
        value: JSON.stringify({ value: 'AQ==', expiresAt: 9e12, storedAt: 1 }),
      },
    ]);
    await p.flush();
    const back: StoredValue[] = [];
    for await (const v of new Persistence({ db }).values()) back.push(v);
    const by = (pub: string, lvl = 0) =>
      back.find((v) => toHex(v.publisher) === toHex(keyFromName(pub)) && v.level === lvl);
    expect(by('me')?.source).toBeUndefined();
    expect(by('them')).toMatchObject({ source: '10.0.0.7' });
    expect(by('them')?.copy).toBeUndefined();
    expect(by('them', 1)).toMatchObject({ copy: true, source: '10.0.0.8' });
    expect(toHex(by('them', 1)!.storedBy!)).toBe(toHex(keyFromName('copier')));
    expect(by('old')).toMatchObject({ source: LEGACY_SOURCE });
    await db.close();
  });

  it('skip damaged records, count them, and load the rest', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsht-persist-damaged-'));
    dirs.push(dir);
    const db = await openDb(dir);
    const p = new Persistence({ db });
    const good = {
      level: 0,
      key: keyFromName('k'),
      value: new Uint8Array([7]),
      expiresAt: 9e12,
      storedAt: 1,
      publisher: keyFromName('me'),
    };
    p.putValue(good);
    await p.flush();
    await db.batch([
      { type: 'put', key: `v!0!${toHex(keyFromName('k'))}!x`, value: '{not json' },
      { type: 'put', key: 'c!0!zz', value: 'null' },
    ]);
    const back = new Persistence({ db });
    const values: StoredValue[] = [];
    for await (const v of back.values()) values.push(v);
    await back.loadContacts();
    expect(values.map((v) => [...v.value])).toEqual([[7]]);
    expect(back.damaged).toEqual({ contacts: 1, values: 1 });
    await db.close();
  });

  it('a data dir of the earlier JSON layout loads, is rewritten in the binary one, and a delete after that lasts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsht-persist-legacy-'));
    dirs.push(dir);
    const clock = new ManualClock(1_000_000);
    let db = await openDb(dir);
    // 1,200 records as the previous version wrote them (more than one rewrite batch), a copy,
    // an own value, an expired one and a damaged one.
    const ops: Array<{ type: 'put'; key: string; value: string }> = [];
    const rec = (i: number, o: object = {}) =>
      JSON.stringify({
        value: Buffer.from(`value-${i}`).toString('base64'),
        expiresAt: 5_000_000,
        storedAt: 900_000,
        src: `10.0.${i >> 8}.${i & 255}`,
        ...o,
      });
    const entry = (i: number) => toHex(keyFromName(`pub-${i % 3}`));
    for (let i = 0; i < 1200; i++)
      ops.push({
        type: 'put',
        key: `v!0!${toHex(keyFromName(`k${i}`))}!${entry(i)}`,
        value: rec(i),
      });
    const copyKey = `v!1!${toHex(keyFromName('k0'))}!c${toHex(keyFromName('copier'))}${entry(0)}`;
    ops.push({ type: 'put', key: copyKey, value: rec(0, { src: '10.9.9.9' }) });
    ops.push({
      type: 'put',
      key: `v!0!${toHex(keyFromName('own'))}!${entry(0)}`,
      value: rec(7, { src: null }),
    });
    ops.push({
      type: 'put',
      key: `v!0!${toHex(keyFromName('gone'))}!${entry(0)}`,
      value: rec(8, { expiresAt: 10 }),
    });
    ops.push({ type: 'put', key: `v!0!${toHex(keyFromName('bad'))}!${entry(0)}`, value: '{' });
    await db.batch(ops);

    const quiet = { warn: () => undefined } as never;
    let p = new Persistence({ db });
    // Written through from the start: restoring writes nothing back.
    let store = new ValueStore({ clock, onChange: writeThrough(p, quiet) });
    await restoreState(p, store);
    expect(store.size).toBe(1202);
    expect(p.migrated).toBe(1203);
    expect(p.damaged.values).toBe(1);
    const text = (v: StoredValue | undefined) => (v ? Buffer.from(v.value).toString() : undefined);
    expect(text(store.get(0, keyFromName('k1199'))[0])).toBe('value-1199');
    expect(store.get(0, keyFromName('k5'))[0]).toMatchObject({
      source: '10.0.0.5',
      storedAt: 900_000,
    });
    expect(store.get(1, keyFromName('k0'))[0]).toMatchObject({ copy: true, source: '10.9.9.9' });
    expect(store.get(0, keyFromName('own'))[0]!.source).toBeUndefined();
    // Only the damaged record is left in the earlier layout.
    const legacy: string[] = [];
    for await (const [k] of db.iterator({ gte: 'v!', lt: 'v~' })) legacy.push(k);
    expect(legacy).toEqual([`v!0!${toHex(keyFromName('bad'))}!${entry(0)}`]);

    // The node runs on: a value replaced, one deleted by expiry, written through.
    store.store(
      0,
      keyFromName('k1'),
      keyFromName('pub-1'),
      new TextEncoder().encode('newer'),
      60_000,
    );
    await p.close();

    db = await openDb(dir);
    p = new Persistence({ db });
    store = new ValueStore({ clock, onChange: writeThrough(p, quiet) });
    await restoreState(p, store);
    expect(p.migrated).toBe(0);
    expect(store.size).toBe(1202);
    expect(store.get(0, keyFromName('k1')).map(text)).toEqual(['newer']);
    expect(store.get(1, keyFromName('k0'))).toHaveLength(1);
    // Past the records' expiry: a sweep deletes them, and they stay deleted after a restart.
    await clock.advance(4_500_000);
    expect(store.sweep()).toBe(1201);
    await p.close();
    db = await openDb(dir);
    p = new Persistence({ db });
    const back: StoredValue[] = [];
    for await (const v of p.values()) back.push(v);
    expect(back.map(text)).toEqual(['newer']);
    await db.close();
  });
});
