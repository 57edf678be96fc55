/**
 * The cache store: complete response bodies plus their metadata. Two implementations share one
 * contract suite (test/store/contract.ts): `MemoryStore` and `DiskStore` (files + LevelDB).
 * Metadata is held in memory by both, so lookups on the hit path are synchronous.
 */
import type { Readable } from 'node:stream';
import type { AgeFacts, HeaderRecord } from '../cache/policy.js';

export interface StoredMeta {
  /** Variant key: `primary` plus the secondary (Vary) key. */
  key: string;
  /** Hex urlKey of the normalized origin URL. */
  primary: string;
  /** Normalized origin URL. */
  url: string;
  status: number;
  /** Stored response headers (lowercase names; hop-by-hop, Set-Cookie, Age removed). */
  headers: HeaderRecord;
  /** Request fields named by Vary, and the values the stored response was selected with. */
  vary: string[];
  varyValues: (string | null)[];
  /** Timing facts for the RFC 9111 age calculation. */
  facts: AgeFacts;
  /** Body size in bytes and lowercase hex SHA-256. */
  size: number;
  sha256: string;
  /** Clock time it was stored (ms). */
  storedAt: number;
  /** Body file name relative to the store's directory (disk store only). */
  file?: string;
}

export interface BodyWriter {
  /** Append a chunk (buffered internally; errors surface at `commit`). */
  write(chunk: Buffer): void;
  /**
   * Make the body and its metadata visible atomically, replacing any entry with the same key.
   * Rejects (and leaves nothing behind) when the written byte count differs from `meta.size`.
   */
  commit(meta: StoredMeta): Promise<StoredMeta>;
  /** Drop everything written so far. */
  abort(): Promise<void>;
}

export interface CacheStore {
  open(): Promise<void>;
  close(): Promise<void>;
  get(key: string): StoredMeta | undefined;
  /** Every stored variant of a primary key. */
  variants(primary: string): StoredMeta[];
  list(): StoredMeta[];
  /** Bytes of bodies currently stored. */
  readonly usedBytes: number;
  /** Mark as recently used (LRU). */
  touch(key: string): void;
  readBody(meta: StoredMeta): Promise<Buffer>;
  /** A stream of bytes `start..end` (inclusive) of the body. */
  readStream(meta: StoredMeta, start: number, end: number): Readable;
  begin(): BodyWriter;
  /** Replace the metadata of a stored entry (e.g. headers refreshed by a 304). No-op if absent. */
  update(meta: StoredMeta): Promise<void>;
  delete(key: string): Promise<boolean>;
}

export interface StoreComponents {
  /** Called for each entry evicted to stay within the byte budget. */
  onEvict?: (meta: StoredMeta) => void;
}

export interface StoreOptions {
  budgetBytes: number;
}
