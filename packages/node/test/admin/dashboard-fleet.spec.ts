import { describe, expect, it } from 'vitest';
import { bucketOf, fleetView, type FleetSource } from '../../src/admin/dashboard/fleet.js';
import { offload } from '../../src/admin/dashboard/data.js';

const id = (first: number, last = 0) => {
  const b = new Uint8Array(20);
  b[0] = first;
  b[19] = last;
  return b;
};
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('bucketOf', () => {
  it('is the index of the highest bit in which two ids differ', () => {
    expect(bucketOf(id(0), id(0x80))).toBe(159);
    expect(bucketOf(id(0), id(0x01))).toBe(152);
    expect(bucketOf(id(0), id(0, 1))).toBe(0);
    expect(bucketOf(id(0, 2), id(0, 3))).toBe(0);
    expect(bucketOf(id(7), id(7))).toBe(-1);
  });
});

describe('fleetView', () => {
  const self = { id: id(0), ip: '127.0.0.11', port: 8091, httpPort: 8090, dnsPort: 5353 };
  const a = { id: id(0x80), ip: '127.0.0.12', port: 8091, httpPort: 8090, region: 'north' };
  const b = { id: id(0x01), ip: '127.0.0.13', port: 8091 };
  const source: FleetSource = {
    levels: 3,
    contact: self,
    routes: () => [],
    routeEntries: (level) =>
      [
        [
          { contact: b, lastSeen: 9_000, failures: 0 },
          { contact: a, lastSeen: 7_000, failures: 2 },
        ],
        [{ contact: a, lastSeen: 9_500, failures: 0 }],
        [],
      ][level]!,
    snapshot: () => ({ rtt: [{ peer: '127.0.0.12:8091', srttMs: 2.5, samples: 4 }] }),
    clusters: () => ({
      levels: [
        { level: 0, clusterId: 'aa', size: 3, members: 2, thresholdMs: null, ageMs: 5 },
        { level: 1, clusterId: 'bb', size: 2, members: 1, thresholdMs: 60, ageMs: 4 },
        { level: 2, clusterId: 'cc', size: 1, members: 0, thresholdMs: 20, ageMs: 3 },
      ],
    }),
  };

  it('lists each member once with the levels it shares, its RTT, liveness and last contact', () => {
    const v = fleetView(source, [hex(a.id)], 10_000);
    expect(v.self).toMatchObject({ nodeId: hex(self.id), httpPort: 8090, dnsPort: 5353 });
    expect(v.self.clusters.map((c) => [c.level, c.clusterId, c.thresholdMs])).toEqual([
      [0, 'aa', null],
      [1, 'bb', 60],
      [2, 'cc', 20],
    ]);
    expect(v.members).toEqual([
      {
        nodeId: hex(a.id),
        ip: '127.0.0.12',
        port: 8091,
        httpPort: 8090,
        dnsPort: null,
        region: 'north',
        levels: [0, 1],
        rttMs: 2.5,
        lastHeardMs: 500,
        failures: 2,
        live: true,
      },
      expect.objectContaining({ nodeId: hex(b.id), levels: [0], rttMs: null, live: false }),
    ]);
    expect(v.routes.map((r) => r.contacts.map((c) => c.bucket))).toEqual([[159, 152], [159], []]);
  });

  it('works from bare contacts and without clustering', () => {
    const bare: FleetSource = {
      levels: 1,
      contact: self,
      routes: () => [a],
      snapshot: () => undefined,
    };
    const v = fleetView(bare, [], 0);
    expect(v.members[0]).toMatchObject({ levels: [0], lastHeardMs: null, failures: 0 });
    expect(v.self.clusters).toEqual([
      { level: 0, clusterId: null, size: null, members: null, thresholdMs: null, ageMs: null },
    ]);
  });
});

describe('offload', () => {
  it('is the share of bytes sent that did not come from an origin, within [0, 1]', () => {
    expect(offload(0, 0)).toBeNull();
    expect(offload(1_000, 250)).toBe(0.75);
    expect(offload(1_000, 0)).toBe(1);
    expect(offload(100, 400)).toBe(0); // an origin fetch larger than what was sent so far
  });
});
