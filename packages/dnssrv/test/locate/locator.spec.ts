import { describe, expect, it } from 'vitest';
import { ManualClock } from '@coral/testkit';
import { ResolverProbes, type NodeDirectory } from '../../src/index.js';
import { compileViews, Locator } from '../../src/locate/locator.js';
import { parseIp } from '../../src/net/ip.js';
import { fleet, node } from '../helpers.js';

function locator(dir: NodeDirectory, views: Parameters<typeof compileViews>[0] = []) {
  const clock = new ManualClock();
  const probes = new ResolverProbes({ clock }, { enabled: false });
  return {
    loc: new Locator(
      { directory: dir, probes, clock },
      { views: compileViews(views), hintTimeoutMs: 100 },
    ),
    probes,
    clock,
  };
}

const ecs6 = {
  family: 2 as const,
  sourcePrefix: 48,
  scopePrefix: 0,
  address: parseIp('2001:db8:aa::')!,
  raw: new Uint8Array(),
};

describe('Locator', () => {
  it('IPv6 views match an IPv6 ECS subnet; the scope is the view prefix', async () => {
    const dir = fleet().add(node(2, { region: 'v6land' }));
    const { loc } = locator(dir, [{ cidr: '2001:db8::/32', region: 'v6land' }]);
    const ctx = loc.context('127.0.0.1', parseIp('127.0.0.1')!, ecs6);
    expect(ctx.bucket).toBe('v0e:u');
    expect(await loc.locate(ctx, 2)).toMatchObject({ method: 'view', scope: 32, nodes: [node(2)] });
  });

  it('views by node id work without the optional get(): the directory is scanned', async () => {
    const inner = fleet().add(node(2)).add(node(3));
    const dir: NodeDirectory = {
      self: () => inner.self(),
      near: (t, c) => inner.near(t, c),
      cluster: (l, c) => inner.cluster(l, c),
      hinted: (t, c) => inner.hinted(t, c),
      random: (c) => inner.random(c),
      inRegion: (r, c) => inner.inRegion(r, c),
      levelThresholdsMs: inner.levelThresholdsMs,
    };
    const { loc } = locator(dir, [{ cidr: '127.0.0.0/8', nodes: [node(3).id] }]);
    const r = await loc.locate(loc.context('127.0.0.1', parseIp('127.0.0.1')!, undefined), 2);
    expect(r).toMatchObject({ method: 'view', nodes: [node(3)] });
  });

  it('a directory whose hints hang is cut off after hintTimeoutMs, then random', async () => {
    const dir = fleet().add(node(2));
    dir.hinted = () => new Promise(() => {});
    const { loc, clock } = locator(dir);
    const p = loc.locate(loc.context('192.0.2.1', parseIp('192.0.2.1')!, undefined), 2);
    await clock.advance(100);
    expect((await p).method).toBe('random');
  });

  it('RTT buckets: unknown, unreachable and each level key the cache differently', () => {
    const { loc, probes } = locator(fleet());
    const ip = parseIp('198.51.100.7')!;
    expect(loc.context('198.51.100.7', ip, undefined).bucket).toBe('r198.51.100.0/24:u');
    probes.record('198.51.100.0/24', '198.51.100.7', null);
    expect(loc.context('198.51.100.7', ip, undefined).bucket).toBe('r198.51.100.0/24:x');
    probes.record('198.51.100.0/24', '198.51.100.7', 45);
    expect(loc.context('198.51.100.7', ip, undefined)).toMatchObject({
      rttLevel: 1,
      bucket: 'r198.51.100.0/24:1',
    });
    probes.record('198.51.100.0/24', '198.51.100.7', 3);
    expect(loc.context('198.51.100.7', ip, undefined).rttLevel).toBe(2);
    probes.record('198.51.100.0/24', '198.51.100.7', 300);
    expect(loc.context('198.51.100.7', ip, undefined).bucket).toBe('r198.51.100.0/24:0');
  });

  it('views need exactly one of nodes or region', () => {
    expect(() => compileViews([{ cidr: '10.0.0.0/8' }])).toThrow(
      expect.objectContaining({ code: 'DNS_ERR_CONFIG' }),
    );
    expect(() => compileViews([{ cidr: '10.0.0.0/8', region: 'a', nodes: [] }])).toThrow(
      expect.objectContaining({ code: 'DNS_ERR_CONFIG' }),
    );
  });
});
