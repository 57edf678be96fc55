/**
 * Nearby nameservers (NSDI'04 §3.1, issue 15) over real UDP and TCP on loopback: a fleet of DNS
 * servers on 127.0.53.x, all on one port (the fleet's "53"), each with its own view of the
 * clusters, and resolvers on 127.0.54.10 (near nodes 1, 2 and 4) and 127.0.55.10 (far from all).
 *
 * Shows: a resolver close to a node gets the NS records of that node's level-2 sub-zone (long
 * TTL, glue), a far one level 0; a resolver that follows the delegation then asks the nearby
 * nodes, for every later name (an iterative resolver written here, and Node's own resolver);
 * dead members, members without DNS on the port and second identities of one address never
 * appear in NS or glue.
 */
import net from 'node:net';
import dns from 'node:dns';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock, SeededRandom } from '@coral/testkit';
import {
  DnsServer,
  InMemoryNodeDirectory,
  type NodeInfo,
  type Prober,
  TYPE,
} from '../../src/index.js';
import { encodeQuery, hex, header, parse, type Parsed, udpAsk } from '../helpers.js';

const NEAR = '127.0.54.10';
const FAR = '127.0.55.10';
const ip = (i: number) => `127.0.53.${i}`;
const ns = (i: number, sub: string) => `ns${hex(i)}.${sub}`;
const L2 = 'l2.l1.l0.nyud.net';
const L1 = 'l1.l0.nyud.net';
const L0 = 'l0.nyud.net';

/** RTTs by resolver address, answered at once (the probe cache then holds them). */
class MapProber implements Prober {
  constructor(readonly rtts: Record<string, number>) {}
  async probe(target: string): Promise<number | null> {
    return this.rtts[target] ?? null;
  }
}

/** A port free for UDP and TCP on every address given. */
async function freePort(hosts: string[]): Promise<number> {
  for (;;) {
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, hosts[0], r));
    const port = (probe.address() as net.AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const ok = await Promise.all(
      hosts.map(
        (h) =>
          new Promise<boolean>((resolve) => {
            const s = net.createServer();
            s.once('error', () => resolve(false));
            s.listen(port, h, () => s.close(() => resolve(true)));
          }),
      ),
    );
    if (ok.every(Boolean)) return port;
  }
}

interface Fleet {
  port: number;
  servers: Map<number, DnsServer>;
  dirs: Map<number, InMemoryNodeDirectory>;
}

let fleet: Fleet;

/**
 * Nodes 1–4 run DNS on the fleet's port. Clusters: 1, 2 and 4 share level 2 (and 1); 3 is in
 * their level-1 cluster only. Node 5 is a proxy in the level-2 cluster without DNS; node 6 is a
 * second identity on node 2's address. Node 3's directory has node 1 hinted under the near
 * resolver's /24.
 */
async function startFleet(): Promise<Fleet> {
  const port = await freePort([1, 2, 3, 4].map(ip));
  const info = (i: number): NodeInfo => ({
    id: hex(i),
    ipv4: ip(i === 6 ? 2 : i),
    httpPort: 8090,
    ...(i === 5 ? {} : { dnsPort: port }),
  });
  const servers = new Map<number, DnsServer>();
  const dirs = new Map<number, InMemoryNodeDirectory>();
  const l2 = [1, 2, 4, 5, 6];
  for (const me of [1, 2, 3, 4]) {
    const dir = new InMemoryNodeDirectory({ random: new SeededRandom(me) }, { self: info(me) });
    for (const other of [1, 2, 3, 4, 5, 6]) {
      if (other === me) continue;
      const clusters = l2.includes(me) && l2.includes(other) ? [1, 2] : [1];
      dir.add(info(other), {
        clusters,
        ...(me === 3 && other === 1 ? { hints: ['127.0.54.0/24'] } : {}),
      });
    }
    const near = me === 3 ? 40 : 5;
    const server = new DnsServer(
      {
        directory: dir,
        clock: new ManualClock(1_000_000),
        prober: new MapProber({ [NEAR]: near, [FAR]: 200 }),
        random: new SeededRandom(me),
      },
      {
        nameservers: [{ name: 'ns1.nyud.net', ipv4: ip(3) }],
        rrl: { responsesPerSecond: 0 },
        delegation: { enabled: true, port },
      },
    );
    await server.listen({ port, host: ip(me) });
    // Each node measures both resolvers once (as it would on their first query).
    for (const r of [NEAR, FAR]) {
      await server.handlePacket(encodeQuery({ name: 'warm.example.com.nyud.net' }), {
        address: r,
        port: 53,
      });
    }
    servers.set(me, server);
    dirs.set(me, dir);
  }
  await new Promise((r) => setImmediate(r));
  return { port, servers, dirs };
}

