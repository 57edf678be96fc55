/**
 * Opening the node's LevelDB databases — the DSHT's (`dataDir/dsht`), the proxy's cache
 * (`dataDir/cache`) and the purge log (`dataDir/purge`) — with the two failures operators meet
 * at start:
 *
 * - **Another process holds it.** LevelDB lets one process open a database (its `LOCK` file). The
 *   node fails with {@link DataDirLockedError}, naming the directory, the lock file and, where the
 *   kernel tells (Linux `/proc/locks`), the pid of the holder.
 * - **It is corrupt.** Both databases hold soft state: the cache holds copies of origin objects,
 *   and the DSHT holds contacts (learnt again from the bootstrap list and from peers) and values
 *   that expire and are re-put by their publishers; a purge log started empty makes the node treat
 *   what it stored before the fleet's logs reach back as stale (purge/fleet-purge.ts). So instead of failing every start (a crash loop
 *   under a supervisor), the directory is moved aside to `<dir>.corrupt-<time>`, the node starts
 *   with an empty one, logs an error and counts it (`coral_store_corruptions_total{store}`). Only
 *   the latest moved-aside copy of each store is kept, for inspection.
 */
import { readFile, readdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Clock } from '@coral/runtime';
import type { Logger } from 'pino';
import { DataDirLockedError } from '../errors.js';
import type { StorageMetricsSink } from '../metrics/metrics.js';

export type StoreName = 'dsht' | 'cache' | 'purge';
export type DbFailure = 'locked' | 'corrupt' | 'other';

/**
 * What a LevelDB (classic-level) error means, looking through its `cause` chain: `locked` (held by
 * another process or handle), `corrupt` (a damaged file, a value that does not decode, or a file
 * the database names is missing) or `other` (permissions, disk full, ...: not for us to repair).
 */
export function classifyDbError(err: unknown): DbFailure {
  for (const e of causes(err)) {
    if (e.code === 'LEVEL_LOCKED') return 'locked';
    if (e.code === 'LEVEL_CORRUPTION' || e.code === 'LEVEL_DECODE_ERROR') return 'corrupt';
    if (e.code === 'LEVEL_IO_ERROR' && /No such file or directory/.test(String(e.message))) {
      return 'corrupt';
    }
  }
  return 'other';
}

/**
 * The lock file LevelDB names in its error (`IO error: lock /data/cache/meta/LOCK: Resource
 * temporarily unavailable`): the database may sit below the store's directory.
 */
function lockFileOf(err: unknown): string | undefined {
  for (const e of causes(err)) {
    const m = /\block (\/\S*LOCK):/.exec(String(e.message));
    if (m) return m[1];
  }
  return undefined;
}

/** An error and its `cause`s, outermost first (bounded). */
function* causes(err: unknown): Generator<{ code?: unknown; message?: unknown }> {
  let e = err;
  for (let depth = 0; typeof e === 'object' && e !== null && depth < 8; depth++) {
    yield e;
    e = (e as { cause?: unknown }).cause;
  }
}

/**
 * The pid holding a POSIX lock on `lockFile`, from the kernel's lock table (Linux `/proc/locks`:
 * `1: POSIX ADVISORY WRITE <pid> <major>:<minor>:<inode> 0 EOF`). Undefined when it cannot tell
 * (another OS, another pid namespace, no entry).
 */
export async function lockHolderPid(
  lockFile: string,
  procLocks = '/proc/locks',
): Promise<number | undefined> {
  try {
    const [st, table] = await Promise.all([
      stat(lockFile, { bigint: true }),
      readFile(procLocks, 'utf8'),
    ]);
    for (const line of table.split('\n')) {
      const f = line.trim().split(/\s+/);
      // "1:" "POSIX" "ADVISORY" "WRITE" pid "maj:min:inode" start end  ("->" marks a waiter)
      if (f[1] === '->') continue;
      const [pid, dev] = [Number(f[4]), f[5]?.split(':')];
      if (!dev || dev.length !== 3 || !Number.isInteger(pid) || pid <= 0) continue;
      if (!/^[0-9a-f]+$/i.test(dev[0]!) || !/^[0-9a-f]+$/i.test(dev[1]!)) continue;
      if (!/^\d+$/.test(dev[2]!) || BigInt(dev[2]!) !== st.ino) continue;
      const [major, minor] = [BigInt(`0x${dev[0]}`), BigInt(`0x${dev[1]}`)];
      if (major === devMajor(st.dev) && minor === devMinor(st.dev)) return pid;
    }
  } catch {
    // no lock table (not Linux) or no lock file: the path alone will do
  }
  return undefined;
}

/** glibc's major() and minor() of a dev_t. */
function devMajor(dev: bigint): bigint {
  return ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & 0xfffff000n);
}
function devMinor(dev: bigint): bigint {
  return (dev & 0xffn) | ((dev >> 12n) & 0xffffff00n);
}

export interface OpenStoreContext {
  store: StoreName;
  /** The database directory (`dataDir/dsht` or `dataDir/cache`). */
  dir: string;
  /** The node's data directory, named in a lock error. */
  dataDir: string;
  logger: Logger;
  metrics: StorageMetricsSink;
  clock: Clock;
}

/**
 * Run `open` (which opens the database in `ctx.dir` and must release it when it fails). A lock
 * held elsewhere becomes {@link DataDirLockedError}; a corrupt database is moved aside, counted and
 * logged, and `open` runs once more on an empty directory. Any other error is rethrown.
 */
export async function openStore<T>(ctx: OpenStoreContext, open: () => Promise<T>): Promise<T> {
  try {
    return await open();
  } catch (err) {
    const failure = classifyDbError(err);
    if (failure === 'locked') {
      const lockFile = lockFileOf(err) ?? join(ctx.dir, 'LOCK');
      throw new DataDirLockedError(ctx.dataDir, lockFile, await lockHolderPid(lockFile), err);
    }
    if (failure === 'other') throw err;
    const movedTo = await moveAside(ctx.dir, ctx.clock.now());
    ctx.metrics.corruptStore(ctx.store);
    ctx.logger.error(
      { err, store: ctx.store, path: ctx.dir, movedTo },
      `${ctx.store} database is corrupt: moved aside, starting with an empty one`,
    );
    return open();
  }
}

/** Rename `dir` to `dir.corrupt-<UTC time>`, deleting older moved-aside copies of it. */
async function moveAside(dir: string, now: number): Promise<string> {
  const parent = dirname(dir);
  const prefix = `${basename(dir)}.corrupt-`;
  for (const old of await readdir(parent)) {
    if (old.startsWith(prefix)) await rm(join(parent, old), { recursive: true, force: true });
  }
  const target = join(parent, prefix + new Date(now).toISOString().replace(/[:.]/g, '-'));
  await rename(dir, target);
  return target;
}
