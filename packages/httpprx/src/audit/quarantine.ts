/**
 * Members this node no longer believes (./auditor.ts): a member quarantined here is skipped as
 * the designated fetcher and as a holder — its answers and its designation — until its quarantine
 * ends. A quarantine is only ever this node's own conclusion, from its own audit; what other
 * members report makes a member a *suspect* here (every copy from it audited, and the reported
 * object checked at once), never quarantined on hearsay. Each new quarantine of the same member
 * lasts twice the last one (up to `QUARANTINE_MAX_SECONDS`), so a liar that comes back and lies
 * again spends longer out each time. Bounded (the oldest entries are forgotten first); on the
 * injected clock.
 */
import type { Clock } from '@coral/runtime';
import type { FleetMembers } from '../peer/members.js';
import type { Disagreement } from './verdict.js';

/** What a member served and what the origin answered, as logged, reported and listed. */
export interface AuditEvidence {
  url: string;
  disagreements: Disagreement[];
  /** Same strong ETag, other bytes: no innocent explanation. */
  proof: boolean;
  member: { size: number; sha256: string; etag?: string; lastModified?: string; lifetime: number };
  origin: { size: number; sha256: string; etag?: string; lastModified?: string; lifetime: number };
}

/** What a member found and tells the fleet (and what a member is told). */
export interface MemberReport {
  /** The member found lying (hex node id). */
  member: string;
  /** How a client named the object (Host and path as sent to members), and its origin URL. */
  host: string;
  path: string;
  url: string;
  evidence: AuditEvidence;
}

export interface QuarantineEntry {
  nodeId: string;
  since: number;
  until: number;
  /** Quarantines of this member remembered (1 for the first). */
  count: number;
  /**
   * `audit`: a sampled or suspect's copy; `report`: the object a member reported, checked here;
   * `stream`: a copy it streamed, completed from the origin, whose whole is not what it announced.
   */
  found: 'audit' | 'report' | 'stream';
  evidence: AuditEvidence;
}

export interface SuspectEntry {
  nodeId: string;
  until: number;
  /** The members that reported it (hex ids as they said, at most a few). */
  reporters: string[];
}

export class MemberQuarantine {
  readonly #clock: Clock;
  readonly #ms: number;
  readonly #maxMs: number;
  readonly #suspectMs: number;
  readonly #max: number;
  readonly #entries = new Map<string, QuarantineEntry>();
  readonly #suspects = new Map<string, SuspectEntry>();

  constructor(
    components: { clock: Clock },
    options: { quarantineMs: number; maxMs: number; suspectMs: number; maxMembers?: number },
  ) {
    this.#clock = components.clock;
    this.#ms = options.quarantineMs;
    this.#maxMs = Math.max(options.maxMs, options.quarantineMs);
    this.#suspectMs = options.suspectMs;
    this.#max = options.maxMembers ?? 1024;
  }

  /** Quarantine `nodeId` on this node's own evidence; returns the entry. */
  add(nodeId: string, found: QuarantineEntry['found'], evidence: AuditEvidence): QuarantineEntry {
    const id = nodeId.toLowerCase();
    const now = this.#clock.now();
    const before = this.#entries.get(id);
    const count = (before?.count ?? 0) + 1;
    const ms = Math.min(this.#maxMs, this.#ms * 2 ** (count - 1));
    this.#entries.delete(id);
    bound(this.#entries, this.#max, now);
    const entry = { nodeId: id, since: now, until: now + ms, count, found, evidence };
    this.#entries.set(id, entry);
    this.#suspects.delete(id);
    return entry;
  }

  /** Is `nodeId` quarantined now? */
  quarantined(nodeId: string): boolean {
    const e = this.#entries.get(nodeId.toLowerCase());
    return e !== undefined && e.until > this.#clock.now();
  }

  /** A member reported `nodeId`: it is a suspect for a while (unless quarantined already). */
  suspect(nodeId: string, reporter: string): SuspectEntry | undefined {
    const id = nodeId.toLowerCase();
    if (this.quarantined(id)) return undefined;
    const now = this.#clock.now();
    const until = now + this.#suspectMs;
    const before = this.#suspects.get(id);
    const reporters = [...new Set([...(before?.reporters ?? []), reporter.toLowerCase()])].slice(
      -8,
    );
    this.#suspects.delete(id);
    bound(this.#suspects, this.#max, now);
    const entry = { nodeId: id, until, reporters };
    this.#suspects.set(id, entry);
    return entry;
  }

  suspected(nodeId: string): boolean {
    const e = this.#suspects.get(nodeId.toLowerCase());
    return e !== undefined && e.until > this.#clock.now();
  }

  /** Current quarantines and suspects (for the admin API and metrics). */
  list(): { quarantined: QuarantineEntry[]; suspects: SuspectEntry[] } {
    const now = this.#clock.now();
    return {
      quarantined: [...this.#entries.values()].filter((e) => e.until > now),
      suspects: [...this.#suspects.values()].filter((e) => e.until > now),
    };
  }

  /**
   * The fleet's members as this node uses them: a quarantined member is neither live (the
   * designated-fetcher choice) nor a member (holders).
   */
  view(members: FleetMembers): FleetMembers {
    const q = (id: string) => this.quarantined(id);
    const view: FleetMembers = {
      get recordsAuthenticated() {
        return members.recordsAuthenticated;
      },
      member: (id) => (q(id) ? undefined : members.member(id)),
    };
    // Read through at each call: the members' own methods may change (tests replace them).
    if (members.live) view.live = () => (members.live?.() ?? []).filter((m) => !q(m.nodeId));
    if (members.generation) view.generation = (id) => members.generation?.(id) ?? 0;
    return view;
  }
}

/** Make room for one more entry: expired ones first, then the oldest. */
function bound<V extends { until: number }>(map: Map<string, V>, max: number, now: number): void {
  if (map.size < max) return;
  for (const [k, v] of map) if (v.until <= now) map.delete(k);
  while (map.size >= max) map.delete(map.keys().next().value!);
}
