import type { ResolvedAddress, Resolver } from '../../src/connect/index.js';

export { until } from '../helpers/harness.js';

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