beforeEach(async () => {
  fleet = await startFleet();
});
afterEach(async () => {
  await Promise.all([...fleet.servers.values()].map((s) => s.close()));
});

const ask = async (node: number, name: string, from: string, type: number = TYPE.A) =>
  udpAsk(fleet.port, encodeQuery({ name, type, edns: {} }), { from, host: ip(node) });

function nsOf(p: Parsed) {
  return p.authorities.filter((r) => r.type === TYPE.NS);
}
function glueOf(p: Parsed) {
  return p.additionals.filter((r) => r.type === TYPE.A || r.type === TYPE.AAAA);
}

/**
 * The addresses an NS set names, through its glue, sorted; each NS must have exactly one glue
 * record, and no address may come twice (node 6 is a second identity on node 2's address: one
 * of the two may be named, never both).
 */
function nsAddresses(p: Parsed, section: 'authorities' | 'answers' = 'authorities'): string[] {
  const names = p[section].filter((r) => r.type === TYPE.NS).map((r) => r.ns!.toLowerCase());
  const glue = glueOf(p);
  const out = names.map((n) => {
    const g = glue.filter((x) => x.name.toLowerCase() === n);
    expect(g, n).toHaveLength(1);
    return g[0]!.address!;
  });
  expect(new Set(out).size).toBe(out.length);
  return out.sort();
}

/**
 * An iterative, caching resolver as a recursive one works (RFC 1034 §5.3.3, trimmed): it asks the
 * nameservers of the deepest zone it knows a delegation for — among them, the one with the
 * lowest round-trip time, as BIND and Unbound choose (`rtts`: what it would measure) —, learns
 * NS records and glue from authority sections (a newer set replaces an older one), follows
 * CNAMEs, and keeps CNAME and A records for their TTL on its own clock (`advance`). `asked`
 * records which server each query went to.
 */
class IterativeResolver {
  readonly delegations = new Map<string, { addresses: string[]; ttl: number }>();
  readonly asked: { server: string; name: string }[] = [];
  readonly #cnames = new Map<string, { target: string; until: number }>();
  readonly #addresses = new Map<string, { addresses: string[]; until: number }>();
  #now = 0;
  constructor(
    readonly from: string,
    readonly roots: string[],
    readonly rtts: Record<string, number>,
  ) {}

  /** Time passes for the resolver's cache (seconds). */
  advance(seconds: number): void {
    this.#now += seconds;
  }

  #serverFor(name: string): string {
    let best: { zone: string; addresses: string[] } | undefined;
    for (const [zone, d] of this.delegations) {
      if (
        (name === zone || name.endsWith(`.${zone}`)) &&
        (!best || zone.length > best.zone.length)
      ) {
        best = { zone, addresses: d.addresses };
      }
    }
    const rtt = (a: string) => this.rtts[a] ?? 1000;
    return [...(best?.addresses ?? this.roots)].sort((a, b) => rtt(a) - rtt(b))[0]!;
  }

  /** Follow cached CNAMEs from `name`. */
  #follow(name: string): string {
    for (let c = this.#cnames.get(name); c && c.until > this.#now; c = this.#cnames.get(name)) {
      name = c.target;
    }
    return name;
  }

  async resolve(qname: string): Promise<string[]> {
    let name = this.#follow(qname.toLowerCase());
    for (let hops = 0; hops < 8; hops++) {
      const cached = this.#addresses.get(name);
      if (cached && cached.until > this.#now) return cached.addresses;
      const server = this.#serverFor(name);
      this.asked.push({ server, name });
      const r = parse(
        await udpAsk(fleet.port, encodeQuery({ name, edns: {} }), {
          from: this.from,
          host: server,
        }),
      );
      const learned = new Map<string, { addresses: string[]; ttl: number }>();
      for (const rr of nsOf(r)) {
        const zone = rr.name.toLowerCase();
        const d = learned.get(zone) ?? { addresses: [], ttl: rr.ttl };
        for (const g of glueOf(r)) {
          if (g.type === TYPE.A && g.name.toLowerCase() === rr.ns!.toLowerCase()) {
            d.addresses.push(g.address!);
          }
        }
        learned.set(zone, d);
      }
      for (const [zone, d] of learned) this.delegations.set(zone, d);
      let cur = name;
      for (const rr of r.answers) {
        if (rr.type === TYPE.CNAME && rr.name.toLowerCase() === cur) {
          this.#cnames.set(cur, { target: rr.domain!.toLowerCase(), until: this.#now + rr.ttl });
          cur = rr.domain!.toLowerCase();
        }
      }
      const a = r.answers.filter((rr) => rr.type === TYPE.A && rr.name.toLowerCase() === cur);
      if (a.length > 0) {
        const addresses = a.map((rr) => rr.address!);
        this.#addresses.set(cur, {
          addresses,
          until: this.#now + Math.min(...a.map((x) => x.ttl)),
        });
        return addresses;
      }
      if (cur === name) throw new Error(`no answer for ${name} from ${server}`);
      name = cur;
    }
    throw new Error('too many hops');
  }
}

