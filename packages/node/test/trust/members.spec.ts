/**
 * The fetcher choice's view of the fleet (DshtFleetMembers.live): a member failure detection
 * declares dead stays a candidate for the hold (5 s) from its death — a member falsely declared
 * dead on an overloaded fleet keeps its objects' one fetcher, and every member holds it from the
 * same gossiped death — while one that comes back or leaves ends the hold at once, and holder
 * lookups (`member`) drop a dead member at once.
 */
import { EventEmitter } from 'node:events';
import { chooseFetcher } from '@coral/httpprx';
import { ManualClock } from '@coral/testkit';
import { describe, expect, it } from 'vitest';
import {
  DESIGNATED_HOLD_MS,
  DshtFleetMembers,
  type MemberSource,
} from '../../src/trust/members.js';

const SELF = '00'.repeat(20);
const A = 'aa'.repeat(20);
const B = 'bb'.repeat(20);

/** The DSHT's live members as the test sets them, with its member events. */
class Source extends EventEmitter implements MemberSource {
  readonly levels = 1;
  live = new Map<string, { id: string; ip: string; httpPort?: number }>();
  constructor(ids: string[]) {
    super();
    ids.forEach((id, i) => this.live.set(id, { id, ip: `127.0.0.${i + 2}`, httpPort: 8090 }));
  }
  member(id: string) {
    return this.live.get(id);
  }
  members() {
    return [...this.live.values()];
  }
  routes() {
    return [];
  }
  /** Failure detection's verdict, as the Dsht reports it. */
  change(id: string, state: 'dead' | 'alive' | 'left') {
    const m = this.live.get(id) ?? { id, ip: '127.0.0.2', httpPort: 8090 };
    if (state === 'alive') this.live.set(id, m);
    else this.live.delete(id);
    this.emit(`member-${state}`, m);
  }
}

const ids = (members: DshtFleetMembers) =>
  members.live!()
    .map((m) => m.nodeId)
    .sort();

describe('the fetcher choice holds a member declared dead', () => {
  it('keeps it for the hold from its death, then drops it; holder lookups drop it at once', async () => {
    const clock = new ManualClock(1_000);
    const dsht = new Source([A, B]);
    const members = new DshtFleetMembers(dsht, true, { clock });
    expect(ids(members)).toEqual([A, B]);
    dsht.change(A, 'dead');
    expect(members.member(A)).toBeUndefined();
    await clock.advance(DESIGNATED_HOLD_MS - 1);
    expect(ids(members)).toEqual([A, B]);
    await clock.advance(1);
    expect(ids(members)).toEqual([B]);
  });

  it('keeps the designated fetcher of a key through a false death shorter than the hold', async () => {
    const clock = new ManualClock(0);
    const dsht = new Source([A, B]);
    const members = new DshtFleetMembers(dsht, true, { clock });
    const key = Buffer.from('http://www.example.com/obj/1');
    const before = chooseFetcher(members, SELF, key);
    const designated = before?.kind === 'member' ? before.member.nodeId : '';
    expect(designated).not.toBe('');
    dsht.change(designated, 'dead');
    await clock.advance(2_000);
    const during = chooseFetcher(members, SELF, key);
    expect(during?.kind === 'member' && during.member.nodeId).toBe(designated);
    dsht.change(designated, 'alive'); // refuted: listed once, as a live member
    expect(ids(members)).toEqual([A, B]);
    // A death that lasts: the choice moves after the hold.
    dsht.change(designated, 'dead');
    await clock.advance(DESIGNATED_HOLD_MS);
    const after = chooseFetcher(members, SELF, key);
    expect(after?.kind === 'member' && after.member.nodeId).not.toBe(designated);
  });

  it('drops a member that left (LEAVE) at once, even within a hold', () => {
    const clock = new ManualClock(0);
    const dsht = new Source([A, B]);
    const members = new DshtFleetMembers(dsht, true, { clock });
    dsht.change(B, 'dead');
    expect(ids(members)).toEqual([A, B]);
    dsht.change(B, 'left');
    expect(ids(members)).toEqual([A]);
  });

  it('sees the live members as they are with the hold off, or without a clock', () => {
    for (const options of [{ clock: new ManualClock(0), holdMs: 0 }, {}]) {
      const dsht = new Source([A, B]);
      const members = new DshtFleetMembers(dsht, true, options);
      dsht.change(A, 'dead');
      expect(ids(members)).toEqual([B]);
    }
  });

  it('has no live() when the designated fetcher is off', () => {
    const members = new DshtFleetMembers(new Source([A]), true, {
      clock: new ManualClock(0),
      designated: false,
    });
    expect(members.live).toBeUndefined();
  });
});

describe("a member's generation counts its returns (the proxy lifts its penalty then)", () => {
  it('grows when a member dead or gone comes back, and only then', () => {
    const dsht = new Source([A, B]);
    const members = new DshtFleetMembers(dsht, true, { clock: new ManualClock(1_000) });
    expect(members.generation(A)).toBe(0);
    dsht.change(A, 'left');
    expect(members.generation(A)).toBe(0);
    dsht.change(A, 'alive');
    expect(members.generation(A)).toBe(1);
    dsht.change(A, 'dead');
    dsht.change(A, 'alive');
    expect(members.generation(A)).toBe(2);
    expect(members.generation(B)).toBe(0);
  });

  it('is counted with the hold off and without the designated fetcher too', () => {
    const dsht = new Source([A]);
    const members = new DshtFleetMembers(dsht, true, { designated: false });
    dsht.change(A, 'left');
    dsht.change(A, 'alive');
    expect(members.generation(A)).toBe(1);
  });
});
