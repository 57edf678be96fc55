import { describe, expect, it } from 'vitest';
import type { NodeInfo } from '../../src/index.js';
import { admitCandidates } from '../../src/locate/candidates.js';
import { hex } from '../helpers.js';

const n = (i: number, extra: Partial<NodeInfo> = {}): NodeInfo => ({
  id: hex(i),
  httpPort: 8090,
  ...extra,
});

describe('admitCandidates', () => {
  it('one identity per address: ids sharing an IPv4 or IPv6 address are dropped after the first', () => {
    const sybils = Array.from({ length: 100 }, (_, i) => n(100 + i, { ipv4: '10.6.6.6' }));
    const honest = n(2, { ipv4: '10.0.0.2' });
    expect(admitCandidates([...sybils, honest], 2, undefined)).toEqual([sybils[0], honest]);
    // IPv6: the same address written differently, and an IPv4-mapped form of an IPv4 address.
    const a = n(3, { ipv4: '10.0.0.3', ipv6: '2001:db8::3' });
    const b = n(4, { ipv6: '2001:DB8:0:0::3' });
    const c = n(5, { ipv4: '10.0.0.5', ipv6: '::ffff:10.0.0.3' });
    const d = n(6, { ipv4: '10.0.0.6' });
    expect(admitCandidates([a, b, c, d], 5, undefined).map((x) => x.id)).toEqual([a.id, d.id]);
    // The same id twice counts once.
    expect(admitCandidates([d, d, d], 5, undefined)).toEqual([d]);
  });

  it('only live nodes, only usable addresses (written canonically), at most count', () => {
    const live = new Set([hex(1), hex(2), hex(3), hex(4)]);
    const out = admitCandidates(
      [
        n(1, { ipv4: '10.0.0.1' }),
        n(9, { ipv4: '10.0.0.9' }), // not live
        n(2, { ipv4: '300.0.0.1' }), // no usable address
        n(3, { ipv4: 'x', ipv6: '2001:0DB8::0001' }), // IPv6 only, canonicalised
        n(4, { ipv4: '10.0.0.4' }),
      ],
      2,
      (id) => live.has(id),
    );
    expect(out).toEqual([n(1, { ipv4: '10.0.0.1' }), n(3, { ipv6: '2001:db8::1' })]);
    expect(admitCandidates([n(1, { ipv4: '10.0.0.1' })], 0, undefined)).toEqual([]);
    // Whatever a directory returns: holes and junk are skipped, not thrown on.
    const junk = [undefined, null, { id: 7 }, n(8, { ipv4: '10.0.0.8' })] as unknown as NodeInfo[];
    expect(admitCandidates(junk, 3, undefined)).toEqual([n(8, { ipv4: '10.0.0.8' })]);
  });
});
