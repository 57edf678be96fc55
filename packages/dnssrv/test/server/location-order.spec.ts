/**
 * Each location method chosen in the right order, over real UDP, with an injected prober (whose
 * answers the test hands out) and an in-memory directory: views → ECS → RTT → hints → random →
 * CNAME to the origin.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ecsOf, encodeQuery, fleet, node, parse, udpAsk } from '../helpers.js';
import { lastDecision, start, type Started } from './support.js';

let s: Started | undefined;
afterEach(async () => {
  await s?.server.close();
  s = undefined;
});

const NAME = 'www.example.com.nyud.net';

async function ask(ecs?: number[]) {
  const r = parse(
    await udpAsk(
      s!.port,
      encodeQuery({
        name: NAME,
        ...(ecs ? { edns: { ecs: { sourcePrefix: 24, address: ecs } } } : {}),
      }),
    ),
  );
  return {
    addresses: r.answers.map((a) => a.address ?? a.domain).sort(),
    r,
    d: lastDecision(s!.server),
  };
}

describe('location order', () => {
  it('view > ECS > RTT > resolver hints > random > CNAME, each recorded with its reason', async () => {
    const dir = fleet()
      .add(node(2), { clusters: [1, 2] }) // this node's level-2 cluster: nodes 1 and 2
      .add(node(3), { clusters: [1] }) // level 1 only
      .add(node(4), { hints: ['127.0.0.0/24'] }) // hinted under the resolver's /24
      .add(node(5), { hints: ['198.51.100.0/24'] }) // hinted under a client subnet
      .add(node(6, { region: 'north' }))
      .add(node(7), { hints: ['127.0.0.0/16'] });
    s = await start({ views: [{ cidr: '203.0.113.0/24', region: 'north' }] }, dir);

    // Nothing measured yet: the answer is not held for the probe; resolver hint /24 wins.
    let a = await ask();
    expect(a.addresses).toEqual(['10.0.0.4']);
    expect(a.d).toMatchObject({ method: 'hint', ttl: 30 });
    expect(a.d.detail).toMatch(/rtt unknown; resolver hint \/24/);
    expect(s.prober.calls).toEqual(['127.0.0.1']);

    // Again before the probe returns: still hints, and no second probe for the same /24.
    a = await ask();
    expect(a.d.method).toBe('hint');
    expect(s.prober.calls).toHaveLength(1);

    // The probe lands: 5 ms < level-2's 20 ms → this node's level-2 cluster, TTL 60 s.
    s.prober.settle(5);
    await s.clock.advance(0);
    a = await ask();
    expect(a.addresses).toEqual(['10.0.0.1', '10.0.0.2']);
    expect(a.d).toMatchObject({ method: 'rtt', ttl: 60 });
    expect(a.r.answers.every((x) => x.ttl === 60)).toBe(true);
    expect(s.server.probeCache()[0]).toMatchObject({ prefix: '127.0.0.0/24', rttMs: 5 });

    // ECS beats RTT.
    a = await ask([198, 51, 100]);
    expect(a.addresses).toEqual(['10.0.0.5']);
    expect(a.d).toMatchObject({ method: 'ecs', scope: 24 });
    expect(ecsOf(a.r)).toMatchObject({ scopePrefixLength: 24 });

    // A view beats ECS (matched on the client subnet, so the scope is the view's prefix).
    a = await ask([203, 0, 113]);
    expect(a.addresses).toEqual(['10.0.0.6']);
    expect(a.d).toMatchObject({ method: 'view', scope: 24 });

    // The RTT cache expires; the new probe says 40 ms: level 1 (< 60 ms), not level 2, TTL 30 s.
    // While the re-probe runs, the expired 5 ms is still what is known (for one more TTL).
    await s.clock.advance(10 * 60_000 + 1);
    a = await ask();
    expect(a.d).toMatchObject({ method: 'rtt', ttl: 60 });
    expect(s.prober.calls).toHaveLength(2);
    s.prober.settle(40);
    await s.clock.advance(0);
    a = await ask();
    expect(a.d).toMatchObject({ method: 'rtt', ttl: 30 });
    expect(a.addresses.every((x) => ['10.0.0.1', '10.0.0.2', '10.0.0.3'].includes(x!))).toBe(true);

    // Far resolver (unreachable): resolver hints, /24 first, then /16.
    await s.clock.advance(10 * 60_000 + 1);
    await ask();
    s.prober.settle(null);
    await s.clock.advance(0);
    a = await ask();
    expect(a.d.detail).toMatch(/resolver unreachable; resolver hint \/24/);
    dir.remove(node(4).id);
    a = await ask();
    expect(a.addresses).toEqual(['10.0.0.7']);
    expect(a.d.detail).toMatch(/hint \/16/);

    // No hints at all: random live proxies.
    dir.remove(node(7).id);
    a = await ask();
    expect(a.d.method).toBe('random');
    expect(a.addresses).toHaveLength(2);

    // Nobody live: a CNAME to the origin.
    for (let i = 1; i <= 7; i++) dir.setLive(node(i).id, false);
    a = await ask();
    expect(a.r.answers).toMatchObject([{ type: 5, domain: 'www.example.com', ttl: 10 }]);
    expect(a.d.method).toBe('no-proxy');
  });

  it('apex NS lists the nameservers nearest the client first', async () => {
    const dir = fleet()
      .add(node(2))
      .add(node(3), { hints: ['127.0.0.0/24'] })
      .add(node(4));
    const nameservers = [2, 3, 4].map((i) => ({ name: `ns${i}.nyud.net`, ipv4: `10.0.0.${i}` }));
    s = await start({ nameservers, answerCount: 1 }, dir);
    const r = parse(await udpAsk(s.port, encodeQuery({ name: 'nyud.net', type: 2 })));
    expect(r.answers.map((a) => a.ns)).toHaveLength(3);
    expect(r.answers[0]!.ns).toBe('ns3.nyud.net'); // node 3 is hinted under the resolver's /24
    expect(r.additionals.find((g) => g.type === 1)).toMatchObject({
      name: 'ns3.nyud.net',
      address: '10.0.0.3',
    });
    expect(lastDecision(s.server)).toMatchObject({ method: 'hint', nodes: [node(3).id] });
    // A view sends this resolver to node 4: ns4 first now.
    await s.server.close();
    s = await start(
      { nameservers, answerCount: 1, views: [{ cidr: '127.0.0.0/8', nodes: [node(4).id] }] },
      dir,
    );
    const v = parse(await udpAsk(s.port, encodeQuery({ name: 'nyud.net', type: 2 })));
    expect(v.answers[0]!.ns).toBe('ns4.nyud.net');
  });

  it('a view matched on the resolver address, and a view with no live node falls through', async () => {
    const dir = fleet()
      .add(node(2, { region: 'campus' }))
      .add(node(4), { hints: ['127.0.0.0/24'] });
    s = await start({ views: [{ cidr: '127.0.0.0/8', region: 'campus' }] }, dir);
    let a = await ask();
    expect(a.addresses).toEqual(['10.0.0.2']);
    expect(a.d).toMatchObject({ method: 'view' });
    expect(a.d.detail).toMatch(/\(resolver\)/);
    dir.setLive(node(2).id, false);
    a = await ask();
    expect(a.d.method).toBe('hint');
    expect(a.d.detail).toMatch(/view 127.0.0.0\/8 has no live node/);
  });
});
