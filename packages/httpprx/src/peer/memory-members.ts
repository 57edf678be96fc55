/**
 * An in-memory `FleetMembers`: a fixed set of members, edited by hand. For tests and a
 * single-process fleet; the node package builds its members from the DSHT. With `rendezvous`,
 * it also lists them as live (`live()`), so that misses go to the designated fetcher.
 */
import type { FleetMembers, LiveMember } from './members.js';

export class InMemoryFleetMembers implements FleetMembers {
  readonly #members = new Map<string, { ip: string; httpPort: number; near: boolean }>();
  readonly #generations = new Map<string, number>();
  recordsAuthenticated: boolean;
  live?: () => readonly LiveMember[];

  constructor(options: { recordsAuthenticated?: boolean; rendezvous?: boolean } = {}) {
    this.recordsAuthenticated = options.recordsAuthenticated ?? false;
    if (options.rendezvous) {
      this.live = () =>
        [...this.#members].map(([nodeId, m]) => ({
          nodeId,
          ip: m.ip,
          httpPort: m.httpPort,
          near: m.near,
        }));
    }
  }

  /** Add (or move) a member: `nodeId` is reached at `ip:httpPort`; `near`: in our cluster (default). */
  set(nodeId: string, address: { ip: string; httpPort: number; near?: boolean }): this {
    this.#members.set(nodeId.toLowerCase(), {
      ip: address.ip,
      httpPort: address.httpPort,
      near: address.near ?? true,
    });
    return this;
  }

  /** The member came back (restarted, or returned after it was dead or left): its generation grows. */
  rejoin(nodeId: string, address?: { ip: string; httpPort: number; near?: boolean }): this {
    const id = nodeId.toLowerCase();
    if (address) this.set(id, address);
    this.#generations.set(id, this.generation(id) + 1);
    return this;
  }

  generation(nodeId: string): number {
    return this.#generations.get(nodeId.toLowerCase()) ?? 0;
  }

  delete(nodeId: string): boolean {
    return this.#members.delete(nodeId.toLowerCase());
  }

  member(nodeId: string): { ip: string; httpPort: number } | undefined {
    const m = this.#members.get(nodeId.toLowerCase());
    return m ? { ip: m.ip, httpPort: m.httpPort } : undefined;
  }
}
