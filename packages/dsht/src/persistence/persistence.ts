/**
 * Contacts and stored values in the node's LevelDB, so a restarted node rejoins from the peers it
 * knew (no bootstrap address needed) and keeps answering for values whose TTL has not run out.
 *
 * Layout:
 *   `c!<level>!<idhex>` (utf8) → JSON { ip, port, httpPort?, dnsPort?, region?, lastSeen }
 *   `v` 0x01 <level> <key> <entry> → <expiresAt> <storedAt> <source> <value>, in bytes: see
 *     ./records.ts. An entry is the publisher, or copier and named publisher for a path-cached
 *     copy; the source is the host the value came from (quota accounting; none = this node).
 * Value records of the earlier layout (`v!<level>!<keyhex>!<entry>` → JSON with the value in
 * base64) are still read, and rewritten in the binary layout as they load; those written before
 * sources were kept load under the shared source `legacy`.
 * Value writes go through a queue flushed every `intervalMs` and on `flush()`; contacts are
 * rewritten whole at each flush when they changed.
 */
import type { Contact } from '../contact.js';
import { fromHex, toHex } from '../id/id.js';
import type { StoredValue } from '../store/value-store.js';
import {
  decodeLegacyValue,
  decodeValue,
  encodeValueKey,
  encodeValueRecord,
  LEGACY_VALUE_RANGE,
  recordSlabs,
  VALUE_PREFIX,
  VALUE_PREFIX_END,
} from './records.js';

export { LEGACY_SOURCE } from './records.js';

/** Records written through the queue: contacts as utf8 JSON, values as bytes (./records.ts). */
export type BatchOp =
  | { type: 'put'; key: string; value: string }
  | { type: 'del'; key: string }
  | { type: 'put'; key: Uint8Array; value: Uint8Array; keyEncoding: 'view'; valueEncoding: 'view' }
  | { type: 'del'; key: Uint8Array; keyEncoding: 'view' };

/** The part of a `level` database this module uses (a `new Level(path)` satisfies it). */
export interface KeyValueDb {
  batch(ops: BatchOp[]): Promise<void>;
  iterator(opts: { gte: string; lt: string }): AsyncIterable<[string, string]>;
  iterator(opts: {
    gte: Uint8Array;
    lt: Uint8Array;
    keyEncoding: 'view';
    valueEncoding: 'view';
  }): AsyncIterable<[Uint8Array, Uint8Array]>;
  close(): Promise<void>;
}

export interface PersistedContact {
  level: number;
  contact: Contact;
  lastSeen: number;
}

/** Earlier-layout records rewritten per batch while loading. */
const MIGRATE_BATCH = 512;

export class Persistence {
  #db: KeyValueDb;
  #queue: BatchOp[] = [];
  /** Queued records' bytes (./records.ts `recordSlabs`). */
  #slabs = recordSlabs();
  #contactKeys = new Set<string>();
  #flushing: Promise<void> = Promise.resolve();
  /** Records skipped on load because they could not be decoded (a damaged or foreign database). */
  readonly damaged = { contacts: 0, values: 0 };
  /** Earlier-layout value records read and rewritten by `values()`. */
  migrated = 0;

  constructor(components: { db: KeyValueDb }) {
    this.#db = components.db;
  }

  async loadContacts(): Promise<PersistedContact[]> {
    const out: PersistedContact[] = [];
    for await (const [k, v] of this.#db.iterator({ gte: 'c!', lt: 'c~' })) {
      try {
        const [, level, hex] = k.split('!');
        const o = JSON.parse(v) as {
          ip: string;
          port: number;
          httpPort?: number;
          dnsPort?: number;
          region?: string;
          lastSeen: number;
        };
        const contact: Contact = { id: fromHex(hex!), ip: o.ip, port: o.port };
        if (o.httpPort) contact.httpPort = o.httpPort;
        if (o.dnsPort) contact.dnsPort = o.dnsPort;
        if (o.region) contact.region = o.region;
        out.push({ level: Number(level), contact, lastSeen: o.lastSeen });
        this.#contactKeys.add(k);
      } catch {
        // A damaged record is skipped (and counted); the rest still load.
        this.damaged.contacts++;
      }
    }
    return out;
  }

  /**
   * The stored values, one at a time as the database yields them (a restart restores each as it
   * is read: 100,000s of values are never all held twice). Damaged records are skipped and counted
   * in {@link Persistence.damaged}. Records of the earlier layout (utf8 keys, JSON) are read too
   * and rewritten in the binary one as they are read (`migrated` counts them).
   */
  async *values(): AsyncGenerator<StoredValue, void, undefined> {
    for await (const [k, v] of this.#db.iterator({
      gte: VALUE_PREFIX,
      lt: VALUE_PREFIX_END,
      keyEncoding: 'view',
      valueEncoding: 'view',
    })) {
      const sv = decodeValue(k, v);
      if (sv) yield sv;
      else this.damaged.values++;
    }
    let pending = 0;
    for await (const [k, v] of this.#db.iterator(LEGACY_VALUE_RANGE)) {
      const sv = decodeLegacyValue(k, v);
      if (!sv) {
        this.damaged.values++;
        continue;
      }
      // Rewritten and the old record dropped in one batch: a crash leaves one or the other.
      this.putValue(sv);
      this.#queue.push({ type: 'del', key: k });
      this.migrated++;
      if (++pending >= MIGRATE_BATCH) {
        pending = 0;
        await this.flush();
      }
      yield sv;
    }
    if (pending > 0) await this.flush();
  }

  putValue(v: StoredValue): void {
    this.#queue.push({
      type: 'put',
      key: encodeValueKey(v, this.#slabs.alloc),
      value: encodeValueRecord(v, this.#slabs.alloc),
      keyEncoding: 'view',
      valueEncoding: 'view',
    });
  }

  deleteValue(v: StoredValue): void {
    this.#queue.push({
      type: 'del',
      key: encodeValueKey(v, this.#slabs.alloc),
      keyEncoding: 'view',
    });
  }

  /** Replace the stored contact set with `contacts`. */
  setContacts(contacts: PersistedContact[]): void {
    const keep = new Set<string>();
    for (const { level, contact, lastSeen } of contacts) {
      const key = `c!${level}!${toHex(contact.id)}`;
      keep.add(key);
      this.#queue.push({
        type: 'put',
        key,
        value: JSON.stringify({
          ip: contact.ip,
          port: contact.port,
          httpPort: contact.httpPort,
          dnsPort: contact.dnsPort,
          region: contact.region,
          lastSeen,
        }),
      });
    }
    for (const key of this.#contactKeys) if (!keep.has(key)) this.#queue.push({ type: 'del', key });
    this.#contactKeys = keep;
  }

  /** Write everything queued. */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(async () => {
      if (this.#queue.length === 0) return;
      const ops = this.#queue;
      this.#queue = [];
      await this.#db.batch(ops);
    });
    return this.#flushing;
  }

  async close(): Promise<void> {
    await this.flush();
    await this.#db.close();
  }
}
