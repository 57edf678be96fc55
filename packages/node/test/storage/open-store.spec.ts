/**
 * How the node tells a database held by another process from a corrupt one, and finds the pid
 * holding a LevelDB lock in the kernel's lock table.
 */
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Level } from 'level';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { DataDirLockedError } from '../../src/errors.js';
import { createLogger } from '../../src/logging/logger.js';
import { classifyDbError, lockHolderPid, openStore } from '../../src/storage/open-store.js';
import { tmpDir } from '../helpers.js';

/** A classic-level open error: LEVEL_DATABASE_NOT_OPEN whose cause says why. */
const openError = (code: string, message: string) =>
  Object.assign(new Error('Database failed to open'), {
    code: 'LEVEL_DATABASE_NOT_OPEN',
    cause: Object.assign(new Error(message), { code }),
  });

describe('classifyDbError', () => {
  it('reads the cause chain of real and typical LevelDB errors', async () => {
    expect(
      classifyDbError(openError('LEVEL_LOCKED', 'lock x/LOCK: Resource temporarily unavailable')),
    ).toBe('locked');
    expect(
      classifyDbError(
        openError('LEVEL_CORRUPTION', 'Corruption: CURRENT file does not end with newline'),
      ),
    ).toBe('corrupt');
    expect(
      classifyDbError(
        openError('LEVEL_IO_ERROR', 'IO error: x/MANIFEST-000002: No such file or directory'),
      ),
    ).toBe('corrupt');
    expect(
      classifyDbError(openError('LEVEL_IO_ERROR', 'IO error: x/LOCK: Permission denied')),
    ).toBe('other');
    expect(classifyDbError(Object.assign(new Error('x'), { code: 'LEVEL_DECODE_ERROR' }))).toBe(
      'corrupt',
    );
    expect(classifyDbError(Object.assign(new Error('x'), { code: 'ENOSPC' }))).toBe('other');
    expect(classifyDbError(undefined)).toBe('other');

    // The real thing: a database whose CURRENT file is damaged, and one held by another handle.
    const dir = join(tmpDir('classify'), 'db');
    const db = new Level(dir);
    await db.open();
    const second = await new Level(dir).open().catch((e: unknown) => e);
    expect(classifyDbError(second)).toBe('locked');
    await db.close();
    writeFileSync(join(dir, 'CURRENT'), '');
    const damaged = await new Level(dir).open().catch((e: unknown) => e);
    expect(classifyDbError(damaged)).toBe('corrupt');
  });
});

describe('lockHolderPid', () => {
  it('finds the POSIX lock on the file by device and inode', async () => {
    const dir = tmpDir('locks');
    const lock = join(dir, 'LOCK');
    writeFileSync(lock, '');
    const st = statSync(lock, { bigint: true });
    const major = ((st.dev >> 8n) & 0xfffn) | ((st.dev >> 32n) & 0xfffff000n);
    const minor = (st.dev & 0xffn) | ((st.dev >> 12n) & 0xffffff00n);
    const dev = `${major.toString(16).padStart(2, '0')}:${minor.toString(16).padStart(2, '0')}`;
    const table = join(dir, 'locks');
    writeFileSync(
      table,
      [
        `1: FLOCK  ADVISORY  WRITE 111 ${dev}:${st.ino + 1n} 0 EOF`,
        `2: POSIX  ADVISORY  WRITE 4242 ${dev}:${st.ino} 0 EOF`,
        `2: -> POSIX  ADVISORY  WRITE 999 ${dev}:${st.ino} 0 EOF`,
        `3: OFDLCK ADVISORY  READ -1 00:06:3 0 EOF`,
        'garbage',
      ].join('\n'),
    );
    expect(await lockHolderPid(lock, table)).toBe(4242);
    writeFileSync(table, `1: POSIX  ADVISORY  WRITE 4242 ff:ff:${st.ino} 0 EOF\n`);
    expect(await lockHolderPid(lock, table)).toBeUndefined();
    expect(await lockHolderPid(lock, join(dir, 'no-such-table'))).toBeUndefined();
  });
});

describe('openStore', () => {
  const context = (dataDir: string, counted: string[]) => ({
    store: 'cache' as const,
    dir: join(dataDir, 'cache'),
    dataDir,
    logger: createLogger({ level: 'silent' }),
    metrics: { corruptStore: (s: string) => void counted.push(s) },
    clock: new ManualClock(Date.UTC(2026, 0, 2, 3, 4, 5)),
  });

  it('names the lock file LevelDB reports, below the store directory', async () => {
    const dataDir = tmpDir('open-locked');
    const lock = join(dataDir, 'cache', 'meta', 'LOCK');
    const err = await openStore(context(dataDir, []), async () => {
      throw openError('LEVEL_LOCKED', `IO error: lock ${lock}: Resource temporarily unavailable`);
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DataDirLockedError);
    expect(err).toMatchObject({ code: 'CORAL_ERR_DATA_DIR_LOCKED', dataDir, lockFile: lock });
  });

  it('moves a corrupt store aside once and opens an empty one; leaves other failures alone', async () => {
    const dataDir = tmpDir('open-corrupt');
    const counted: string[] = [];
    mkdirSync(join(dataDir, 'cache', 'meta'), { recursive: true });
    writeFileSync(join(dataDir, 'cache', 'meta', 'CURRENT'), '');
    let calls = 0;
    const opened = await openStore(context(dataDir, counted), async () => {
      calls++;
      if (existsSync(join(dataDir, 'cache', 'meta', 'CURRENT'))) {
        throw openError('LEVEL_CORRUPTION', 'Corruption: CURRENT file does not end with newline');
      }
      return 'opened';
    });
    expect(opened).toBe('opened');
    expect(calls).toBe(2);
    expect(counted).toEqual(['cache']);
    expect(readdirSync(dataDir)).toEqual(['cache.corrupt-2026-01-02T03-04-05-000Z']);

    const denied = openError('LEVEL_IO_ERROR', 'IO error: x/LOCK: Permission denied');
    await expect(
      openStore(context(dataDir, counted), async () => {
        throw denied;
      }),
    ).rejects.toBe(denied);
    expect(counted).toEqual(['cache']);
  });
});
