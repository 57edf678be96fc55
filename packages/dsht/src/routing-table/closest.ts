/**
 * The closest contacts to a target: `TopContacts`, the routing table's bounded sorted list, and
 * `sortByDistance`. Distances are compared by their leading 32 bits first (one integer per
 * contact), the full XOR distance only on a tie.
 */
import type { Contact } from '../contact.js';
import { compareDistance, type Id } from '../id/id.js';

/** A contact with the leading 32 bits of its id as a signed 32-bit integer. */
export interface Prefixed {
  readonly contact: Contact;
  readonly prefix: number;
}

/** The leading 32 bits of `id` as an unsigned number. */
export function prefix32(id: Id): number {
  return ((id[0]! << 24) | (id[1]! << 16) | (id[2]! << 8) | id[3]!) >>> 0;
}

/**
 * The `count` contacts closest to a target among those offered, closest first: a sorted list of at
 * most `count`, compared by the leading 32 bits of the XOR distance (the full distance on a tie).
 */
export class TopContacts {
  readonly contacts: Contact[] = [];
  readonly #dist: number[] = [];
  readonly #target: Id;
  readonly #t0: number;
  readonly #count: number;

  constructor(target: Id, count: number) {
    this.#target = target;
    this.#t0 = prefix32(target);
    this.#count = count;
  }

  get full(): boolean {
    return this.contacts.length >= this.#count;
  }

  offer(entries: readonly Prefixed[], exclude: ((c: Contact) => boolean) | undefined): void {
    const list = this.contacts;
    const dist = this.#dist;
    const target = this.#target;
    const t0 = this.#t0;
    for (let e = 0; e < entries.length; e++) {
      const entry = entries[e]!;
      const d = (entry.prefix ^ t0) >>> 0;
      const c = entry.contact;
      let n = list.length;
      if (n >= this.#count) {
        const worst = dist[n - 1]!;
        if (d > worst || (d === worst && compareDistance(c.id, list[n - 1]!.id, target) >= 0))
          continue;
      }
      if (exclude && exclude(c)) continue;
      if (n >= this.#count) {
        list.pop();
        dist.pop();
        n--;
      }
      // Insert in order (lists are short: k = 20).
      let i = n;
      while (i > 0) {
        const di = dist[i - 1]!;
        if (di < d || (di === d && compareDistance(list[i - 1]!.id, c.id, target) < 0)) break;
        i--;
      }
      list.splice(i, 0, c);
      dist.splice(i, 0, d);
    }
  }
}

/**
 * Sort contacts by XOR distance to `target`. The leading 32 bits of each distance are compared as
 * numbers (computed once per contact); only equal prefixes fall back to the full comparison.
 */
export function sortByDistance(list: Contact[], target: Id): Contact[] {
  if (list.length < 2) return list;
  const t0 = ((target[0]! << 24) | (target[1]! << 16) | (target[2]! << 8) | target[3]!) >>> 0;
  const keyed = list.map((c) => {
    const id = c.id;
    return { c, d: (((id[0]! << 24) | (id[1]! << 16) | (id[2]! << 8) | id[3]!) ^ t0) >>> 0 };
  });
  keyed.sort((x, y) => x.d - y.d || compareDistance(x.c.id, y.c.id, target));
  return keyed.map((x) => x.c);
}
