import type { ResolvedAddress, Resolver } from '../../src/connect/index.js';

/** A resolver answering from a mutable table, counting its calls per name. */
export class TableResolver implements Resolver {
  readonly calls = new Map<string, number>();
  constructor(public table: Record<string, string[]> = {}) {}

  async resolve(host: string): Promise<ResolvedAddress[]> {
    this.calls.set(host, (this.calls.get(host) ?? 0) + 1);
    return (this.table[host] ?? []).map((address) => ({
      address,
      family: address.includes(':') ? 6 : 4,
    }));
  }

  count(host: string): number {
    return this.calls.get(host) ?? 0;
  }
}

/** Wait for a real-world condition (socket events), polling briefly; fails after `ms`. */
export async function until(cond: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 5));
  }
}
