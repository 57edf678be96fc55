/**
 * A node's state in its database: what `start()` restores (values into the store, contacts to
 * ping first) and how changes are written back — values through, as they change (batched per
 * turn), contacts periodically and at stop.
 */
import type { Contact } from '../contact.js';
import { PERSIST_MAX_CONTACTS } from '../constants.js';
import { idEquals, nodeIdFor, toHex } from '../id/id.js';
import type { RoutingTable } from '../routing-table/routing-table.js';
import type { Logger } from '../rpc/rpc.js';
import type { StoreChange, ValueStore } from '../store/value-store.js';
import type { Persistence } from './persistence.js';

/** Expired records deleted per batch while restoring. */
const EXPIRED_BATCH = 512;

/**
 * Restore stored values into `store`, deleting the records of values that have expired since
 * they were written; return the stored contacts, most recently seen first, each once, and only
 * those whose id is SHA-1 of their address.
 */
export async function restoreState(p: Persistence, store: ValueStore): Promise<Contact[]> {
  let expired = 0;
  for await (const v of p.values()) {
    if (store.restore(v) || !store.isExpired(v)) continue;
    p.deleteValue(v);
    if (++expired % EXPIRED_BATCH === 0) await p.flush();
  }
  if (expired % EXPIRED_BATCH !== 0) await p.flush();
  const seen = new Set<string>();
  return (await p.loadContacts())
    .sort((a, b) => b.lastSeen - a.lastSeen)
    .map((c) => c.contact)
    .filter((c) => {
      const hex = toHex(c.id);
      if (seen.has(hex) || !idEquals(nodeIdFor(c.ip, c.port), c.id)) return false;
      seen.add(hex);
      return true;
    });
}

/**
 * What writes every change of a store through to `p` (its `onChange` component): queued at once,
 * flushed once per turn.
 */
export function writeThrough(p: Persistence, logger: Logger): (change: StoreChange) => void {
  let scheduled = false;
  return (ch) => {
    if (ch.kind === 'put') p.putValue(ch.value);
    else p.deleteValue(ch.value);
    if (!scheduled) {
      scheduled = true;
      queueMicrotask(() => {
        scheduled = false;
        void p.flush().catch((err: unknown) => logger.warn({ err }, 'persist failed'));
      });
    }
  };
}

/** Queue the most recently seen contacts of every table (PERSIST_MAX_CONTACTS per level). */
export function saveContacts(p: Persistence, tables: readonly RoutingTable[]): void {
  const entries = tables.flatMap((t) =>
    t
      .all()
      .sort((a, b) => b.lastSeen - a.lastSeen)
      .slice(0, PERSIST_MAX_CONTACTS)
      .map((e) => ({ level: t.level, contact: e.contact, lastSeen: e.lastSeen })),
  );
  p.setContacts(entries);
}
