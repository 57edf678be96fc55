/**
 * An in-memory `FleetMembers`: a fixed set of members, edited by hand. For tests and a
 * single-process fleet; the node package builds its members from the DSHT.
 */
import type { FleetMembers } from './members.js';

export class InMemoryFleetMembers implements FleetMembers {
  readonly #members = new Map<string, { ip: string; httpPort: number }>();
  recordsAuthenticated: boolean;

  constructor(options: { recordsAuthenticated?: boolean } = {}) {
    this.recordsAuthenticated = options.recordsAuthenticated ?? false;
  }

  /** Add (or move) a member: `nodeId` is reached at `ip:httpPort`. */
  set(nodeId: string, address: { ip: string; httpPort: number }): this {
    this.#members.set(nodeId.toLowerCase(), { ip: address.ip, httpPort: address.httpPort });
    return this;
  }

  delete(nodeId: string): boolean {
    return this.#members.delete(nodeId.toLowerCase());
  }

  member(nodeId: string): { ip: string; httpPort: number } | undefined {
    const m = this.#members.get(nodeId.toLowerCase());
    return m ? { ...m } : undefined;
  }
}
