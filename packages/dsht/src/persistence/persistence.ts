/**
 * Contacts and stored values in the node's LevelDB, so a restarted node rejoins from the peers it
 * knew (no bootstrap address needed) and keeps answering for values whose TTL has not run out.
 *
 * Layout (utf8 keys and JSON values):
 *   `c!<level>!<idhex>` → { ip, port, httpPort?, dnsPort?, region?, lastSeen }
 *   `v!<level>!<keyhex>!<entry>` → { value: base64, expiresAt, storedAt, src }
 *     where <entry> is the publisher's id in hex, or `c<copier hex><named publisher hex>` for a
 *     path-cached copy, and `src` the host it came from (quota accounting; absent = this node).
 *     Records written before sources were kept load under the shared source `legacy`.
 * Value writes go through a queue flushed every `intervalMs` and on `flush()`; contacts are
 * rewritten whole at each flush when they changed.
 */
import type { Contact } from '../contact.js';
import { fromHex, toHex } from '../id/id.js';
import { entryKey, type StoredValue } from '../store/value-store.js';

/** Source of persisted values written before sources were recorded: they share one quota. */
export const LEGACY_SOURCE = 'legacy';

export type BatchOp = { type: 'put'; key: string; value: string } | { type: 'del'; key: string };

/** The part of a `level` database this module uses (a `new Level(path)` satisfies it). */
export interface KeyValueDb {
  batch(ops: BatchOp[]): Promise<void>;
  iterator(opts: { gte: string; lt: string }): AsyncIterable<[string, string]>;
  close(): Promise<void>;
}

export interface PersistedContact {
  level: number;
  contact: Contact;
  lastSeen: number;
}

/** A value record (`v!…` key and its JSON), or undefined when it is damaged. */
function decodeValueRecord(k: string, v: string): StoredValue | undefined {
  try {
    const [, level, keyHex, entry] = k.split('!');
    const o = JSON.parse(v) as {
      value: string;
      expiresAt: number;
      storedAt: number;
      src?: string | null;
    };
    const copy = entry!.length === 81 && entry!.startsWith('c');
    const sv: StoredValue = {
      level: Number(level),
      key: fromHex(keyHex!),
      publisher: fromHex(copy ? entry!.slice(41) : entry!),
      value: new Uint8Array(Buffer.from(o.value, 'base64')),
      expiresAt: o.expiresAt,
      storedAt: o.storedAt,
    };
    if (copy) {
      sv.copy = true;
      sv.storedBy = fromHex(entry!.slice(1, 41));
    }
    // null = this node's own value; a missing field = written before sources were kept.
    if (o.src === undefined) sv.source = LEGACY_SOURCE;
    else if (o.src !== null) sv.source = o.src;
    return sv;
  } catch {
    return undefined;
  }
}

export class Persistence {
  #db: KeyValueDb;
  #queue: BatchOp[] = [];
  #contactKeys = new Set<string>();
  #flushing: Promise<void> = Promise.resolve();
  /** Records skipped on load because they could not be decoded (a damaged or foreign database). */
  readonly damaged = { contacts: 0, values: 0 };

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
   * in {@link Persistence.damaged}.
   */
  async *values(): AsyncGenerator<StoredValue, void, undefined> {
    for await (const [k, v] of this.#db.iterator({ gte: 'v!', lt: 'v~' })) {
      const sv = decodeValueRecord(k, v);
      if (sv) yield sv;
      else this.damaged.values++;
    }
  }

  static valueKey(v: StoredValue): string {
    return `v!${v.level}!${toHex(v.key)}!${entryKey(v)}`;
  }

  putValue(v: StoredValue): void {
    this.#queue.push({
      type: 'put',
      key: Persistence.valueKey(v),
      value: JSON.stringify({
        value: Buffer.from(v.value).toString('base64'),
        expiresAt: v.expiresAt,
        storedAt: v.storedAt,
        src: v.source ?? null,
      }),
    });
  }

  deleteValue(v: StoredValue): void {
    this.#queue.push({ type: 'del', key: Persistence.valueKey(v) });
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