describe('delegation of sub-zones per cluster level', () => {
  it('a resolver close to a node gets the NS records of its level-2 sub-zone: long TTL, glue', async () => {
    const r = parse(await ask(1, 'WWW.example.com.nyud.net', NEAR));
    // The short name is an alias into the deepest sub-zone, followed by the target's proxies
    // (RFC 1034 §4.3.2 step 3a: this server is authoritative for the sub-zone too).
    const target = `WWW.example.com.${L2}`;
    expect(r.answers[0]).toMatchObject({
      type: TYPE.CNAME,
      name: 'WWW.example.com.nyud.net',
      domain: target,
      ttl: 86400,
    });
    expect(r.answers.slice(1)).toHaveLength(2);
    expect(r.answers.slice(1).every((a) => a.type === TYPE.A && a.name === target)).toBe(true);
    // Node 1 measured the resolver at 5 ms: its level-2 cluster's proxies, TTL 60 s.
    expect(r.answers.slice(1).every((a) => a.ttl === 60)).toBe(true);
    expect(header(await ask(1, 'WWW.example.com.nyud.net', NEAR))).toMatchObject({
      aa: true,
      rcode: 0,
      an: 3,
    });
    const nsRecords = nsOf(r);
    expect(new Set(nsRecords.map((n) => n.name.toLowerCase()))).toEqual(new Set([L2]));
    expect(nsRecords.every((n) => n.ttl === 86400)).toBe(true);
    // Node 1's level-2 cluster that runs DNS on the port: 1, 2, 4 (not 5: no DNS; not 6: node 2's address).
    expect(nsRecords.map((n) => n.ns!.toLowerCase()).sort()).toEqual(
      [1, 2, 4].map((i) => ns(i, L2)).sort(),
    );
    expect(
      glueOf(r)
        .map((g) => `${g.name.toLowerCase()} ${g.address} ${g.ttl}`)
        .sort(),
    ).toEqual([1, 2, 4].map((i) => `${ns(i, L2)} ${ip(i)} 86400`).sort());
    // The name in the sub-zone: proxies near node 1, with the same NS records.
    const long = parse(await ask(1, `www.example.com.${L2}`, NEAR));
    expect(long.answers.filter((a) => a.type === TYPE.A)).toHaveLength(2);
    expect(header(await ask(1, `www.example.com.${L2}`, NEAR))).toMatchObject({
      aa: true,
      rcode: 0,
    });
    expect(
      nsOf(long)
        .map((n) => n.ns!.toLowerCase())
        .sort(),
    ).toEqual([1, 2, 4].map((i) => ns(i, L2)).sort());
    expect(fleet.servers.get(1)!.recentDecisions().at(-1)!.detail).toContain('NS level 2 (3)');
  });

  it('a far resolver gets level 0 (shorter TTL), a level-1 resolver level 1', async () => {
    const far = parse(await ask(1, 'www.example.com.nyud.net', FAR));
    const farNs = nsOf(far);
    expect(farNs.length).toBeGreaterThan(0);
    expect(farNs.every((n) => n.name.toLowerCase() === L0 && n.ttl === 3600)).toBe(true);
    expect(glueOf(far).every((g) => g.ttl === 3600)).toBe(true);
    // Node 3 measured the near resolver at 40 ms: its level-1 cluster.
    const mid = parse(await ask(3, 'www.example.com.nyud.net', NEAR));
    expect(nsOf(mid).every((n) => n.name.toLowerCase() === L1 && n.ttl === 86400)).toBe(true);
    expect(nsAddresses(mid)).toHaveLength(3);
    expect(nsAddresses(mid)).toContain(ip(3));
  });

  it('a resolver that follows the delegation then asks the nearby nodes, for every later name', async () => {
    // It first meets node 3 (the zone's registered nameserver), 40 ms away: not in its level-2
    // cluster. Nodes 1, 2 and 4 are 5 ms away.
    const rtts = { [ip(1)]: 5, [ip(2)]: 5, [ip(3)]: 40, [ip(4)]: 5 };
    const resolver = new IterativeResolver(NEAR, [ip(3)], rtts);
    const name = 'www.one.com.nyud.net';
    const target = `www.one.com.${L2}`;
    // Node 3 answers the alias and its target's proxies at once, with its level-1 sub-zone's NS
    // (the resolver is within 60 ms of it).
    expect(await resolver.resolve(name)).toHaveLength(2);
    expect(resolver.asked).toEqual([{ server: ip(3), name }]);
    expect(resolver.delegations.get(L1)?.ttl).toBe(86400);
    // The proxies' TTL runs out, the alias (a day) does not: the resolver asks for the target,
    // of the closest level-1 nameserver it was told of (one of 1, 2, 4), which gives its level-2
    // sub-zone's NS.
    resolver.advance(61);
    resolver.asked.length = 0;
    expect(await resolver.resolve(name)).toHaveLength(2);
    expect(resolver.asked).toHaveLength(1);
    expect(resolver.asked[0]!.name).toBe(target);
    expect([1, 2, 4].map(ip)).toContain(resolver.asked[0]!.server);
    expect(resolver.delegations.get(L2)?.ttl).toBe(86400);
    const nearby = resolver.delegations.get(L2)!.addresses;
    expect([...nearby].sort()).toEqual([1, 2, 4].map(ip));
    // From then on every target goes to the level-2 cluster. A name never asked before is
    // answered whole by whoever serves the zone (node 3 here); its next resolution, nearby.
    for (const next of ['www.one.com.nyud.net', 'www.two.com.nyud.net', 'www-three-com.nyud.net']) {
      resolver.advance(61);
      resolver.asked.length = 0;
      expect(await resolver.resolve(next)).toHaveLength(2);
      const targets = resolver.asked.filter((a) => a.name.endsWith(L2));
      if (resolver.asked.length > 0 && targets.length === 0) {
        // First time: the alias and its target's records came from the zone's nameserver.
        expect(resolver.asked).toEqual([{ server: ip(3), name: next }]);
        resolver.advance(61);
        resolver.asked.length = 0;
        expect(await resolver.resolve(next)).toHaveLength(2);
      }
      expect(resolver.asked).toHaveLength(1);
      expect(resolver.asked[0]!.name.endsWith(L2)).toBe(true);
      expect(nearby).toContain(resolver.asked[0]!.server);
    }
    // Node's own resolver, sent to a nearby node named by the glue, from the same address.
    const node = new dns.promises.Resolver({ timeout: 3000, tries: 2 });
    node.setLocalAddress(NEAR);
    node.setServers([`${ip(2)}:${fleet.port}`]);
    expect(await node.resolve4(`www.five.com.${L2}`)).toHaveLength(2);
    const last = fleet.servers.get(2)!.recentDecisions().at(-1)!;
    expect(last).toMatchObject({ client: NEAR, name: `www.five.com.${L2}`, rcode: 'NOERROR' });
  });

  it("a stub resolver (Node's) gets the addresses of a short name: the CNAME is chased", async () => {
    const stub = (node: number, from: string) => {
      const r = new dns.promises.Resolver({ timeout: 3000, tries: 2 });
      r.setLocalAddress(from);
      r.setServers([`${ip(node)}:${fleet.port}`]);
      return r;
    };
    const near = stub(1, NEAR);
    // Node 1's level-2 cluster, the resolver being 5 ms away: proxies 1, 2, 4 or 5 (not 6: the
    // address of 2), TTL 60 s.
    const got = await near.resolve4('www.example.com.nyud.net', { ttl: true });
    expect(got).toHaveLength(2);
    expect(got.every((a) => a.ttl === 60)).toBe(true);
    expect(new Set(got.map((a) => a.address)).size).toBe(2);
    for (const a of got) expect([1, 2, 4, 5].map(ip)).toContain(a.address);
    expect(fleet.servers.get(1)!.recentDecisions().at(-1)!.detail).toMatch(
      /^alias into the level-2 sub-zone; .*NS level 2 \(3\)$/,
    );
    // One-label names too, and a far resolver (level-0 NS, proxies by the locator): TTL 30 s.
    expect(await near.resolve4('www-example-com.nyud.net')).toHaveLength(2);
    const far = await stub(1, FAR).resolve4('www.example.com.8080.nyud.net', { ttl: true });
    expect(far).toHaveLength(2);
    expect(far.every((a) => a.ttl === 30)).toBe(true);
    // The CNAME question gets the alias alone.
    expect(await near.resolveCname('www.example.com.nyud.net')).toEqual([`www.example.com.${L2}`]);
    // ANY matches the CNAME: the alias alone, with the NS records (RFC 1034 §4.3.2, as BIND).
    const any = parse(await ask(1, 'www.example.com.nyud.net', NEAR, TYPE.ANY));
    expect(any.answers.map((a) => a.type)).toEqual([TYPE.CNAME]);
    expect(nsAddresses(any)).toEqual([1, 2, 4].map(ip));
    // No IPv6 proxy: the alias, then NODATA with the sub-zone's SOA.
    expect(await near.resolve6('www.example.com.nyud.net')).toEqual([]); // c-ares: no AAAA
    const v6 = parse(await ask(1, 'www.example.com.nyud.net', NEAR, TYPE.AAAA));
    expect(v6.answers.map((a) => a.type)).toEqual([TYPE.CNAME]);
    expect(v6.authorities).toEqual([expect.objectContaining({ type: TYPE.SOA, name: L2 })]);
    // A type not served: the alias, then NODATA with the sub-zone's SOA.
    const mx = parse(await ask(1, 'www.example.com.nyud.net', NEAR, 15)); // MX
    expect(mx.answers.map((a) => a.type)).toEqual([TYPE.CNAME]);
    expect(mx.authorities).toEqual([expect.objectContaining({ type: TYPE.SOA, name: L2 })]);
  });

  it('dead members never appear in NS or glue, also once an answer naming them was cached', async () => {
    const before = parse(await ask(1, 'www.example.com.nyud.net', NEAR));
    expect(nsOf(before).map((n) => n.ns!.toLowerCase())).toContain(ns(4, L2));
    fleet.dirs.get(1)!.setLive(hex(4), false);
    for (const name of ['www.example.com.nyud.net', 'www.other.com.nyud.net', `x.org.${L2}`]) {
      const r = parse(await ask(1, name, NEAR));
      expect(nsAddresses(r)).toEqual([1, 2].map(ip));
      expect(glueOf(r).map((g) => g.address)).not.toContain(ip(4));
    }
    // Its nameserver name stops resolving; a live member's resolves to its address.
    expect(header(await ask(1, ns(4, L2), NEAR)).rcode).toBe(3);
    const live = parse(await ask(1, ns(1, L2), NEAR));
    expect(live.answers).toEqual([
      expect.objectContaining({ type: TYPE.A, address: ip(1), ttl: 86400 }),
    ]);
    // A member without DNS on the port is never a nameserver.
    expect(header(await ask(1, ns(5, L2), NEAR)).rcode).toBe(3);
  });

  it('the sub-zones answer SOA and NS; names in them are the same origins', async () => {
    const soa = parse(await ask(1, L1, NEAR, TYPE.SOA));
    expect(soa.answers[0]).toMatchObject({ type: TYPE.SOA, name: L1, primary: 'ns1.nyud.net' });
    const l2ns = parse(await ask(1, L2, NEAR, TYPE.NS));
    expect(l2ns.answers.map((a) => a.ns!.toLowerCase()).sort()).toEqual(
      [1, 2, 4].map((i) => ns(i, L2)).sort(),
    );
    expect(glueOf(l2ns)).toHaveLength(3);
    // Invalid names in a sub-zone: NXDOMAIN with the sub-zone's SOA.
    const nx = parse(await ask(1, `foo.${L2}`, NEAR));
    expect(nx.authorities[0]).toMatchObject({ type: TYPE.SOA, name: L2 });
    // One-label and legacy names under every level are the same origins as the short names.
    for (const name of [
      `www-example-com.${L2}`,
      `www.example.com.8080.${L1}`,
      `www.example.com.${L0}`,
    ]) {
      const r = parse(await ask(2, name, NEAR));
      expect(
        r.answers.filter((a) => a.type === TYPE.A),
        name,
      ).toHaveLength(2);
    }
  });
});
