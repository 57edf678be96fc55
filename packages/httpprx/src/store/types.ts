/**
 * The cache store: complete response bodies plus their metadata. Two implementations share one
 * contract suite (test/store/contract.ts): `MemoryStore` (everything in memory) and `DiskStore`
 * (bodies in files, metadata in LevelDB, a compact directory in memory).
 *
 * A body is written through a `BodyWriter`, which can be read back while it is written (the
 * read-while-write path of in-flight transfers), then committed (made visible with its metadata,
 * atomically) or released unstored.
 */
import type { Readable } from 'node:stream';
import type { AgeFacts, HeaderRecord } from '../cache/policy.js';

export interface StoredMeta {
  /** Variant key: the urlKey and the secondary (Vary) key, 28 bytes as hex. */
  key: string;
  /** Hex urlKey of the normalized origin URL (20 bytes). */
  primary: string;
  /** Normalized origin URL. */
  url: string;
  status: number;
  /** Stored response headers (lowercase names; hop-by-hop, Set-Cookie, Age removed). */
  headers: HeaderRecord;
  /** Request fields named by Vary, and the values the stored response was selected with (null: absent). */
  vary: string[];
  varyValues: (string | null)[];
  /** Timing facts for the RFC 9111 age calculation. */
  facts: AgeFacts;
  /** Body size in bytes and lowercase hex SHA-256. */
  size: number;
  sha256: string;
  /** Clock time it was stored (ms). */
  storedAt: number;
  /** Clock time its freshness ends (ms), as computed when stored or last refreshed. */
  freshUntil: number;
  /** Body file number (disk store). */
  file?: number;
}

export interface BodyWriter {
  /** Append a chunk; resolves once it can be read back (`read`). Errors surface at `commit`. */
  write(chunk: Buffer): Promise<void>;
  /** Bytes written so far. */
  readonly written: number;
  /**
   * `length` bytes (fewer at the end) at `position`, which must be below `written`. With `into`
   * (at least `length` bytes), a store that reads from a file reads into it and returns a view of
   * it, so that a reader can reuse one buffer; others may ignore it.
   */
  read(position: number, length: number, into?: Buffer): Promise<Buffer>;
  /**
   * Make the body and its metadata visible atomically, replacing any entry with the same key.
   * Rejects (and stores nothing) when the written byte count differs from `meta.size`. The
   * writer stays readable until `release`.
   */
  commit(meta: StoredMeta): Promise<StoredMeta>;
  /** Drop everything written so far; later reads fail. */
  abort(): Promise<void>;
  /** Done reading: free the writer's resources (an uncommitted body is discarded). */
  release(): Promise<void>;
}

/** What the cache listing shows of a stored variant (no headers decoded). */
export interface StoredListing {
  key: string;
  primary: string;
  url: string;
  status: number;
  size: number;
  sha256: string;
  storedAt: number;
  freshUntil: number;
  contentType: string | undefined;
  vary: string[];
}

/** What a re-announcement needs of a stored variant, without reading its metadata. */
export interface StoredSummary {
  primary: Uint8Array;
  size: number;
  sha256: string;
  freshUntil: number;
}

export interface CacheStore {
  open(): Promise<void>;
  close(): Promise<void>;
  /** Bytes of bodies currently stored. */
  readonly usedBytes: number;
  /** Stored variants. */
  readonly count: number;
  /** Is any variant of this urlKey (hex) stored? Synchronous, from memory. */
  has(primary: string): boolean;
  /** Every stored variant of a urlKey (hex). */
  variants(primary: string): Promise<StoredMeta[]>;
  /** The variant keys (hex) of a urlKey, from memory. */
  variantKeys(primary: string): string[];
  get(key: string): Promise<StoredMeta | undefined>;
  /** Every stored variant's metadata (read as it goes). */
  list(): AsyncIterable<StoredMeta>;
  /** Every stored variant's listing (cheaper than `list`: headers are not decoded). */
  listing(): AsyncIterable<StoredListing>;
  /** One summary per stored variant (the disk store reads them from its records). */
  summaries(): AsyncIterable<StoredSummary>;
  /** Mark as recently used (LRU). */
  touch(key: string): void;
  /** The whole body (rejects when it cannot be read, or fails its first check after start-up). */
  readBody(meta: StoredMeta): Promise<Buffer>;
  /**
   * Is the stored body intact? Bodies written since start-up are; one kept from before is hashed
   * once against its SHA-256 (after a power loss a file can hold other bytes than were written),
   * and dropped when it does not match. Call before `readStream` of a body not read whole.
   */
  verify(meta: StoredMeta): Promise<boolean>;
  /** A stream of bytes `start..end` (inclusive) of the body. */
  readStream(meta: StoredMeta, start: number, end: number): Readable;
  begin(): BodyWriter;
  /** Replace the metadata of a stored entry (headers refreshed by a 304). No-op if absent or replaced. */
  update(meta: StoredMeta): Promise<boolean>;
  delete(key: string): Promise<boolean>;
  /** Remove every variant whose metadata satisfies `match` (purge by prefix, tag, ...). */
  deleteWhere(match: (meta: StoredMeta) => boolean): Promise<StoredMeta[]>;
}

export type RemovalReason = 'evict' | 'delete' | 'replace';

export interface StoreComponents {
  /** Called for each variant that leaves the store: evicted, deleted, or replaced by a commit. */
  onRemove?: (key: string, primary: string, reason: RemovalReason) => void;
}

export interface StoreOptions {
  budgetBytes: number;
}
