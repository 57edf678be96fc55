/**
 * A production node's LevelDB, opened with a small write buffer and block cache: the node writes
 * its values through and reads them back only at a restart, so LevelDB's defaults (4 MiB and
 * 8 MiB) would only hold memory.
 */
import { DB_CACHE_BYTES, DB_WRITE_BUFFER_BYTES } from '../constants.js';
import type { KeyValueDb } from './persistence.js';

export interface LevelDbOptions {
  /** LevelDB memtable size. Default DB_WRITE_BUFFER_BYTES (1 MiB). */
  dbWriteBufferBytes?: number;
  /** LevelDB block cache. Default DB_CACHE_BYTES (1 MiB). */
  dbCacheBytes?: number;
}

export async function openLevelDb(dir: string, options: LevelDbOptions = {}): Promise<KeyValueDb> {
  const { Level } = await import('level');
  const level = new Level<string, string>(dir, {
    valueEncoding: 'utf8',
    writeBufferSize: options.dbWriteBufferBytes ?? DB_WRITE_BUFFER_BYTES,
    cacheSize: options.dbCacheBytes ?? DB_CACHE_BYTES,
  });
  await level.open();
  return level;
}
