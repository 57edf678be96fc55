/**
 * Adversary: the delegation's per-member nameserver names (`ns<id>.<sub-zone>`) over real UDP.
 * A stranger asking for the addresses of random ids must not make the node search its directory
 * at will (a real directory's `get` may walk its tables), and must never get an address that is
 * not a live nameserver member's.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { encodeQuery, fleet, header, hex, node, parse, udpAsk, waitFor } from '../helpers.js';
import { start, type Started } from '../server/support.js';
import { udpAttacker } from './attacker.js';

let s: Started | undefined;
afterEach(async () => {
  await s?.server.close();
  s = undefined;
});

const L2 = 'l2.l1.l0.nyud.net';

describe('adversary: member nameserver names', () => {
  it('random ids cost at most 50 directory lookups a second; only live members resolve', async () => {
    const dir = fleet()
      .add(node(2, { dnsPort: 53 }), { clusters: [1, 2] })
      .add(node(3, { dnsPort: 53 }), { clusters: [1, 2], live: false });
    let lookups = 0;
    const get = dir.get.bind(dir);
    dir.get = (id) => {
      lookups++;
      return get(id);
    };
    s = await start({ delegation: { enabled: true } }, dir);
    // The level-2 NS set names node 2: its name resolves without a directory lookup from now on.
    const set = parse(await udpAsk(s.port, encodeQuery({ name: L2, type: 2 })));
    expect(set.answers.map((x) => x.ns)).toEqual([`ns${hex(2)}.${L2}`]);
    const a = await udpAttacker('127.66.7.2');
    const N = 1000;
    for (let i = 0; i < N; i++) {
      a.send(encodeQuery({ name: `ns${hex(0x1000 + i)}.${L2}`, id: i }), s.port);
    }
    await waitFor(() => a.got.length === N);
    expect(lookups).toBeLessThanOrEqual(50); // the clock stands still: one second's burst
    for (const r of a.got) expect([2, 3]).toContain(header(r).rcode); // SERVFAIL or NXDOMAIN
    expect(a.got.some((r) => parse(r).answers.length > 0)).toBe(false);
    // A named live member's name still resolves; a dead member's does not.
    const live = parse(await udpAsk(s.port, encodeQuery({ name: `ns${hex(2)}.${L2}` })));
    expect(live.answers.map((x) => x.address)).toEqual(['10.0.0.2']);
    // (NXDOMAIN, or SERVFAIL while lookups are over their rate: never an address.)
    const dead = await udpAsk(s.port, encodeQuery({ name: `ns${hex(3)}.${L2}` }));
    expect([2, 3]).toContain(header(dead).rcode);
    expect(header(dead).an).toBe(0);
  });
});
